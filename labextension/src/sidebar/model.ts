/**
 * The cluster panel's model: the LocalClusters the server extension lists,
 * refreshed every half second while the panel is shown (a poll waits for the
 * last answer, so a task's state change shows within a second), not at all
 * while it is hidden, and the actions on them.
 *
 * State: `clusters`, `message` (the server's note, e.g. no registry yet),
 * `error` (the last failed call) and `active` (the panel is shown).
 * Invariant: `changed` is emitted after every refresh and after every action;
 * polling stops on dispose().
 */
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { IClusterInfo, IClusterList, requestAPI, taskPath } from '../api';
import { loadTrans, Trans } from '../translation';

/** How often the panel asks the server, in milliseconds. */
export const REFRESH_MS = 500;

export class ClusterListModel {
  constructor(trans: Trans = loadTrans(), refreshMs: number = REFRESH_MS) {
    this._trans = trans;
    this._poll = new Poll({
      auto: true,
      factory: () => this.refresh(),
      frequency: { interval: refreshMs, backoff: true, max: 10 * refreshMs },
      name: 'tfteach:clusters',
      standby: () => !this._active || 'when-hidden'
    });
  }

  /** Whether the panel is shown: polling runs only then (and refreshes at once). */
  get active(): boolean {
    return this._active;
  }

  setActive(active: boolean): void {
    if (active === this._active) {
      return;
    }
    this._active = active;
    if (active && !this._poll.isDisposed) {
      void this._poll.refresh();
    }
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get clusters(): ReadonlyArray<IClusterInfo> {
    return this._clusters;
  }

  get message(): string | null {
    return this._message;
  }

  get error(): string | null {
    return this._error;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  /** Ask the server for the cluster list now. */
  async refresh(): Promise<void> {
    try {
      const list = await requestAPI<IClusterList>('clusters');
      this._clusters = list.clusters;
      this._message = list.message;
      this._error = null;
    } catch (error) {
      this._error = this._trans.__('Cannot list clusters: %1', (error as Error).message);
    }
    this._changed.emit();
  }

  killTask(clusterId: string, job: string, task: number): Promise<void> {
    return this._act(taskPath(clusterId, job, task, 'kill'));
  }

  restartTask(clusterId: string, job: string, task: number): Promise<void> {
    return this._act(taskPath(clusterId, job, task, 'restart'));
  }

  stopCluster(clusterId: string): Promise<void> {
    return this._act(`clusters/${encodeURIComponent(clusterId)}/stop`);
  }

  dispose(): void {
    if (this._poll.isDisposed) {
      return;
    }
    this._poll.dispose();
    Signal.clearData(this);
  }

  private async _act(path: string): Promise<void> {
    try {
      await requestAPI(path, { method: 'POST' });
      this._error = null;
    } catch (error) {
      this._error = (error as Error).message;
      this._changed.emit();
      return;
    }
    await this.refresh();
  }

  private _trans: Trans;
  private _poll: Poll;
  private _active = false;
  private _clusters: IClusterInfo[] = [];
  private _message: string | null = null;
  private _error: string | null = null;
  private _changed = new Signal<this, void>(this);
}

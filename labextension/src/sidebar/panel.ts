/**
 * The left sidebar panel listing live LocalClusters (each with the notebook
 * that started it and the runtime of its tasks: tfteach or TensorFlow's own
 * servers): per task its address, its state (starting, alive, unreachable,
 * stopped), its devices and last step, with buttons to kill or restart a task
 * and to stop a cluster you own. Re-renders whenever the model changes; polls
 * only while shown; disposing the panel disposes the model, which stops its
 * polling. Every label is in the learner's language (the translator's bundle).
 */
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IClusterInfo, ITaskInfo, TaskState } from '../api';
import { shortDevice } from '../devices';
import { htmlEl } from '../format';
import { loadTrans, Trans } from '../translation';
import { ClusterListModel } from './model';

function reportFailure(error: unknown): void {
  console.error('tfteach: cluster action failed', error);
}

/** A task's state as the panel shows it. */
export function stateLabel(trans: Trans, state: TaskState): string {
  switch (state) {
    case 'starting':
      return trans.__('starting');
    case 'alive':
      return trans.__('alive');
    case 'unreachable':
      return trans.__('unreachable');
    default:
      return trans.__('stopped');
  }
}

export class ClusterPanel extends Widget {
  constructor(model: ClusterListModel, trans: Trans = loadTrans()) {
    super();
    this.model = model;
    this._trans = trans;
    this.id = 'tfteach-clusters';
    this.addClass('tft-cluster-panel');
    this.node.setAttribute('aria-label', trans.__('tfteach clusters'));
    const header = htmlEl('div', 'tft-panel-header');
    const refresh = htmlEl('button', 'tft-button tft-refresh', trans.__('Refresh'));
    refresh.title = trans.__('Ask the server for the clusters now');
    refresh.addEventListener('click', () => {
      this.model.refresh().catch(reportFailure);
    });
    header.append(htmlEl('h2', 'tft-panel-title', trans.__('tfteach clusters')), refresh);
    this._body = htmlEl('div', 'tft-panel-body');
    this.node.append(header, this._body);
    model.changed.connect(this._render, this);
    this._render();
  }

  readonly model: ClusterListModel;

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.model.setActive(true);
    this.node.dataset.polling = 'true';
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.model.setActive(false);
    this.node.dataset.polling = 'false';
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.model.dispose();
    super.dispose();
  }

  private _render(): void {
    const { clusters, message, error } = this.model;
    const children: HTMLElement[] = [];
    if (error) {
      children.push(htmlEl('div', 'tft-panel-error', error));
    }
    if (message) {
      children.push(htmlEl('div', 'tft-panel-message', message));
    }
    if (!clusters.length) {
      children.push(
        htmlEl(
          'div',
          'tft-panel-empty',
          this._trans.__(
            'No LocalCluster is running. Start one from a notebook and it appears here.'
          )
        )
      );
    }
    children.push(...clusters.map(c => this._renderCluster(c)));
    this._body.replaceChildren(...children);
  }

  private _renderCluster(cluster: IClusterInfo): HTMLElement {
    const box = htmlEl('div', 'tft-cluster');
    box.dataset.clusterId = cluster.id;
    const head = htmlEl('div', 'tft-cluster-header');
    const backend =
      cluster.backend === 'tensorflow' ? this._trans.__('TensorFlow servers') : 'tfteach';
    const title = cluster.notebook ? cluster.notebook.split('/').pop()! : 'LocalCluster';
    const name = htmlEl('span', 'tft-cluster-name', title);
    name.title = this._trans.__('cluster %1', cluster.id);
    head.append(
      name,
      htmlEl('span', 'tft-cluster-backend', backend),
      htmlEl('span', 'tft-cluster-owner', this._owner(cluster))
    );
    if (cluster.network) {
      const network = htmlEl(
        'span',
        'tft-cluster-network',
        this._trans.__('modelled network: %1', cluster.network)
      );
      network.title = this._trans.__(
        "Tensors between its tasks are slowed to this link's modelled time: a model, not this machine's network"
      );
      head.insertBefore(network, head.lastChild);
    }
    box.dataset.backend = cluster.backend;
    if (cluster.mine) {
      const stop = htmlEl('button', 'tft-button tft-stop', this._trans.__('Stop cluster'));
      stop.title = this._trans.__('Stop every task of this cluster');
      stop.addEventListener('click', () => {
        this.model.stopCluster(cluster.id).catch(reportFailure);
      });
      head.appendChild(stop);
    }
    box.appendChild(head);
    for (const task of cluster.tasks) {
      box.appendChild(this._renderTask(cluster, task));
    }
    return box;
  }

  /** Who started a cluster: a notebook of this server, another process, another user. */
  private _owner(cluster: IClusterInfo): string {
    const trans = this._trans;
    if (!cluster.mine) {
      return trans.__('owned by uid %1', cluster.owner_uid);
    }
    return cluster.notebook
      ? trans.__('started by %1', cluster.notebook)
      : trans.__('started by process %1 (not a kernel of this server)', cluster.owner_pid);
  }

  private _renderTask(cluster: IClusterInfo, task: ITaskInfo): HTMLElement {
    const taskState = task.state ?? (task.alive ? 'alive' : 'stopped');
    const row = htmlEl('div', `tft-task tft-state-${taskState}`);
    row.dataset.task = `/job:${task.job}/task:${task.task}`;
    row.dataset.state = taskState;
    const state = htmlEl('span', 'tft-task-state', stateLabel(this._trans, taskState));
    const name = htmlEl('span', 'tft-task-name', `/job:${task.job}/task:${task.task}`);
    const addr = htmlEl('span', 'tft-task-address', task.address);
    const line1 = htmlEl('div', 'tft-task-line');
    line1.append(state, name, addr);
    const devices = task.devices.length
      ? task.devices.map(d => shortDevice(String(d))).join(', ')
      : this._trans.__('no devices reported');
    const step =
      task.last_step === null
        ? this._trans.__('no step yet')
        : this._trans.__('last step %1', task.last_step);
    const line2 = htmlEl('div', 'tft-task-detail', `${devices} · ${step}`);
    row.append(line1, line2);
    if (task.error) {
      row.appendChild(htmlEl('div', 'tft-task-error', task.error));
    }
    if (cluster.mine) {
      row.appendChild(this._taskButtons(cluster, task));
    }
    return row;
  }

  private _taskButtons(cluster: IClusterInfo, task: ITaskInfo): HTMLElement {
    const buttons = htmlEl('div', 'tft-task-buttons');
    const trans = this._trans;
    const kill = htmlEl('button', 'tft-button tft-kill', trans.__('Kill'));
    kill.title = trans.__("Kill this task's process, as a crash would");
    kill.addEventListener('click', () => {
      this.model.killTask(cluster.id, task.job, task.task).catch(reportFailure);
    });
    const restart = htmlEl('button', 'tft-button tft-restart', trans.__('Restart'));
    restart.title = trans.__('Start this task again on its address');
    restart.addEventListener('click', () => {
      this.model.restartTask(cluster.id, task.job, task.task).catch(reportFailure);
    });
    buttons.append(kill, restart);
    return buttons;
  }

  private _body: HTMLElement;
  private _trans: Trans;
}

/**
 * The timeline view's model: one step's op executions and transfers per
 * device, the kernel's view settings (bars coloured by op type or device;
 * transfers shown or hidden), the visible time range and the time <-> pixel
 * scale.
 *
 * State: `view` = [start, end] in microseconds. Invariants: `full` covers
 * every op and transfer and the step (it is never empty); `view` always lies
 * inside `full` and is at least `minSpan` wide; lanes keep the order the
 * kernel sent, devices seen only on ops are appended; data and settings never
 * change after construction.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { deviceLabels, shortDevice } from '../devices';
import { paletteColor } from '../format';

/** The MIME type a kernel sends step stats with. */
export const TIMELINE_MIME = 'application/vnd.tfteach.timeline+json';

export interface ITimelineDevice {
  name: string;
  short: string;
}

export interface ITimelineOp {
  name: string;
  op: string;
  device: string;
  start_us: number;
  end_us: number;
  bytes: number | null;
}

export interface ITimelineTransfer {
  src_device: string;
  dst_device: string;
  tensor: string;
  start_us: number;
  end_us: number;
  bytes: number | null;
}

export interface ITimelineData {
  devices: ITimelineDevice[];
  ops: ITimelineOp[];
  transfers: ITimelineTransfer[];
  step_us: number;
}

/** What bar colours stand for, as the kernel's "Colour by" control says. */
export type TimelineColorBy = 'type' | 'device';

/** The kernel's view settings, from the output's metadata under the MIME type. */
export interface ITimelineSettings {
  colorBy: TimelineColorBy;
  showTransfers: boolean;
}

export const DEFAULT_TIMELINE_SETTINGS: ITimelineSettings = {
  colorBy: 'type',
  showTransfers: true
};

/** The settings in an output's metadata entry; missing or unknown values are the defaults. */
export function parseTimelineSettings(value: unknown): ITimelineSettings {
  const raw = (value !== null && typeof value === 'object' ? value : {}) as {
    [key: string]: unknown;
  };
  const colorBy =
    raw['color_by'] === 'device' || raw['color_by'] === 'type'
      ? raw['color_by']
      : DEFAULT_TIMELINE_SETTINGS.colorBy;
  const showTransfers =
    typeof raw['show_transfers'] === 'boolean'
      ? raw['show_transfers']
      : DEFAULT_TIMELINE_SETTINGS.showTransfers;
  return { colorBy, showTransfers };
}

/** A time range [start, end] in microseconds. */
export type Range = [number, number];

/** Check and normalise the JSON a kernel sent; missing lists become []. */
export function parseTimeline(value: unknown): ITimelineData {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${TIMELINE_MIME} must be an object with "devices", "ops" and "transfers"`);
  }
  const raw = value as { [key: string]: unknown };
  const list = <T>(key: string): T[] => (Array.isArray(raw[key]) ? (raw[key] as T[]) : []);
  const step = Number(raw['step_us']);
  return {
    devices: list<ITimelineDevice>('devices'),
    ops: list<ITimelineOp>('ops'),
    transfers: list<ITimelineTransfer>('transfers'),
    step_us: isFinite(step) ? step : 0
  };
}

/** Maps times in a domain linearly onto pixels in a range. */
export class TimeScale {
  constructor(
    readonly domain: Range,
    readonly range: Range
  ) {}

  toX(t: number): number {
    const [d0, d1] = this.domain;
    const [r0, r1] = this.range;
    return r0 + ((t - d0) / (d1 - d0)) * (r1 - r0);
  }

  toTime(x: number): number {
    const [d0, d1] = this.domain;
    const [r0, r1] = this.range;
    return d0 + ((x - r0) / (r1 - r0)) * (d1 - d0);
  }

  /** About `count` round tick times (steps of 1, 2 or 5 x 10^k) inside the domain. */
  ticks(count = 6): number[] {
    const [d0, d1] = this.domain;
    const rough = (d1 - d0) / Math.max(1, count);
    const power = Math.pow(10, Math.floor(Math.log10(rough)));
    const step = [1, 2, 5, 10].map(m => m * power).find(s => s >= rough) ?? 10 * power;
    const ticks: number[] = [];
    for (let t = Math.ceil(d0 / step) * step; t <= d1 + step * 1e-9; t += step) {
      ticks.push(Number(t.toPrecision(12)));
    }
    return ticks;
  }
}

/** The range that covers the step and every op and transfer. */
export function fullRange(data: ITimelineData): Range {
  const items = [...data.ops, ...data.transfers];
  let start = Math.min(0, ...items.map(i => i.start_us));
  let end = Math.max(data.step_us || 0, ...items.map(i => i.end_us));
  if (!(end > start)) {
    end = start + 1;
  }
  return [start, end];
}

export class TimelineModel {
  constructor(data: ITimelineData, settings: ITimelineSettings = DEFAULT_TIMELINE_SETTINGS) {
    this.data = data;
    this.settings = { ...settings };
    this.full = fullRange(data);
    const span = this.full[1] - this.full[0];
    this.minSpan = Math.min(span, Math.max(span * 1e-4, 1e-3));
    this._view = [...this.full];
    this.lanes = [...data.devices];
    const seen = [
      ...data.ops.map(o => o.device),
      ...data.transfers.flatMap(t => [t.src_device, t.dst_device])
    ];
    for (const device of seen) {
      if (!this.lanes.some(l => l.name === device)) {
        this.lanes.push({ name: device, short: shortDevice(device) });
      }
    }
    if (new Set(this.lanes.map(l => l.short)).size < this.lanes.length) {
      const labels = deviceLabels(this.lanes.map(l => l.name));
      this.lanes = this.lanes.map((l, i) => ({ ...l, short: labels[i] }));
    }
    this.opTypes = [...new Set(data.ops.map(o => o.op))].sort();
  }

  readonly data: ITimelineData;
  readonly settings: Readonly<ITimelineSettings>;
  readonly full: Range;
  readonly minSpan: number;
  /** One lane per device; `short` names are unique (job and task added if needed). */
  readonly lanes: ITimelineDevice[];
  /** Op types sorted by name; an op's colour is its type's index here. */
  readonly opTypes: string[];

  get viewChanged(): ISignal<this, void> {
    return this._viewChanged;
  }

  get view(): Range {
    return [this._view[0], this._view[1]];
  }

  get isZoomed(): boolean {
    return this._view[0] !== this.full[0] || this._view[1] !== this.full[1];
  }

  laneIndex(device: string): number {
    return this.lanes.findIndex(l => l.name === device);
  }

  opColor(op: string): string {
    return paletteColor(this.opTypes.indexOf(op));
  }

  /** An op's bar colour: its type's, or its lane's when colouring by device. */
  barColor(op: ITimelineOp): string {
    return this.settings.colorBy === 'device'
      ? paletteColor(this.laneIndex(op.device))
      : this.opColor(op.op);
  }

  /** What each bar colour stands for: op types, or devices (lane labels). */
  colorKeys(): { label: string; color: string }[] {
    if (this.settings.colorBy === 'device') {
      return this.lanes.map((lane, i) => ({ label: lane.short, color: paletteColor(i) }));
    }
    return this.opTypes.map(op => ({ label: op, color: this.opColor(op) }));
  }

  /** Show [a, b] (in either order), clamped to the full range. */
  zoomTo(a: number, b: number): void {
    let start = Math.max(this.full[0], Math.min(a, b));
    let end = Math.min(this.full[1], Math.max(a, b));
    if (end - start < this.minSpan) {
      const mid = (start + end) / 2;
      start = Math.max(this.full[0], mid - this.minSpan / 2);
      end = Math.min(this.full[1], start + this.minSpan);
      start = end - this.minSpan;
    }
    this._setView([start, end]);
  }

  /** Zoom by `factor` (> 1 zooms in) keeping time `t` at the same place. */
  zoomAt(t: number, factor: number): void {
    const [v0, v1] = this._view;
    const start = t - (t - v0) / factor;
    const span = (v1 - v0) / factor;
    const shift = Math.max(0, this.full[0] - start) - Math.max(0, start + span - this.full[1]);
    this.zoomTo(start + shift, start + span + shift);
  }

  reset(): void {
    this._setView([...this.full]);
  }

  dispose(): void {
    Signal.clearData(this);
  }

  private _setView(view: Range): void {
    if (view[0] !== this._view[0] || view[1] !== this._view[1]) {
      this._view = view;
      this._viewChanged.emit();
    }
  }

  private _view: Range;
  private _viewChanged = new Signal<this, void>(this);
}

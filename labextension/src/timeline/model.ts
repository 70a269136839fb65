/**
 * The timeline view's model: one step's op executions and transfers per
 * device, the kernel's view settings (bars by op type: palette greys and
 * hatches, never a device colour; or by device: the device colours, each lane
 * keeping the colour its device has in the placement view), the arrows of
 * each transfer (`transferArrows`, the geometry the Python view draws too),
 * the visible time range and the time <-> pixel scale.
 *
 * A modelled step (`modelled_on`: its hardware profile) is a model of that
 * machine, not a measurement; the view marks it so.
 *
 * State: `view` = [start, end] in microseconds. Invariants: `full` covers
 * every op and transfer and the step (it is never empty); `view` always lies
 * inside `full` and is at least `minSpan` wide; lanes keep the order the
 * kernel sent, devices seen only on ops are appended; data and settings never
 * change after construction.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { deviceLabels, shortDevice } from '../devices';
import { IOpStyle, opStyle, paletteColor } from '../format';

/** The MIME type a kernel sends step stats with. */
export const TIMELINE_MIME = 'application/vnd.tfteach.timeline+json';

export interface ITimelineDevice {
  name: string;
  short: string;
  /** The device's place among the session's devices: its colour (else its lane's). */
  color_index?: number;
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
  /** The op that produced the tensor, on `src_device`. */
  src_op?: string;
  /** The ops on `dst_device` that read it. */
  consumers?: string[];
}

/**
 * One arrow of a transfer, in step time and lanes: `send` from the end of the
 * producer's bar (or the transfer's start when the producer is not in the
 * step) to the start of the transfer slice on the receiving lane; `deliver`
 * from the end of the slice into a consumer's bar. Never backwards in time.
 */
export interface ITransferArrow {
  kind: 'send' | 'deliver';
  transfer: number;
  x0_us: number;
  src: string;
  x1_us: number;
  dst: string;
  consumer: string | null;
}

export interface ITimelineData {
  devices: ITimelineDevice[];
  ops: ITimelineOp[];
  transfers: ITimelineTransfer[];
  step_us: number;
  /**
   * The hardware profile a modelled step ran on (`tfteach.hardware`): its
   * times are a model of that machine, not measured. Absent when measured.
   */
  modelled_on?: string;
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
  const modelledOn = raw['modelled_on'];
  return {
    devices: list<ITimelineDevice>('devices'),
    ops: list<ITimelineOp>('ops'),
    transfers: list<ITimelineTransfer>('transfers'),
    step_us: isFinite(step) ? step : 0,
    ...(typeof modelledOn === 'string' && modelledOn ? { modelled_on: modelledOn } : {})
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

/** Every transfer's arrows (as `transfer_arrows` in tfteach/notebook/timeline_view.py). */
export function transferArrows(data: ITimelineData): ITransferArrow[] {
  const ops = new Map(data.ops.map(o => [`${o.device}\n${o.name}`, o]));
  const arrows: ITransferArrow[] = [];
  data.transfers.forEach((t, i) => {
    const producer = ops.get(`${t.src_device}\n${t.src_op || t.tensor.split(':')[0]}`);
    const ready = producer ? producer.end_us : t.start_us;
    const arrive = Math.max(t.end_us, ready);
    arrows.push({
      kind: 'send',
      transfer: i,
      x0_us: ready,
      src: t.src_device,
      x1_us: Math.min(Math.max(t.start_us, ready), arrive),
      dst: t.dst_device,
      consumer: null
    });
    for (const name of t.consumers ?? []) {
      const consumer = ops.get(`${t.dst_device}\n${name}`);
      if (consumer) {
        const enter = Math.min(Math.max(arrive, consumer.start_us), consumer.end_us);
        arrows.push({
          kind: 'deliver',
          transfer: i,
          x0_us: arrive,
          src: t.dst_device,
          x1_us: enter,
          dst: t.dst_device,
          consumer: name
        });
      }
    }
  });
  return arrows;
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

  /** An op type's grey and hatch. */
  opStyle(op: string): IOpStyle {
    return opStyle(this.opTypes.indexOf(op));
  }

  /** A lane's device colour (the device's colour in every view). */
  laneColor(index: number): string {
    const lane = this.lanes[index];
    return paletteColor(lane?.color_index ?? index);
  }

  /** An op's bar style: its type's grey and hatch, or its lane's colour by device. */
  barStyle(op: ITimelineOp): IOpStyle {
    return this.settings.colorBy === 'device'
      ? { fill: this.laneColor(this.laneIndex(op.device)), hatch: 'solid' }
      : this.opStyle(op.op);
  }

  /** What each bar style stands for: op types, or devices (lane labels). */
  colorKeys(): { label: string; color: string; hatch: string }[] {
    if (this.settings.colorBy === 'device') {
      return this.lanes.map((lane, i) => ({
        label: lane.short,
        color: this.laneColor(i),
        hatch: 'solid'
      }));
    }
    return this.opTypes.map(op => {
      const style = this.opStyle(op);
      return { label: op, color: style.fill, hatch: style.hatch };
    });
  }

  /** Move the view by `fraction` of its span (keyboard panning), inside the full range. */
  panBy(fraction: number): void {
    const [v0, v1] = this._view;
    const span = v1 - v0;
    const start = Math.min(this.full[1] - span, Math.max(this.full[0], v0 + fraction * span));
    this._setView([start, start + span]);
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

/**
 * The placement view's model: a placed graph (nodes with requested and
 * assigned devices, edges with transfer sizes, the device list), the kernel's
 * view settings (colour by device, job or op type; show or hide transfers)
 * plus the view state a learner changes: which devices are hidden and which
 * node is selected.
 *
 * State: `hiddenDevices` (full device names) and `selected` (a node name or
 * null). Invariants: the data and settings never change after construction
 * (the kernel sends a new bundle to change settings); every node's device is
 * in `devices` (devices seen only on nodes are appended); every node's colour
 * key is in `colorKeys`; a hidden device's nodes and their edges are not in
 * `layoutInput()`; hidden transfers stay in the layout (so nodes keep their
 * places) but `edgeShown()` is false for them.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { deviceLabels, parseDevice, shortDevice, taskOf } from '../devices';
import { opStyle, paletteColor } from '../format';

/** The MIME type a kernel sends a placed graph with. */
export const PLACEMENT_MIME = 'application/vnd.tfteach.placement+json';

export interface IPlacementNode {
  name: string;
  type: string;
  requested_device: string;
  assigned_device: string;
}

export interface IPlacementEdge {
  src: string;
  dst: string;
  cross_device: boolean;
  bytes: number | null;
}

export interface IPlacementDevice {
  name: string;
  device_type: string;
  description: string;
}

export interface IPlacementData {
  nodes: IPlacementNode[];
  edges: IPlacementEdge[];
  devices: IPlacementDevice[];
}

/** What node colours stand for, as the kernel's "Colour by" control says. */
export type ColorBy = 'device' | 'job' | 'type';

/**
 * The kernel's view settings. They arrive in the output's metadata under the
 * MIME type as `{"color_by": ..., "show_transfers": ...}`.
 */
export interface IPlacementSettings {
  colorBy: ColorBy;
  showTransfers: boolean;
}

export const DEFAULT_PLACEMENT_SETTINGS: IPlacementSettings = {
  colorBy: 'device',
  showTransfers: true
};

/** One entry of the colour key: what a colour stands for. */
export interface IColorKey {
  key: string;
  label: string;
  color: string;
  /** `solid`, or the hatch of an op type past the fourth (see `opStyle`). */
  hatch: string;
}

/** A device as the view shows it: its colour, short name and legend label. */
export interface IDeviceInfo extends IPlacementDevice {
  short: string;
  /** The short name, prefixed with job and task when the graph spans several tasks. */
  label: string;
  color: string;
}

/** A box around the nodes of one job, one task or one device. */
export interface IGroup {
  id: string;
  label: string;
  kind: 'job' | 'task' | 'device';
  parent: string | null;
}

export interface ILayoutNode {
  id: string;
  name: string;
  width: number;
  height: number;
  parent: string | null;
}

export interface ILayoutEdge {
  index: number;
  src: string;
  dst: string;
}

/** What the layout engine needs: sized nodes, nested groups, edges. */
export interface ILayoutInput {
  nodes: ILayoutNode[];
  groups: IGroup[];
  edges: ILayoutEdge[];
}

/** What a click on a node lights up. */
export interface IHighlight {
  inputs: Set<string>;
  outputs: Set<string>;
  edges: Set<number>;
  transfers: Set<number>;
}

/** Layout id of a node (kept apart from group ids). */
export function nodeId(name: string): string {
  return `n:${name}`;
}

/** Check and normalise the JSON a kernel sent; missing lists become []. */
export function parsePlacement(value: unknown): IPlacementData {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`${PLACEMENT_MIME} must be an object with "nodes", "edges" and "devices"`);
  }
  const raw = value as { [key: string]: unknown };
  const list = <T>(key: string): T[] => (Array.isArray(raw[key]) ? (raw[key] as T[]) : []);
  return {
    nodes: list<IPlacementNode>('nodes'),
    edges: list<IPlacementEdge>('edges'),
    devices: list<IPlacementDevice>('devices')
  };
}

/** The settings in an output's metadata entry; missing or unknown values are the defaults. */
export function parsePlacementSettings(value: unknown): IPlacementSettings {
  const raw = (value !== null && typeof value === 'object' ? value : {}) as {
    [key: string]: unknown;
  };
  const colorBy = ['device', 'job', 'type'].includes(raw['color_by'] as string)
    ? (raw['color_by'] as ColorBy)
    : DEFAULT_PLACEMENT_SETTINGS.colorBy;
  const showTransfers =
    typeof raw['show_transfers'] === 'boolean'
      ? raw['show_transfers']
      : DEFAULT_PLACEMENT_SETTINGS.showTransfers;
  return { colorBy, showTransfers };
}

/** What decides a node's colour: its device's name, its `/job:x/task:n` or its op type. */
export function colorKeyOf(node: IPlacementNode, colorBy: ColorBy): string {
  if (colorBy === 'type') {
    return node.type;
  }
  const device = node.assigned_device || '';
  return colorBy === 'job' ? taskOf(device) : device;
}

/**
 * The colour key for `colorBy`: the devices in their legend order; every
 * job/task of the session's devices (so a task keeps its colour from cell to
 * cell) or the graph's op types, sorted.
 */
export function collectColorKeys(
  data: IPlacementData,
  devices: ReadonlyArray<IDeviceInfo>,
  colorBy: ColorBy
): IColorKey[] {
  if (colorBy === 'device') {
    return devices.map(d => ({ key: d.name, label: d.label, color: d.color, hatch: 'solid' }));
  }
  const keys =
    colorBy === 'job'
      ? devices.map(d => taskOf(d.name))
      : data.nodes.map(n => colorKeyOf(n, colorBy));
  return [...new Set(keys)].sort().map((key, i) => {
    const style = colorBy === 'type' ? opStyle(i) : { fill: paletteColor(i), hatch: 'solid' };
    return {
      key,
      label: key || (colorBy === 'job' ? '(no job)' : '(no type)'),
      color: style.fill,
      hatch: style.hatch
    };
  });
}

/** The declared devices, then any device seen only on a node, coloured in order. */
export function collectDevices(data: IPlacementData): IDeviceInfo[] {
  const devices: IPlacementDevice[] = [...data.devices];
  const known = new Set(devices.map(d => d.name));
  for (const node of data.nodes) {
    const name = node.assigned_device || '';
    if (!known.has(name)) {
      known.add(name);
      const type = parseDevice(name).type ?? '';
      devices.push({ name, device_type: type, description: '' });
    }
  }
  const labels = deviceLabels(devices.map(d => d.name));
  return devices.map((d, i) => ({
    ...d,
    short: shortDevice(d.name),
    label: labels[i],
    color: paletteColor(i)
  }));
}

/** The job, task and device groups a node on `device` sits in, outermost first. */
export function groupsFor(device: string): IGroup[] {
  const parts = parseDevice(device);
  const groups: IGroup[] = [];
  let parent: string | null = null;
  let path = '';
  if (parts.job !== null) {
    path = `/job:${parts.job}`;
    groups.push({ id: `g:${path}`, label: path, kind: 'job', parent });
    parent = `g:${path}`;
  }
  if (parts.task !== null) {
    path += `/task:${parts.task}`;
    groups.push({ id: `g:${path}`, label: `task:${parts.task}`, kind: 'task', parent });
    parent = `g:${path}`;
  }
  if (device) {
    groups.push({ id: `g:${device}`, label: shortDevice(device), kind: 'device', parent });
  }
  return groups;
}

/** Width and height of a node's box, from its longest label line. */
export function nodeSize(node: IPlacementNode): { width: number; height: number } {
  const chars = Math.max(node.name.length, (node.type || '').length + 2);
  return { width: Math.max(72, Math.min(260, chars * 7 + 20)), height: 38 };
}

/** Layout input for the nodes whose device is not hidden. */
export function buildLayoutInput(
  data: IPlacementData,
  hidden: ReadonlySet<string> = new Set()
): ILayoutInput {
  const visible = new Set<string>();
  const groups = new Map<string, IGroup>();
  const nodes: ILayoutNode[] = [];
  for (const node of data.nodes) {
    const device = node.assigned_device || '';
    if (hidden.has(device) || visible.has(node.name)) {
      continue;
    }
    visible.add(node.name);
    const chain = groupsFor(device);
    chain.forEach(g => groups.set(g.id, g));
    const parent = chain.length ? chain[chain.length - 1].id : null;
    nodes.push({ id: nodeId(node.name), name: node.name, parent, ...nodeSize(node) });
  }
  const edges: ILayoutEdge[] = [];
  data.edges.forEach((edge, index) => {
    if (visible.has(edge.src) && visible.has(edge.dst) && edge.src !== edge.dst) {
      edges.push({ index, src: nodeId(edge.src), dst: nodeId(edge.dst) });
    }
  });
  return { nodes, groups: [...groups.values()], edges };
}

/** The inputs, outputs, edges and cross-device transfers touching `name`. */
export function highlightOf(data: IPlacementData, name: string): IHighlight {
  const result: IHighlight = {
    inputs: new Set(),
    outputs: new Set(),
    edges: new Set(),
    transfers: new Set()
  };
  data.edges.forEach((edge, index) => {
    if (edge.dst === name) {
      result.inputs.add(edge.src);
    } else if (edge.src === name) {
      result.outputs.add(edge.dst);
    } else {
      return;
    }
    result.edges.add(index);
    if (edge.cross_device) {
      result.transfers.add(index);
    }
  });
  return result;
}

export class PlacementModel {
  constructor(data: IPlacementData, settings: IPlacementSettings = DEFAULT_PLACEMENT_SETTINGS) {
    this.data = data;
    this.settings = { ...settings };
    this.devices = collectDevices(data);
    this.colorKeys = collectColorKeys(data, this.devices, settings.colorBy);
    for (const node of data.nodes) {
      this._nodes.set(node.name, node);
    }
    for (const entry of this.colorKeys) {
      this._colors.set(entry.key, entry);
    }
  }

  readonly data: IPlacementData;
  readonly settings: Readonly<IPlacementSettings>;
  readonly devices: ReadonlyArray<IDeviceInfo>;
  /** What each node colour stands for under `settings.colorBy`. */
  readonly colorKeys: ReadonlyArray<IColorKey>;

  /** Emitted when a device is hidden or shown (the layout must be redone). */
  get visibilityChanged(): ISignal<this, void> {
    return this._visibilityChanged;
  }

  /** Emitted when the selected node changes. */
  get selectionChanged(): ISignal<this, void> {
    return this._selectionChanged;
  }

  get hiddenDevices(): ReadonlySet<string> {
    return this._hidden;
  }

  get selected(): string | null {
    return this._selected;
  }

  node(name: string): IPlacementNode | undefined {
    return this._nodes.get(name);
  }

  device(name: string): IDeviceInfo | undefined {
    return this.devices.find(d => d.name === name);
  }

  /** A node's fill colour under the current settings. */
  nodeColor(node: IPlacementNode): string {
    return this.nodeKey(node)?.color ?? '#999999';
  }

  /** The colour-key entry a node is drawn with. */
  nodeKey(node: IPlacementNode): IColorKey | undefined {
    return this._colors.get(colorKeyOf(node, this.settings.colorBy));
  }

  /** The devices that hold at least one node, in legend order. */
  usedDevices(): IDeviceInfo[] {
    const used = new Set(this.data.nodes.map(n => n.assigned_device || ''));
    return this.devices.filter(d => used.has(d.name));
  }

  /** Whether the edge at `index` is drawn: transfers only while they are shown. */
  edgeShown(index: number): boolean {
    const edge = this.data.edges[index];
    return !!edge && (this.settings.showTransfers || !edge.cross_device);
  }

  setDeviceVisible(device: string, visible: boolean): void {
    if (visible === !this._hidden.has(device)) {
      return;
    }
    if (visible) {
      this._hidden.delete(device);
    } else {
      this._hidden.add(device);
    }
    const node = this._selected === null ? undefined : this._nodes.get(this._selected);
    if (node && this._hidden.has(node.assigned_device || '')) {
      this.select(null);
    }
    this._visibilityChanged.emit();
  }

  select(name: string | null): void {
    const next = name !== null && this._nodes.has(name) ? name : null;
    if (next !== this._selected) {
      this._selected = next;
      this._selectionChanged.emit();
    }
  }

  /** What the selection lights up; null when nothing is selected. */
  highlight(): IHighlight | null {
    return this._selected === null ? null : highlightOf(this.data, this._selected);
  }

  /**
   * A node's output size (the largest tensor on its outgoing edges) and the
   * bytes it sends to other devices; null where no edge says.
   */
  nodeBytes(name: string): { output: number | null; transferred: number | null } {
    let output: number | null = null;
    let transferred: number | null = null;
    for (const edge of this.data.edges) {
      if (edge.src !== name || typeof edge.bytes !== 'number') {
        continue;
      }
      output = Math.max(output ?? 0, edge.bytes);
      if (edge.cross_device) {
        transferred = (transferred ?? 0) + edge.bytes;
      }
    }
    return { output, transferred };
  }

  layoutInput(): ILayoutInput {
    return buildLayoutInput(this.data, this._hidden);
  }

  dispose(): void {
    Signal.clearData(this);
  }

  private _nodes = new Map<string, IPlacementNode>();
  private _colors = new Map<string, IColorKey>();
  private _hidden = new Set<string>();
  private _selected: string | null = null;
  private _visibilityChanged = new Signal<this, void>(this);
  private _selectionChanged = new Signal<this, void>(this);
}

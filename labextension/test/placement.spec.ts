import { computeLayout } from '../src/placement/layout';
import {
  buildLayoutInput,
  collectDevices,
  DEFAULT_PLACEMENT_SETTINGS,
  groupsFor,
  highlightOf,
  nodeId,
  parsePlacement,
  parsePlacementSettings,
  PlacementModel
} from '../src/placement/model';
import { GPU0, GPU1, psWorkerGraph, twoGpuGraph, WORKER1_CPU } from './fixtures';

describe('placement data', () => {
  it('rejects a payload that is not an object', () => {
    expect(() => parsePlacement([1, 2])).toThrow(/must be an object/);
  });

  it('fills missing lists with empty ones', () => {
    expect(parsePlacement({ nodes: [] })).toEqual({ nodes: [], edges: [], devices: [] });
  });

  it('appends devices seen only on nodes, each with its own colour', () => {
    const devices = collectDevices(psWorkerGraph());
    expect(devices.map(d => d.short)).toEqual(['CPU:0', 'CPU:0']);
    expect(devices.map(d => d.label)).toEqual(['/job:ps/task:0/CPU:0', '/job:worker/task:1/CPU:0']);
    expect(devices[1].name).toBe(WORKER1_CPU);
    expect(devices[0].color).not.toBe(devices[1].color);
  });
});

describe('grouping by job, task and device', () => {
  it('nests device inside task inside job', () => {
    const groups = groupsFor(GPU1);
    expect(groups.map(g => [g.kind, g.label])).toEqual([
      ['job', '/job:localhost'],
      ['task', 'task:0'],
      ['device', 'GPU:1']
    ]);
    expect(groups[1].parent).toBe(groups[0].id);
    expect(groups[2].parent).toBe(groups[1].id);
  });

  it('puts each node in its device group and keeps shared outer groups once', () => {
    const input = buildLayoutInput(twoGpuGraph());
    const parents = Object.fromEntries(input.nodes.map(n => [n.name, n.parent]));
    expect(parents['a']).toBe(`g:${GPU0}`);
    expect(parents['c']).toBe(`g:${GPU1}`);
    expect(input.groups.filter(g => g.kind === 'job')).toHaveLength(1);
    expect(input.groups.filter(g => g.kind === 'device')).toHaveLength(2);
  });

  it('separates jobs and tasks of a cluster', () => {
    const input = buildLayoutInput(psWorkerGraph());
    const labels = input.groups
      .filter(g => g.kind !== 'device')
      .map(g => g.label)
      .sort();
    expect(labels).toEqual(['/job:ps', '/job:worker', 'task:0', 'task:1']);
  });

  it('leaves hidden devices and their edges out', () => {
    const input = buildLayoutInput(twoGpuGraph(), new Set([GPU0]));
    expect(input.nodes.map(n => n.name)).toEqual(['c', 'd']);
    expect(input.edges.map(e => e.index)).toEqual([2]);
    expect(input.groups.some(g => g.id === `g:${GPU0}`)).toBe(false);
  });
});

describe('selection', () => {
  it('lights up inputs, outputs and the cross-device transfers', () => {
    const hl = highlightOf(twoGpuGraph(), 'c');
    expect([...hl.inputs].sort()).toEqual(['a', 'b']);
    expect([...hl.outputs]).toEqual(['d']);
    expect([...hl.edges].sort()).toEqual([0, 1, 2]);
    expect([...hl.transfers].sort()).toEqual([0, 1]);
  });

  it('drops the selection when its device is hidden', () => {
    const model = new PlacementModel(twoGpuGraph());
    const events: string[] = [];
    model.selectionChanged.connect(() => events.push('selection'));
    model.visibilityChanged.connect(() => events.push('visibility'));
    model.select('a');
    model.setDeviceVisible(GPU0, false);
    expect(model.selected).toBeNull();
    expect(events).toEqual(['selection', 'selection', 'visibility']);
    model.dispose();
  });

  it('ignores a selection of an unknown node', () => {
    const model = new PlacementModel(twoGpuGraph());
    model.select('nope');
    expect(model.selected).toBeNull();
  });

  it('reports output size and bytes sent to other devices', () => {
    const model = new PlacementModel(twoGpuGraph());
    expect(model.nodeBytes('a')).toEqual({ output: 64, transferred: 64 });
    expect(model.nodeBytes('c')).toEqual({ output: 16, transferred: null });
    expect(model.nodeBytes('d')).toEqual({ output: null, transferred: null });
  });
});

describe('layout', () => {
  it('places every node inside its device box and that box inside its task box', () => {
    const input = buildLayoutInput(twoGpuGraph());
    const layout = computeLayout(input);
    const inside = (
      a: { x: number; y: number; width: number; height: number },
      b: { x: number; y: number; width: number; height: number }
    ): boolean =>
      a.x >= b.x &&
      a.y >= b.y &&
      a.x + a.width <= b.x + b.width &&
      a.y + a.height <= b.y + b.height;
    for (const node of input.nodes) {
      expect(inside(layout.nodes.get(node.id)!, layout.groups.get(node.parent!)!)).toBe(true);
    }
    const task = layout.groups.get('g:/job:localhost/task:0')!;
    expect(inside(layout.groups.get(`g:${GPU0}`)!, task)).toBe(true);
  });

  it('draws consumers below producers and routes every edge', () => {
    const layout = computeLayout(buildLayoutInput(twoGpuGraph()));
    expect(layout.nodes.get(nodeId('c'))!.y).toBeGreaterThan(layout.nodes.get(nodeId('a'))!.y);
    expect([...layout.edges.keys()].sort()).toEqual([0, 1, 2]);
    for (const points of layout.edges.values()) {
      expect(points.length).toBeGreaterThanOrEqual(2);
    }
  });

  it('keeps all coordinates inside the drawing size', () => {
    const layout = computeLayout(buildLayoutInput(psWorkerGraph()));
    for (const box of [...layout.nodes.values(), ...layout.groups.values()]) {
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.y).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(layout.width);
      expect(box.y + box.height).toBeLessThanOrEqual(layout.height);
    }
  });
});

describe('view settings from the kernel', () => {
  it('reads color_by and show_transfers from output metadata, defaulting the rest', () => {
    expect(parsePlacementSettings({ color_by: 'type', show_transfers: false })).toEqual({
      colorBy: 'type',
      showTransfers: false
    });
    expect(parsePlacementSettings(undefined)).toEqual(DEFAULT_PLACEMENT_SETTINGS);
    expect(parsePlacementSettings({ color_by: 'memory', show_transfers: 'no' })).toEqual(
      DEFAULT_PLACEMENT_SETTINGS
    );
  });

  it('colours by device by default, one colour per device', () => {
    const model = new PlacementModel(twoGpuGraph());
    const [a, , c] = model.data.nodes;
    expect(model.nodeColor(a)).toBe(model.device(GPU0)!.color);
    expect(model.nodeColor(c)).toBe(model.device(GPU1)!.color);
    expect(model.colorKeys.map(k => k.label)).toEqual(['GPU:0', 'GPU:1']);
  });

  it('colours by op type: same type same colour, whatever the device', () => {
    const graph = twoGpuGraph();
    graph.nodes.push({ name: 'e', type: 'Const', requested_device: '', assigned_device: GPU1 });
    const model = new PlacementModel(graph, { colorBy: 'type', showTransfers: true });
    const color = (name: string): string => model.nodeColor(model.node(name)!);
    expect(model.colorKeys.map(k => k.key)).toEqual(['Const', 'Identity', 'MatMul']);
    expect(color('e')).toBe(color('a'));
    expect(new Set([color('a'), color('c'), color('d')]).size).toBe(3);
    const byDevice = new PlacementModel(graph);
    expect(byDevice.nodeColor(byDevice.node('e')!)).not.toBe(byDevice.nodeColor(graph.nodes[0]));
  });

  it('colours by job and task, keeping every task of the session in the key', () => {
    const model = new PlacementModel(psWorkerGraph(), { colorBy: 'job', showTransfers: true });
    expect(model.colorKeys.map(k => k.label)).toEqual(['/job:ps/task:0', '/job:worker/task:1']);
    const [v, read, y] = model.data.nodes;
    expect(model.nodeColor(v)).toBe(model.nodeColor(read));
    expect(model.nodeColor(y)).not.toBe(model.nodeColor(v));
  });

  it('hides transfers without taking them out of the layout', () => {
    const hidden = new PlacementModel(twoGpuGraph(), { colorBy: 'device', showTransfers: false });
    expect([0, 1, 2].map(i => hidden.edgeShown(i))).toEqual([false, false, true]);
    expect(hidden.layoutInput().edges.map(e => e.index)).toEqual([0, 1, 2]);
    const shown = new PlacementModel(twoGpuGraph());
    expect([0, 1, 2].map(i => shown.edgeShown(i))).toEqual([true, true, true]);
    expect(shown.edgeShown(7)).toBe(false);
  });
});

import { computeLayout } from '../src/placement/layout';
import {
  buildLayoutInput,
  collectDevices,
  groupsFor,
  highlightOf,
  nodeId,
  parsePlacement,
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

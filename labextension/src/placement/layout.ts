/**
 * Lays out a placement graph with dagre: nodes top to bottom, nested boxes
 * for job, task and device. Pure: input in, coordinates out.
 *
 * Invariants of the result: every input node and group has a box (x, y is
 * the top-left corner); every edge has at least two points; all coordinates
 * lie inside [0, width] x [0, height].
 */
import * as dagre from '@dagrejs/dagre';

import { ILayoutInput } from './model';

export interface IBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface IPoint {
  x: number;
  y: number;
}

export interface ILayout {
  width: number;
  height: number;
  /** Node boxes by node id. */
  nodes: Map<string, IBox>;
  /** Group boxes by group id. */
  groups: Map<string, IBox>;
  /** Edge polylines by edge index in the placement data. */
  edges: Map<number, IPoint[]>;
}

/** Room kept above a group's contents for its label. */
export const GROUP_LABEL_HEIGHT = 18;

function buildGraph(input: ILayoutInput): dagre.graphlib.Graph {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: true });
  g.setGraph({
    rankdir: 'TB',
    nodesep: 28,
    ranksep: 44,
    marginx: 12,
    marginy: 12 + GROUP_LABEL_HEIGHT
  });
  g.setDefaultEdgeLabel(() => ({}));
  for (const group of input.groups) {
    g.setNode(group.id, {});
  }
  for (const group of input.groups) {
    if (group.parent !== null) {
      g.setParent(group.id, group.parent);
    }
  }
  for (const node of input.nodes) {
    g.setNode(node.id, { width: node.width, height: node.height });
    if (node.parent !== null) {
      g.setParent(node.id, node.parent);
    }
  }
  for (const edge of input.edges) {
    g.setEdge(edge.src, edge.dst, {}, String(edge.index));
  }
  return g;
}

function boxOf(label: dagre.NodeLabel): IBox {
  const width = label.width ?? 0;
  const height = label.height ?? 0;
  return { x: (label.x ?? 0) - width / 2, y: (label.y ?? 0) - height / 2, width, height };
}

/** Compute node boxes, group boxes (label room included) and edge paths. */
export function computeLayout(input: ILayoutInput): ILayout {
  const g = buildGraph(input);
  dagre.layout(g);
  const layout: ILayout = {
    width: 0,
    height: 0,
    nodes: new Map(),
    groups: new Map(),
    edges: new Map()
  };
  for (const node of input.nodes) {
    layout.nodes.set(node.id, boxOf(g.node(node.id)));
  }
  for (const group of input.groups) {
    const box = boxOf(g.node(group.id));
    box.y -= GROUP_LABEL_HEIGHT;
    box.height += GROUP_LABEL_HEIGHT;
    layout.groups.set(group.id, box);
  }
  for (const e of g.edges()) {
    const points = (g.edge(e).points ?? []) as IPoint[];
    layout.edges.set(
      Number(e.name),
      points.map(p => ({ x: p.x, y: p.y }))
    );
  }
  const boxes = [...layout.nodes.values(), ...layout.groups.values()];
  layout.width = Math.max(1, ...boxes.map(b => b.x + b.width)) + 12;
  layout.height = Math.max(1, ...boxes.map(b => b.y + b.height)) + 12;
  return layout;
}

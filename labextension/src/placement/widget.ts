/**
 * The placement view: an interactive drawing of a placed graph.
 *
 * Nodes are coloured by assigned device (or by job/task or op type, when the
 * output's metadata says so: the kernel's "Colour by" control) and boxed by
 * job, task and device; transfers are drawn unless the metadata hides them;
 * the legend lists the devices the graph uses (a toggle adds the session's
 * other devices) and its checkboxes hide a device's nodes; hovering shows a
 * node's type, requested and assigned device and bytes; clicking a node (or
 * Enter on a focused one) lights up its inputs, outputs and cross-device
 * transfers, Escape clears. Wheel or `+`/`-` zoom, drag or arrow keys pan.
 * Node labels take the palette's contrasting colour for their fill; op types
 * are greys (hatched past the fourth), never device colours.
 * The kernel redraws with new settings by updating the output, which calls
 * renderModel() again. The widget owns its model, pan-zoom controller and
 * tooltip and releases them in dispose(). Labels, tooltips and the status
 * line are in the learner's language (the translator rendermime hands it).
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { shortDevice } from '../devices';
import {
  formatBytes,
  hatchPatterns,
  htmlEl,
  labelColor,
  opPaint,
  svgEl,
  swatchBackground
} from '../format';
import { PanZoom } from '../panzoom';
import { Tooltip, TooltipRow } from '../tooltip';
import { loadTrans, Trans, viewLang } from '../translation';
import { computeLayout, ILayout, IPoint } from './layout';
import {
  ColorBy,
  IColorKey,
  ILayoutInput,
  IPlacementNode,
  nodeId,
  parsePlacement,
  parsePlacementSettings,
  PlacementModel
} from './model';

/** How the colour key is titled for each colouring. */
function colorTitle(trans: Trans, colorBy: ColorBy): string {
  switch (colorBy) {
    case 'job':
      return trans.__('job/task');
    case 'type':
      return trans.__('op type');
    default:
      return trans.__('device');
  }
}

let markerCount = 0;

function pathOf(points: IPoint[]): string {
  return points.map((p, i) => `${i ? 'L' : 'M'}${p.x},${p.y}`).join(' ');
}

export class PlacementView extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this._translator = options.translator;
    this._trans = loadTrans(options.translator);
    this.addClass('tft-view');
    this.addClass('tft-placement');
    this._markerId = `tft-arrow-${++markerCount}`;
    this._legend = htmlEl('div', 'tft-legend');
    this._colorKey = htmlEl('div', 'tft-color-key');
    this._reset = htmlEl('button', 'tft-button tft-reset', this._trans.__('Reset view'));
    this._reset.addEventListener('click', () => this._panZoom.reset());
    const toolbar = htmlEl('div', 'tft-toolbar');
    toolbar.append(this._legend, this._reset);
    this._canvas = htmlEl('div', 'tft-canvas');
    this._svg = svgEl('svg', {
      class: 'tft-svg',
      preserveAspectRatio: 'xMidYMin meet',
      role: 'group',
      tabindex: 0
    });
    this._canvas.appendChild(this._svg);
    this._status = htmlEl('div', 'tft-status');
    this.node.append(toolbar, this._colorKey, this._canvas, this._status);
    this._tooltip = new Tooltip(this._canvas);
    this._panZoom = new PanZoom(this._svg);
    this._svg.addEventListener('mousemove', this._onHover);
    this._svg.addEventListener('mouseleave', () => this._tooltip.hide());
    this._svg.addEventListener('click', this._onClick);
    this._svg.addEventListener('keydown', this._onKey);
  }

  /** The model of the last rendered bundle (null before the first). */
  get model(): PlacementModel | null {
    return this._model;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._model?.dispose();
    this._model = null;
    this._speak(viewLang(model.data[this._mimeType]));
    try {
      this._model = new PlacementModel(
        parsePlacement(model.data[this._mimeType]),
        parsePlacementSettings(model.metadata[this._mimeType])
      );
    } catch (error) {
      this._status.textContent = this._trans.__('Cannot show this placement: %1', String(error));
      return Promise.resolve();
    }
    this._model.visibilityChanged.connect(this._draw, this);
    this._model.selectionChanged.connect(this._applyHighlight, this);
    const { colorBy, showTransfers } = this._model.settings;
    this.node.dataset.colorBy = colorBy;
    this.node.dataset.showTransfers = String(showTransfers);
    const trans = this._trans;
    this._svg.setAttribute(
      'aria-label',
      trans.__(
        'placement graph: %1 %2, coloured by %3. Tab to a node, Enter selects it; +, - and arrow keys zoom and pan.',
        trans._n('%1 op', '%1 ops', this._model.data.nodes.length),
        trans._n('on %1 device', 'on %1 devices', this._model.usedDevices().length),
        colorTitle(trans, colorBy)
      )
    );
    this._buildLegend();
    this._buildColorKey();
    this._draw();
    return Promise.resolve();
  }

  /** Labels in the lesson's language (`lang` of the JSON), else JupyterLab's. */
  private _speak(lang: string | undefined): void {
    if (lang === this._lang) {
      return;
    }
    this._lang = lang;
    this._trans = loadTrans(this._translator, lang);
    this._reset.textContent = this._trans.__('Reset view');
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._model?.dispose();
    this._model = null;
    this._panZoom.dispose();
    this._tooltip.dispose();
    super.dispose();
  }

  private _buildLegend(): void {
    const model = this._model!;
    this._legend.replaceChildren();
    const used = model.usedDevices();
    for (const device of this._showAll ? model.devices : used) {
      const count = model.data.nodes.filter(n => (n.assigned_device || '') === device.name).length;
      const item = htmlEl('label', 'tft-legend-item');
      item.title = device.description ? `${device.name}\n${device.description}` : device.name;
      const box = htmlEl('input', 'tft-device-toggle');
      box.type = 'checkbox';
      box.checked = true;
      box.dataset.device = device.name;
      box.addEventListener('change', () => model.setDeviceVisible(device.name, box.checked));
      item.appendChild(box);
      if (model.settings.colorBy === 'device') {
        const swatch = htmlEl('span', 'tft-swatch');
        swatch.style.background = device.color;
        item.appendChild(swatch);
      }
      item.appendChild(htmlEl('span', 'tft-legend-text', `${device.label} (${count})`));
      this._legend.appendChild(item);
    }
    if (used.length < model.devices.length) {
      this._legend.appendChild(this._allToggle(model.devices.length));
    }
  }

  /** The toggle that lists every device of the session, not only the used ones. */
  private _allToggle(total: number): HTMLElement {
    const item = htmlEl('label', 'tft-legend-item tft-all-devices');
    const box = htmlEl('input', 'tft-all-toggle');
    box.type = 'checkbox';
    box.checked = this._showAll;
    box.addEventListener('change', () => {
      this._showAll = box.checked;
      this._buildLegend();
    });
    const text = this._trans._n('all %1 device', 'all %1 devices', total);
    item.append(box, htmlEl('span', 'tft-legend-text', text));
    return item;
  }

  /** The colour key, shown when nodes are coloured by something other than device. */
  private _buildColorKey(): void {
    const model = this._model!;
    const colorBy = model.settings.colorBy;
    this._colorKey.replaceChildren();
    this._colorKey.hidden = colorBy === 'device';
    if (colorBy === 'device') {
      return;
    }
    const trans = this._trans;
    const title = trans.__('colour = %1:', colorTitle(trans, colorBy));
    this._colorKey.appendChild(htmlEl('span', 'tft-color-key-title', title));
    const none = colorBy === 'job' ? trans.__('(no job)') : trans.__('(no type)');
    for (const entry of model.colorKeys) {
      const item = htmlEl('span', 'tft-legend-item tft-color-item');
      item.dataset.key = entry.key;
      const swatch = htmlEl('span', 'tft-swatch');
      swatch.style.background = swatchBackground(entry);
      item.append(swatch, htmlEl('span', 'tft-legend-text', entry.key ? entry.label : none));
      this._colorKey.appendChild(item);
    }
  }

  private _draw(): void {
    const model = this._model!;
    const input = model.layoutInput();
    const layout = computeLayout(input);
    const defs = svgEl('defs');
    const marker = svgEl('marker', {
      id: this._markerId,
      viewBox: '0 0 10 10',
      refX: 9,
      refY: 5,
      markerUnits: 'userSpaceOnUse',
      markerWidth: 9,
      markerHeight: 9,
      orient: 'auto-start-reverse'
    });
    marker.appendChild(svgEl('path', { d: 'M0,0 L10,5 L0,10 z', class: 'tft-arrowhead' }));
    defs.append(marker, ...hatchPatterns(this._hatchPrefix));
    this._svg.replaceChildren(
      defs,
      this._drawGroups(input, layout),
      this._drawEdges(layout),
      this._drawNodes(layout)
    );
    const height = Math.min(560, Math.max(220, layout.height));
    this._canvas.style.height = `${height}px`;
    this._panZoom.fit(layout.width, Math.max(layout.height, height));
    this._applyHighlight();
  }

  private _drawGroups(input: ILayoutInput, layout: ILayout): SVGGElement {
    const layer = svgEl('g', { class: 'tft-groups' });
    for (const group of input.groups) {
      const box = layout.groups.get(group.id)!;
      const g = svgEl('g', { class: `tft-group tft-group-${group.kind}` });
      const rect = svgEl('rect', {
        x: box.x,
        y: box.y,
        width: box.width,
        height: box.height,
        rx: 6
      });
      if (group.kind === 'device' && this._model!.settings.colorBy === 'device') {
        const device = this._model!.device(group.id.slice(2));
        rect.style.stroke = device?.color ?? '';
      }
      const text = svgEl('text', { x: box.x + 6, y: box.y + 13, class: 'tft-group-label' });
      text.textContent = group.label;
      g.append(rect, text);
      layer.appendChild(g);
    }
    return layer;
  }

  private _drawEdges(layout: ILayout): SVGGElement {
    const layer = svgEl('g', { class: 'tft-edges' });
    for (const [index, points] of layout.edges) {
      if (!this._model!.edgeShown(index)) {
        continue;
      }
      const edge = this._model!.data.edges[index];
      const cls = edge.cross_device ? 'tft-edge tft-transfer' : 'tft-edge';
      const g = svgEl('g', { class: cls, 'data-edge': index });
      const d = pathOf(points);
      g.appendChild(svgEl('path', { d, class: 'tft-edge-hit' }));
      g.appendChild(
        svgEl('path', { d, class: 'tft-edge-line', 'marker-end': `url(#${this._markerId})` })
      );
      layer.appendChild(g);
    }
    return layer;
  }

  private _drawNodes(layout: ILayout): SVGGElement {
    const layer = svgEl('g', { class: 'tft-nodes' });
    for (const node of this._model!.data.nodes) {
      const box = layout.nodes.get(nodeId(node.name));
      if (!box) {
        continue;
      }
      const g = svgEl('g', {
        class: 'tft-node',
        'data-name': node.name,
        'data-device': node.assigned_device || '',
        tabindex: 0,
        role: 'button',
        'aria-label': this._trans.__(
          '%1 (%2) on %3',
          node.name,
          node.type,
          this._device(node.assigned_device)
        )
      });
      const rect = svgEl('rect', {
        x: box.x,
        y: box.y,
        width: box.width,
        height: box.height,
        rx: 5
      });
      const key: IColorKey | undefined = this._model!.nodeKey(node);
      const fill = key?.color ?? '#999999';
      rect.style.fill = key ? opPaint({ fill, hatch: key.hatch }, this._hatchPrefix) : fill;
      const name = svgEl('text', {
        x: box.x + box.width / 2,
        y: box.y + 16,
        class: 'tft-node-name'
      });
      name.textContent = node.name;
      const type = svgEl('text', {
        x: box.x + box.width / 2,
        y: box.y + 30,
        class: 'tft-node-type'
      });
      type.textContent = node.type;
      name.style.fill = type.style.fill = labelColor(fill);
      g.append(rect, name, type);
      layer.appendChild(g);
    }
    return layer;
  }

  private _applyHighlight(): void {
    const model = this._model;
    if (!model) {
      return;
    }
    const hl = model.highlight();
    const selected = model.selected;
    this._svg.classList.toggle('tft-has-selection', hl !== null);
    this._svg.querySelectorAll<SVGGElement>('.tft-node').forEach(g => {
      const name = g.dataset.name ?? '';
      g.classList.toggle('tft-selected', name === selected);
      g.classList.toggle('tft-input', !!hl?.inputs.has(name));
      g.classList.toggle('tft-output', !!hl?.outputs.has(name));
    });
    this._svg.querySelectorAll<SVGGElement>('.tft-edge').forEach(g => {
      const index = Number(g.dataset.edge);
      g.classList.toggle('tft-active', !!hl?.edges.has(index));
      g.classList.toggle('tft-transfer-active', !!hl?.transfers.has(index));
    });
    this._status.textContent = this._statusText();
  }

  private _statusText(): string {
    const model = this._model!;
    const trans = this._trans;
    const hl = model.highlight();
    const node = model.selected === null ? undefined : model.node(model.selected);
    if (!hl || !node) {
      const cross = model.data.edges.filter(e => e.cross_device).length;
      const hidden = model.data.nodes.filter(n =>
        model.hiddenDevices.has(n.assigned_device || '')
      ).length;
      const count = model.data.nodes.length;
      const nodes = hidden
        ? trans._n('%1 node (%2 hidden)', '%1 nodes (%2 hidden)', count, hidden)
        : trans._n('%1 node', '%1 nodes', count);
      const edges = model.settings.showTransfers
        ? trans._n('%1 cross-device edge', '%1 cross-device edges', cross)
        : trans._n('%1 cross-device edge (not drawn)', '%1 cross-device edges (not drawn)', cross);
      return trans.__(
        '%1 %2, %3. Click a node to see its inputs, outputs and transfers; drag to pan, wheel to zoom.',
        nodes,
        trans._n('on %1 device', 'on %1 devices', model.usedDevices().length),
        edges
      );
    }
    const list = (names: Set<string>): string =>
      names.size ? [...names].join(', ') : trans.__('none');
    const bytes = [...hl.transfers].reduce((sum, i) => sum + (model.data.edges[i].bytes ?? 0), 0);
    const transfers = hl.transfers.size
      ? `${hl.transfers.size} (${this._bytes(bytes)})`
      : String(hl.transfers.size);
    return trans.__(
      'Selected %1 (%2) on %3. Inputs: %4. Outputs: %5. Transfers: %6.',
      node.name,
      node.type,
      this._device(node.assigned_device),
      list(hl.inputs),
      list(hl.outputs),
      transfers
    );
  }

  /** A device's short name, or "unplaced" for a node without one. */
  private _device(name: string | null | undefined): string {
    return name ? shortDevice(name) : this._trans.__('unplaced');
  }

  /** Bytes as a short string, or "unknown". */
  private _bytes(bytes: number | null | undefined): string {
    return formatBytes(bytes, this._trans.__('unknown'));
  }

  private _nodeRows(node: IPlacementNode): TooltipRow[] {
    const trans = this._trans;
    const bytes = this._model!.nodeBytes(node.name);
    const rows: TooltipRow[] = [
      [trans.__('type'), node.type],
      [trans.__('requested'), node.requested_device || trans.__('(none)')],
      [trans.__('assigned'), node.assigned_device || trans.__('(unplaced)')],
      [trans.__('output'), this._bytes(bytes.output)]
    ];
    if (bytes.transferred !== null) {
      rows.push([trans.__('sent to other devices'), this._bytes(bytes.transferred)]);
    }
    return rows;
  }

  private _onHover = (event: MouseEvent): void => {
    const target = event.target as Element;
    const nodeEl = target.closest<SVGGElement>('.tft-node');
    const edgeEl = target.closest<SVGGElement>('.tft-edge');
    const model = this._model;
    if (model && nodeEl) {
      const node = model.node(nodeEl.dataset.name ?? '')!;
      this._tooltip.show(event, node.name, this._nodeRows(node), nodeEl.getBoundingClientRect());
    } else if (model && edgeEl) {
      const edge = model.data.edges[Number(edgeEl.dataset.edge)];
      const trans = this._trans;
      this._tooltip.show(event, `${edge.src} → ${edge.dst}`, [
        [trans.__('crosses devices'), edge.cross_device ? trans.__('yes') : trans.__('no')],
        [trans.__('bytes'), this._bytes(edge.bytes)]
      ]);
    } else {
      this._tooltip.hide();
    }
  };

  private _onClick = (event: MouseEvent): void => {
    if (this._panZoom.dragged || !this._model) {
      return;
    }
    const nodeEl = (event.target as Element).closest<SVGGElement>('.tft-node');
    this._model.select(nodeEl ? (nodeEl.dataset.name ?? null) : null);
  };

  private _onKey = (event: KeyboardEvent): void => {
    const nodeEl = (event.target as Element).closest?.<SVGGElement>('.tft-node');
    if (!this._model) {
      return;
    }
    if (nodeEl && (event.key === 'Enter' || event.key === ' ')) {
      event.preventDefault();
      this._model.select(nodeEl.dataset.name ?? null);
    } else if (event.key === 'Escape') {
      this._model.select(null);
    }
  };

  private _mimeType: string;
  private _trans: Trans;
  private _translator: IRenderMime.ITranslator | undefined;
  private _lang: string | undefined = undefined;
  private _reset: HTMLButtonElement;
  private _markerId: string;
  private _showAll = false;

  private get _hatchPrefix(): string {
    return `${this._markerId}-hatch`;
  }
  private _model: PlacementModel | null = null;
  private _legend: HTMLElement;
  private _colorKey: HTMLElement;
  private _canvas: HTMLElement;
  private _svg: SVGSVGElement;
  private _status: HTMLElement;
  private _tooltip: Tooltip;
  private _panZoom: PanZoom;
}

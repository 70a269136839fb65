/**
 * The timeline view: one swimlane per device, ops as bars coloured by op
 * type (or by device, when the output's metadata says so: the kernel's
 * "Colour by" control), transfers as arrows between lanes (unless the
 * metadata hides them), a time axis.
 *
 * Drag across the lanes to zoom into that range, use the wheel to zoom about
 * the pointer, `Reset zoom` to see the whole step; hover shows an op's type,
 * duration and bytes. Redraws when the model's view changes or the canvas is
 * resized. Owns the model, tooltip and resize observer; dispose() releases
 * them.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { formatBytes, formatDuration, htmlEl, svgEl } from '../format';
import { Tooltip } from '../tooltip';
import {
  ITimelineOp,
  ITimelineTransfer,
  parseTimeline,
  parseTimelineSettings,
  TimelineModel,
  TimeScale
} from './model';

/** Pixel geometry of the drawing. */
const LABEL_WIDTH = 96;
const AXIS_HEIGHT = 26;
const LANE_HEIGHT = 26;
const LANE_GAP = 12;
const RIGHT_PAD = 28;

let idCount = 0;

function laneTop(index: number): number {
  return AXIS_HEIGHT + index * (LANE_HEIGHT + LANE_GAP);
}

export class TimelineView extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this._ids = ++idCount;
    this.addClass('tft-view');
    this.addClass('tft-timeline');
    this._legend = htmlEl('div', 'tft-legend');
    this._range = htmlEl('span', 'tft-range');
    this._reset = htmlEl('button', 'tft-button tft-reset', 'Reset zoom');
    this._reset.addEventListener('click', () => this._model?.reset());
    const toolbar = htmlEl('div', 'tft-toolbar');
    toolbar.append(this._legend, this._range, this._reset);
    this._canvas = htmlEl('div', 'tft-canvas');
    this._svg = svgEl('svg', { class: 'tft-svg', role: 'img' });
    this._canvas.appendChild(this._svg);
    this._status = htmlEl('div', 'tft-status');
    this.node.append(toolbar, this._canvas, this._status);
    this._tooltip = new Tooltip(this._canvas);
    this._svg.addEventListener('wheel', this._onWheel, { passive: false });
    this._svg.addEventListener('pointerdown', this._onPointerDown);
    this._svg.addEventListener('pointermove', this._onPointerMove);
    this._svg.addEventListener('pointerup', this._onPointerUp);
    this._svg.addEventListener('mouseleave', () => this._tooltip.hide());
    this._resizeObserver = new ResizeObserver(() => {
      if (this._canvas.clientWidth !== this._lastWidth) {
        this._lastWidth = this._canvas.clientWidth;
        this._draw();
      }
    });
    this._resizeObserver.observe(this._canvas);
  }

  get model(): TimelineModel | null {
    return this._model;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._model?.dispose();
    this._model = null;
    try {
      this._model = new TimelineModel(
        parseTimeline(model.data[this._mimeType]),
        parseTimelineSettings(model.metadata[this._mimeType])
      );
    } catch (error) {
      this._status.textContent = `Cannot show this timeline: ${error}`;
      return Promise.resolve();
    }
    this._model.viewChanged.connect(this._draw, this);
    const { colorBy, showTransfers } = this._model.settings;
    this.node.dataset.colorBy = colorBy;
    this.node.dataset.showTransfers = String(showTransfers);
    this._svg.setAttribute(
      'aria-label',
      `device timeline: ${this._model.data.ops.length} ops on ${this._model.lanes.length} ` +
        `devices, step ${formatDuration(this._model.data.step_us)}`
    );
    this._buildLegend();
    this._draw();
    return Promise.resolve();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._resizeObserver.disconnect();
    this._model?.dispose();
    this._model = null;
    this._tooltip.dispose();
    super.dispose();
  }

  private _buildLegend(): void {
    const model = this._model!;
    this._legend.replaceChildren();
    for (const { label, color } of model.colorKeys()) {
      const item = htmlEl('span', 'tft-legend-item');
      const swatch = htmlEl('span', 'tft-swatch');
      swatch.style.background = color;
      item.append(swatch, htmlEl('span', 'tft-legend-text', label));
      this._legend.appendChild(item);
    }
    if (model.data.transfers.length && model.settings.showTransfers) {
      const item = htmlEl('span', 'tft-legend-item');
      item.append(
        htmlEl('span', 'tft-swatch tft-swatch-transfer'),
        htmlEl('span', 'tft-legend-text', 'transfer')
      );
      this._legend.appendChild(item);
    }
  }

  private _scale(): TimeScale {
    const width = Math.max(LABEL_WIDTH + 100, this._canvas.clientWidth || 800);
    return new TimeScale(this._model!.view, [LABEL_WIDTH, width - RIGHT_PAD]);
  }

  private _draw(): void {
    const model = this._model;
    if (!model) {
      return;
    }
    const scale = this._scale();
    const height = laneTop(model.lanes.length) + 4;
    this._svg.setAttribute('width', String(scale.range[1] + RIGHT_PAD));
    this._svg.setAttribute('height', String(height));
    const clipId = `tft-clip-${this._ids}`;
    const arrowId = `tft-tarrow-${this._ids}`;
    const defs = svgEl('defs');
    const clip = svgEl('clipPath', { id: clipId });
    clip.appendChild(
      svgEl('rect', { x: LABEL_WIDTH, y: 0, width: scale.range[1] - LABEL_WIDTH, height })
    );
    const marker = svgEl('marker', {
      id: arrowId,
      viewBox: '0 0 10 10',
      refX: 9,
      refY: 5,
      markerUnits: 'userSpaceOnUse',
      markerWidth: 9,
      markerHeight: 9,
      orient: 'auto'
    });
    marker.appendChild(svgEl('path', { d: 'M0,0 L10,5 L0,10 z', class: 'tft-arrowhead' }));
    defs.append(clip, marker);
    const plot = svgEl('g', { 'clip-path': `url(#${clipId})` });
    plot.append(this._drawOps(scale), this._drawTransfers(scale, arrowId));
    this._selection = svgEl('rect', {
      class: 'tft-zoom-selection',
      y: AXIS_HEIGHT - 4,
      height: height - AXIS_HEIGHT,
      width: 0
    });
    this._svg.replaceChildren(
      defs,
      this._drawLanes(scale),
      this._drawAxis(scale, height),
      plot,
      this._selection
    );
    const [v0, v1] = model.view;
    this._range.textContent = `${formatDuration(v0)} – ${formatDuration(v1)}`;
    this._reset.disabled = !model.isZoomed;
    this._status.textContent =
      `${model.data.ops.length} ops and ${model.data.transfers.length} transfers on ` +
      `${model.lanes.length} devices; step ${formatDuration(model.data.step_us)}. Drag or scroll to zoom.`;
  }

  private _drawLanes(scale: TimeScale): SVGGElement {
    const layer = svgEl('g', { class: 'tft-lanes' });
    this._model!.lanes.forEach((lane, i) => {
      const y = laneTop(i);
      layer.appendChild(
        svgEl('rect', {
          class: 'tft-lane',
          x: LABEL_WIDTH,
          y,
          width: scale.range[1] - LABEL_WIDTH,
          height: LANE_HEIGHT
        })
      );
      const label = svgEl('text', {
        class: 'tft-lane-label',
        x: LABEL_WIDTH - 8,
        y: y + LANE_HEIGHT / 2 + 4,
        'data-device': lane.name
      });
      label.textContent = lane.short;
      const title = svgEl('title');
      title.textContent = lane.name;
      label.appendChild(title);
      layer.appendChild(label);
    });
    return layer;
  }

  private _drawAxis(scale: TimeScale, height: number): SVGGElement {
    const layer = svgEl('g', { class: 'tft-axis' });
    for (const t of scale.ticks(Math.max(2, Math.floor((scale.range[1] - scale.range[0]) / 110)))) {
      const x = scale.toX(t);
      layer.appendChild(
        svgEl('line', { class: 'tft-tick', x1: x, x2: x, y1: AXIS_HEIGHT - 6, y2: height })
      );
      const text = svgEl('text', { class: 'tft-tick-label', x, y: AXIS_HEIGHT - 10 });
      text.textContent = formatDuration(t);
      layer.appendChild(text);
    }
    return layer;
  }

  private _drawOps(scale: TimeScale): SVGGElement {
    const model = this._model!;
    const layer = svgEl('g', { class: 'tft-ops' });
    model.data.ops.forEach((op, i) => {
      const lane = model.laneIndex(op.device);
      const x0 = scale.toX(op.start_us);
      const x1 = scale.toX(op.end_us);
      if (lane < 0 || x1 < scale.range[0] || x0 > scale.range[1]) {
        return;
      }
      const rect = svgEl('rect', {
        class: 'tft-op',
        'data-op': i,
        'data-name': op.name,
        x: x0,
        y: laneTop(lane) + 3,
        width: Math.max(1, x1 - x0),
        height: LANE_HEIGHT - 6,
        rx: 2
      });
      rect.style.fill = model.barColor(op);
      layer.appendChild(rect);
    });
    return layer;
  }

  private _drawTransfers(scale: TimeScale, arrowId: string): SVGGElement {
    const model = this._model!;
    const layer = svgEl('g', { class: 'tft-transfers' });
    if (!model.settings.showTransfers) {
      return layer;
    }
    model.data.transfers.forEach((tr, i) => {
      const src = model.laneIndex(tr.src_device);
      const dst = model.laneIndex(tr.dst_device);
      if (src < 0 || dst < 0) {
        return;
      }
      const down = dst >= src;
      const y1 = laneTop(src) + (down ? LANE_HEIGHT : 0);
      const y2 = laneTop(dst) + (down ? 0 : LANE_HEIGHT);
      const attrs = { x1: scale.toX(tr.start_us), y1, x2: scale.toX(tr.end_us), y2 };
      const g = svgEl('g', { class: 'tft-transfer-arrow', 'data-transfer': i });
      g.appendChild(svgEl('line', { ...attrs, class: 'tft-transfer-hit' }));
      g.appendChild(
        svgEl('line', { ...attrs, class: 'tft-transfer-line', 'marker-end': `url(#${arrowId})` })
      );
      layer.appendChild(g);
    });
    return layer;
  }

  private _showDetails(event: MouseEvent): void {
    const target = event.target as Element;
    const opEl = target.closest<SVGElement>('.tft-op');
    const trEl = target.closest<SVGElement>('.tft-transfer-arrow');
    if (opEl) {
      const op: ITimelineOp = this._model!.data.ops[Number(opEl.dataset.op)];
      this._tooltip.show(event, op.name, [
        ['op', op.op],
        ['device', op.device],
        ['start', formatDuration(op.start_us)],
        ['duration', formatDuration(op.end_us - op.start_us)],
        ['bytes', formatBytes(op.bytes)]
      ]);
    } else if (trEl) {
      const tr: ITimelineTransfer = this._model!.data.transfers[Number(trEl.dataset.transfer)];
      this._tooltip.show(event, `transfer ${tr.tensor}`, [
        ['from', tr.src_device],
        ['to', tr.dst_device],
        ['duration', formatDuration(tr.end_us - tr.start_us)],
        ['bytes', formatBytes(tr.bytes)]
      ]);
    } else {
      this._tooltip.hide();
    }
  }

  private _localX(event: MouseEvent): number {
    return event.clientX - this._svg.getBoundingClientRect().left;
  }

  private _onWheel = (event: WheelEvent): void => {
    const x = this._localX(event);
    if (!this._model || x < LABEL_WIDTH) {
      return;
    }
    event.preventDefault();
    this._model.zoomAt(this._scale().toTime(x), Math.exp(-event.deltaY * 0.0015));
  };

  private _onPointerDown = (event: PointerEvent): void => {
    const x = this._localX(event);
    if (event.button === 0 && x >= LABEL_WIDTH) {
      this._dragStart = x;
      this._svg.setPointerCapture?.(event.pointerId);
    }
  };

  private _onPointerMove = (event: PointerEvent): void => {
    if (this._dragStart === null) {
      this._showDetails(event);
      return;
    }
    const x = Math.max(LABEL_WIDTH, this._localX(event));
    this._selection?.setAttribute('x', String(Math.min(x, this._dragStart)));
    this._selection?.setAttribute('width', String(Math.abs(x - this._dragStart)));
  };

  private _onPointerUp = (event: PointerEvent): void => {
    const start = this._dragStart;
    this._dragStart = null;
    if (this._svg.hasPointerCapture?.(event.pointerId)) {
      this._svg.releasePointerCapture(event.pointerId);
    }
    this._selection?.setAttribute('width', '0');
    const x = Math.max(LABEL_WIDTH, this._localX(event));
    if (start !== null && this._model && Math.abs(x - start) > 4) {
      const scale = this._scale();
      this._model.zoomTo(scale.toTime(start), scale.toTime(x));
    }
  };

  private _mimeType: string;
  private _ids: number;
  private _model: TimelineModel | null = null;
  private _legend: HTMLElement;
  private _range: HTMLElement;
  private _reset: HTMLButtonElement;
  private _canvas: HTMLElement;
  private _svg: SVGSVGElement;
  private _status: HTMLElement;
  private _selection: SVGRectElement | null = null;
  private _tooltip: Tooltip;
  private _resizeObserver: ResizeObserver;
  private _dragStart: number | null = null;
  private _lastWidth = 0;
}

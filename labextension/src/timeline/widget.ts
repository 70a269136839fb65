/**
 * The timeline view: one swimlane per device, its label (elided when long,
 * the full name as its tooltip) with the device's colour; ops as bars by op
 * type (greys and hatches) or by device (when the output's metadata says so:
 * the kernel's "Colour by" control); each transfer as a slice in a band at
 * the top of the receiving lane, with an arrow from the end of the producer's
 * bar to it and arrows from its end into the consumers' bars (unless the
 * metadata hides transfers); a time axis.
 *
 * Drag across the lanes to zoom into that range, use the wheel to zoom about
 * the pointer, `Reset zoom` to see the whole step; with the focus on the
 * drawing `+`/`-` zoom, the arrow keys pan and `0` resets. Hover shows an
 * op's type, duration and bytes in a tooltip placed off the hovered bar.
 * Redraws when the model's view changes or the canvas is resized. Owns the
 * model, tooltip and resize observer; dispose() releases them. Labels,
 * tooltips and the status line are in the learner's language.
 *
 * A modelled step (`tfteach.hardware`, `%%placement --model`: the data's
 * `modelled_on`) is marked as such: a "modelled" mark leads the toolbar (the
 * profile in its tooltip), the drawing has a dashed frame, and the status
 * line and the drawing's label start by saying whose model it is.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import {
  elide,
  formatBytes,
  formatDuration,
  hatchPatterns,
  htmlEl,
  opPaint,
  svgEl,
  swatchBackground
} from '../format';
import { Tooltip } from '../tooltip';
import { loadTrans, Trans, viewLang } from '../translation';
import {
  ITimelineOp,
  ITimelineTransfer,
  parseTimeline,
  parseTimelineSettings,
  TimelineModel,
  TimeScale,
  transferArrows
} from './model';
import {
  AXIS_HEIGHT,
  arrowPoints,
  BAND_HEIGHT,
  barSpan,
  labelWidth,
  LANE_HEIGHT,
  laneTop,
  MAX_LABEL_CHARS,
  RIGHT_PAD
} from './geometry';

let idCount = 0;

export class TimelineView extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._mimeType = options.mimeType;
    this._translator = options.translator;
    this._trans = loadTrans(options.translator);
    this._ids = ++idCount;
    this.addClass('tft-view');
    this.addClass('tft-timeline');
    this._legend = htmlEl('div', 'tft-legend');
    this._range = htmlEl('span', 'tft-range');
    this._reset = htmlEl('button', 'tft-button tft-reset', this._trans.__('Reset zoom'));
    this._reset.addEventListener('click', () => this._model?.reset());
    this._mark = htmlEl('span', 'tft-modelled-mark', this._trans.__('modelled'));
    this._mark.hidden = true;
    const toolbar = htmlEl('div', 'tft-toolbar');
    toolbar.append(this._mark, this._legend, this._range, this._reset);
    this._canvas = htmlEl('div', 'tft-canvas');
    this._svg = svgEl('svg', { class: 'tft-svg', role: 'img', tabindex: 0 });
    this._canvas.appendChild(this._svg);
    this._status = htmlEl('div', 'tft-status');
    this.node.append(toolbar, this._canvas, this._status);
    this._tooltip = new Tooltip(this._canvas);
    this._svg.addEventListener('wheel', this._onWheel, { passive: false });
    this._svg.addEventListener('pointerdown', this._onPointerDown);
    this._svg.addEventListener('pointermove', this._onPointerMove);
    this._svg.addEventListener('pointerup', this._onPointerUp);
    this._svg.addEventListener('mouseleave', () => this._tooltip.hide());
    this._svg.addEventListener('keydown', this._onKey);
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
    this._speak(viewLang(model.data[this._mimeType]));
    try {
      this._model = new TimelineModel(
        parseTimeline(model.data[this._mimeType]),
        parseTimelineSettings(model.metadata[this._mimeType])
      );
    } catch (error) {
      this._status.textContent = this._trans.__('Cannot show this timeline: %1', String(error));
      return Promise.resolve();
    }
    this._model.viewChanged.connect(this._draw, this);
    const { colorBy, showTransfers } = this._model.settings;
    this.node.dataset.colorBy = colorBy;
    this.node.dataset.showTransfers = String(showTransfers);
    this._markModelled(this._model.data.modelled_on);
    const trans = this._trans;
    this._svg.setAttribute(
      'aria-label',
      this._caption +
        trans.__(
          'device timeline: %1 %2, step %3. +, - and arrow keys zoom and pan, 0 resets.',
          trans._n('%1 op', '%1 ops', this._model.data.ops.length),
          trans._n('on %1 device', 'on %1 devices', this._model.lanes.length),
          formatDuration(this._model.data.step_us)
        )
    );
    this._labelWidth = labelWidth(this._model.lanes.map(l => l.short));
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

  /** Mark the view as modelled on `profile` (or as measured: no profile). */
  /** Labels in the lesson's language (`lang` of the JSON), else JupyterLab's. */
  private _speak(lang: string | undefined): void {
    if (lang === this._lang) {
      return;
    }
    this._lang = lang;
    this._trans = loadTrans(this._translator, lang);
    this._reset.textContent = this._trans.__('Reset zoom');
    this._mark.textContent = this._trans.__('modelled');
  }

  private _markModelled(profile: string | undefined): void {
    this.node.classList.toggle('tft-modelled', !!profile);
    this._mark.hidden = !profile;
    this._caption = profile
      ? this._trans.__(
          'Modelled time on %1: a model of that machine, not measured here.',
          profile
        ) + ' '
      : '';
    this._mark.title = this._caption.trim();
    if (profile) {
      this.node.dataset.modelledOn = profile;
    } else {
      delete this.node.dataset.modelledOn;
    }
  }

  private _buildLegend(): void {
    const model = this._model!;
    this._legend.replaceChildren();
    for (const entry of model.colorKeys()) {
      const item = htmlEl('span', 'tft-legend-item');
      const swatch = htmlEl('span', 'tft-swatch');
      swatch.style.background = swatchBackground(entry);
      const label = entry.label;
      item.append(swatch, htmlEl('span', 'tft-legend-text', label));
      this._legend.appendChild(item);
    }
    if (model.data.transfers.length && model.settings.showTransfers) {
      const item = htmlEl('span', 'tft-legend-item');
      item.append(
        htmlEl('span', 'tft-swatch tft-swatch-transfer'),
        htmlEl('span', 'tft-legend-text', this._trans.__('transfer'))
      );
      this._legend.appendChild(item);
    }
  }

  private _scale(): TimeScale {
    const width = Math.max(this._labelWidth + 100, this._canvas.clientWidth || 800);
    return new TimeScale(this._model!.view, [this._labelWidth, width - RIGHT_PAD]);
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
      svgEl('rect', {
        x: this._labelWidth,
        y: 0,
        width: scale.range[1] - this._labelWidth,
        height
      })
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
    defs.append(clip, marker, ...hatchPatterns(this._hatchPrefix));
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
    const trans = this._trans;
    this._status.textContent =
      this._caption +
      trans.__(
        '%1 and %2 %3; step %4. Drag or scroll to zoom.',
        trans._n('%1 op', '%1 ops', model.data.ops.length),
        trans._n('%1 transfer', '%1 transfers', model.data.transfers.length),
        trans._n('on %1 device', 'on %1 devices', model.lanes.length),
        formatDuration(model.data.step_us)
      );
  }

  private _drawLanes(scale: TimeScale): SVGGElement {
    const layer = svgEl('g', { class: 'tft-lanes' });
    this._model!.lanes.forEach((lane, i) => {
      const y = laneTop(i);
      layer.appendChild(
        svgEl('rect', {
          class: 'tft-lane',
          x: this._labelWidth,
          y,
          width: scale.range[1] - this._labelWidth,
          height: LANE_HEIGHT
        })
      );
      const swatch = svgEl('rect', {
        class: 'tft-lane-swatch',
        x: 4,
        y: y + LANE_HEIGHT / 2 - 5,
        width: 10,
        height: 10,
        rx: 2
      });
      swatch.style.fill = this._model!.laneColor(i);
      layer.appendChild(swatch);
      const label = svgEl('text', {
        class: 'tft-lane-label',
        x: this._labelWidth - 6,
        y: y + LANE_HEIGHT / 2 + 4,
        'data-device': lane.name
      });
      label.textContent = elide(lane.short, MAX_LABEL_CHARS);
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
      const [top, bottom] = barSpan(lane);
      const rect = svgEl('rect', {
        class: 'tft-op',
        'data-op': i,
        'data-name': op.name,
        x: x0,
        y: top,
        width: Math.max(1, x1 - x0),
        height: bottom - top,
        rx: 2,
        'aria-label': `${op.name} (${op.op}), ${formatDuration(op.end_us - op.start_us)}`
      });
      rect.style.fill = opPaint(model.barStyle(op), this._hatchPrefix);
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
      const lane = model.laneIndex(tr.dst_device);
      if (lane < 0 || model.laneIndex(tr.src_device) < 0) {
        return;
      }
      const x0 = scale.toX(tr.start_us);
      layer.appendChild(
        svgEl('rect', {
          class: 'tft-transfer-slice',
          'data-transfer': i,
          x: x0,
          y: laneTop(lane) + 1,
          width: Math.max(1.5, scale.toX(tr.end_us) - x0),
          height: BAND_HEIGHT
        })
      );
    });
    for (const arrow of transferArrows(model.data)) {
      const src = model.laneIndex(arrow.src);
      const dst = model.laneIndex(arrow.dst);
      if (src < 0 || dst < 0) {
        continue;
      }
      const attrs = arrowPoints(arrow, src, dst, t => scale.toX(t));
      const g = svgEl('g', {
        class: 'tft-transfer-arrow',
        'data-transfer': arrow.transfer,
        'data-kind': arrow.kind,
        'data-consumer': arrow.consumer ?? ''
      });
      g.appendChild(svgEl('line', { ...attrs, class: 'tft-transfer-hit' }));
      g.appendChild(
        svgEl('line', { ...attrs, class: 'tft-transfer-line', 'marker-end': `url(#${arrowId})` })
      );
      layer.appendChild(g);
    }
    return layer;
  }

  private _showDetails(event: MouseEvent): void {
    const target = event.target as Element;
    const opEl = target.closest<SVGElement>('.tft-op');
    const trEl = target.closest<SVGElement>('.tft-transfer-arrow, .tft-transfer-slice');
    const avoid = (opEl ?? trEl)?.getBoundingClientRect();
    const trans = this._trans;
    const bytes = (n: number | null | undefined) => formatBytes(n, trans.__('unknown'));
    if (opEl) {
      const op: ITimelineOp = this._model!.data.ops[Number(opEl.dataset.op)];
      this._tooltip.show(
        event,
        op.name,
        [
          [trans.__('op'), op.op],
          [trans.__('device'), op.device],
          [trans.__('start'), formatDuration(op.start_us)],
          [trans.__('duration'), formatDuration(op.end_us - op.start_us)],
          [trans.__('bytes'), bytes(op.bytes)]
        ],
        avoid
      );
    } else if (trEl) {
      const tr: ITimelineTransfer = this._model!.data.transfers[Number(trEl.dataset.transfer)];
      this._tooltip.show(
        event,
        trans.__('transfer %1', tr.tensor),
        [
          [trans.__('from'), tr.src_device],
          [trans.__('to'), tr.dst_device],
          [trans.__('duration'), formatDuration(tr.end_us - tr.start_us)],
          [trans.__('bytes'), bytes(tr.bytes)]
        ],
        avoid
      );
    } else {
      this._tooltip.hide();
    }
  }

  private _localX(event: MouseEvent): number {
    return event.clientX - this._svg.getBoundingClientRect().left;
  }

  private _onKey = (event: KeyboardEvent): void => {
    const model = this._model;
    if (!model || event.target !== this._svg) {
      return;
    }
    const [v0, v1] = model.view;
    const moves: { [key: string]: () => void } = {
      '+': () => model.zoomAt((v0 + v1) / 2, 1.25),
      '=': () => model.zoomAt((v0 + v1) / 2, 1.25),
      '-': () => model.zoomAt((v0 + v1) / 2, 0.8),
      '0': () => model.reset(),
      ArrowLeft: () => model.panBy(-0.1),
      ArrowRight: () => model.panBy(0.1)
    };
    const move = moves[event.key];
    if (move) {
      event.preventDefault();
      move();
    }
  };

  private _onWheel = (event: WheelEvent): void => {
    const x = this._localX(event);
    if (!this._model || x < this._labelWidth) {
      return;
    }
    event.preventDefault();
    this._model.zoomAt(this._scale().toTime(x), Math.exp(-event.deltaY * 0.0015));
  };

  private _onPointerDown = (event: PointerEvent): void => {
    const x = this._localX(event);
    if (event.button === 0 && x >= this._labelWidth) {
      this._dragStart = x;
      this._svg.setPointerCapture?.(event.pointerId);
    }
  };

  private _onPointerMove = (event: PointerEvent): void => {
    if (this._dragStart === null) {
      this._showDetails(event);
      return;
    }
    const x = Math.max(this._labelWidth, this._localX(event));
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
    const x = Math.max(this._labelWidth, this._localX(event));
    if (start !== null && this._model && Math.abs(x - start) > 4) {
      const scale = this._scale();
      this._model.zoomTo(scale.toTime(start), scale.toTime(x));
    }
  };

  private _mimeType: string;
  private _trans: Trans;
  private _translator: IRenderMime.ITranslator | undefined;
  private _lang: string | undefined = undefined;
  private _mark: HTMLElement;
  private _caption = '';
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
  private _labelWidth = labelWidth([]);

  private get _hatchPrefix(): string {
    return `tft-thatch-${this._ids}`;
  }
}

/**
 * Pan and zoom for an SVG drawing by moving its viewBox.
 *
 * `ViewBox` is the pure part (the visible rectangle in drawing coordinates).
 * `PanZoom` binds it to an <svg>: wheel zooms about the pointer, dragging the
 * background pans, `reset()` fits the whole drawing; with the keyboard focus
 * on the <svg>, `+`/`-` zoom, the arrow keys pan and `0` fits again. A drag
 * sets `dragged` so that the click that ends it is not taken as a selection.
 */
import { IDisposable } from '@lumino/disposable';

/** Smallest and largest zoom relative to the fitted drawing. */
const MIN_SCALE = 0.2;
const MAX_SCALE = 20;

export class ViewBox {
  constructor(
    public x: number,
    public y: number,
    public width: number,
    public height: number
  ) {}

  /** Zoom by `factor` (> 1 zooms in) keeping the point (px, py) fixed. */
  zoomAt(px: number, py: number, factor: number): void {
    this.x = px - (px - this.x) / factor;
    this.y = py - (py - this.y) / factor;
    this.width /= factor;
    this.height /= factor;
  }

  /** Move the view by (dx, dy) in drawing units. */
  panBy(dx: number, dy: number): void {
    this.x -= dx;
    this.y -= dy;
  }

  toString(): string {
    return `${this.x} ${this.y} ${this.width} ${this.height}`;
  }
}

export class PanZoom implements IDisposable {
  constructor(private readonly _svg: SVGSVGElement) {
    _svg.addEventListener('wheel', this._onWheel, { passive: false });
    _svg.addEventListener('pointerdown', this._onPointerDown);
    _svg.addEventListener('pointermove', this._onPointerMove);
    _svg.addEventListener('pointerup', this._onPointerUp);
    _svg.addEventListener('pointercancel', this._onPointerUp);
    _svg.addEventListener('keydown', this._onKey);
  }

  /** True when the last pointer gesture moved the view (not a click). */
  get dragged(): boolean {
    return this._dragged;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Show the whole drawing of the given size. */
  fit(width: number, height: number): void {
    this._full = new ViewBox(0, 0, width, height);
    this.reset();
  }

  reset(): void {
    const f = this._full;
    this._view = new ViewBox(f.x, f.y, f.width, f.height);
    this._apply();
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._svg.removeEventListener('wheel', this._onWheel);
    this._svg.removeEventListener('pointerdown', this._onPointerDown);
    this._svg.removeEventListener('pointermove', this._onPointerMove);
    this._svg.removeEventListener('pointerup', this._onPointerUp);
    this._svg.removeEventListener('pointercancel', this._onPointerUp);
    this._svg.removeEventListener('keydown', this._onKey);
  }

  /** Zoom by `factor` (> 1 zooms in) about the middle of the view, within the limits. */
  zoomBy(factor: number): void {
    const scale = this._full.width / (this._view.width / factor);
    if (scale < MIN_SCALE || scale > MAX_SCALE) {
      return;
    }
    const v = this._view;
    v.zoomAt(v.x + v.width / 2, v.y + v.height / 2, factor);
    this._apply();
  }

  /** Move the view by a fraction of its size (arrow keys: a tenth). */
  panByFraction(fx: number, fy: number): void {
    this._view.panBy(-fx * this._view.width, -fy * this._view.height);
    this._apply();
  }

  /** Drawing units per screen pixel (the viewBox is fitted with `meet`). */
  private _unitsPerPixel(): number {
    const rect = this._svg.getBoundingClientRect();
    if (!rect.width || !rect.height) {
      return 1;
    }
    return Math.max(this._view.width / rect.width, this._view.height / rect.height);
  }

  private _toDrawing(event: MouseEvent): { x: number; y: number } {
    const ctm = this._svg.getScreenCTM();
    if (!ctm) {
      return { x: this._view.x, y: this._view.y };
    }
    const p = new DOMPoint(event.clientX, event.clientY).matrixTransform(ctm.inverse());
    return { x: p.x, y: p.y };
  }

  private _onWheel = (event: WheelEvent): void => {
    event.preventDefault();
    const factor = Math.exp(-event.deltaY * 0.0015);
    const scale = this._full.width / (this._view.width / factor);
    if (scale < MIN_SCALE || scale > MAX_SCALE) {
      return;
    }
    const p = this._toDrawing(event);
    this._view.zoomAt(p.x, p.y, factor);
    this._apply();
  };

  private _onPointerDown = (event: PointerEvent): void => {
    if (event.button !== 0) {
      return;
    }
    this._drag = { x: event.clientX, y: event.clientY };
    this._dragged = false;
  };

  private _onPointerMove = (event: PointerEvent): void => {
    if (!this._drag) {
      return;
    }
    const dx = event.clientX - this._drag.x;
    const dy = event.clientY - this._drag.y;
    if (!this._dragged && Math.hypot(dx, dy) < 4) {
      return;
    }
    if (!this._dragged) {
      this._svg.setPointerCapture?.(event.pointerId);
    }
    this._dragged = true;
    const k = this._unitsPerPixel();
    this._view.panBy(dx * k, dy * k);
    this._drag = { x: event.clientX, y: event.clientY };
    this._apply();
  };

  private _onPointerUp = (event: PointerEvent): void => {
    this._drag = null;
    if (this._svg.hasPointerCapture?.(event.pointerId)) {
      this._svg.releasePointerCapture(event.pointerId);
    }
  };

  private _onKey = (event: KeyboardEvent): void => {
    if (event.target !== this._svg) {
      return;
    }
    const moves: { [key: string]: () => void } = {
      '+': () => this.zoomBy(1.25),
      '=': () => this.zoomBy(1.25),
      '-': () => this.zoomBy(0.8),
      '0': () => this.reset(),
      ArrowLeft: () => this.panByFraction(-0.1, 0),
      ArrowRight: () => this.panByFraction(0.1, 0),
      ArrowUp: () => this.panByFraction(0, -0.1),
      ArrowDown: () => this.panByFraction(0, 0.1)
    };
    const move = moves[event.key];
    if (move) {
      event.preventDefault();
      move();
    }
  };

  private _apply(): void {
    this._svg.setAttribute('viewBox', this._view.toString());
  }

  private _full = new ViewBox(0, 0, 1, 1);
  private _view = new ViewBox(0, 0, 1, 1);
  private _drag: { x: number; y: number } | null = null;
  private _dragged = false;
  private _isDisposed = false;
}

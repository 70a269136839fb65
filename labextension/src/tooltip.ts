/**
 * A floating tooltip inside a view's canvas. It owns one absolutely
 * positioned div; lines are set as text (never HTML), so op and device
 * names from a kernel cannot inject markup.
 */
import { IDisposable } from '@lumino/disposable';

import { htmlEl } from './format';

/** One `label: value` row of a tooltip. */
export type TooltipRow = [string, string];

/**
 * Where a tooltip of `size` goes in a host of `host` size for a pointer at
 * `at`: right of the pointer; below the pointer, or below `avoid` (the rows
 * the hovered element covers) when given, else above them when there is no
 * room below. Pure, so the placement can be tested.
 */
export function tooltipPlace(
  at: { x: number; y: number },
  size: { width: number; height: number },
  host: { width: number; height: number },
  avoid?: { top: number; bottom: number }
): { x: number; y: number } {
  const x = Math.max(0, Math.min(at.x + 14, host.width - size.width - 4));
  const top = Math.min(at.y, avoid?.top ?? at.y) - 8;
  const bottom = Math.max(at.y + 14, (avoid?.bottom ?? at.y) + 8);
  if (bottom + size.height <= host.height || top - size.height < 0) {
    return { x, y: bottom };
  }
  return { x, y: top - size.height };
}

export class Tooltip implements IDisposable {
  constructor(private readonly _host: HTMLElement) {
    this._node = htmlEl('div', 'tft-tooltip');
    this._node.hidden = true;
    this._host.appendChild(this._node);
  }

  /** The tooltip element (tests and styles look for `.tft-tooltip`). */
  get node(): HTMLElement {
    return this._node;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /**
   * Show a title and rows near the pointer event, inside the host; with
   * `avoid` (the hovered element's screen box) off that box and the pointer.
   */
  show(event: MouseEvent, title: string, rows: TooltipRow[], avoid?: DOMRect): void {
    this._node.replaceChildren(htmlEl('div', 'tft-tooltip-title', title));
    for (const [label, value] of rows) {
      const row = htmlEl('div', 'tft-tooltip-row');
      row.append(htmlEl('span', 'tft-tooltip-label', `${label}: `));
      row.append(htmlEl('span', 'tft-tooltip-value', value));
      this._node.appendChild(row);
    }
    this._node.hidden = false;
    const box = this._host.getBoundingClientRect();
    const place = tooltipPlace(
      { x: event.clientX - box.left, y: event.clientY - box.top },
      { width: this._node.offsetWidth, height: this._node.offsetHeight },
      { width: box.width, height: box.height },
      avoid && { top: avoid.top - box.top, bottom: avoid.bottom - box.top }
    );
    this._node.style.left = `${place.x}px`;
    this._node.style.top = `${place.y}px`;
  }

  hide(): void {
    this._node.hidden = true;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._node.remove();
  }

  private _node: HTMLElement;
  private _isDisposed = false;
}

/**
 * A floating tooltip inside a view's canvas. It owns one absolutely
 * positioned div; lines are set as text (never HTML), so op and device
 * names from a kernel cannot inject markup.
 */
import { IDisposable } from '@lumino/disposable';

import { htmlEl } from './format';

/** One `label: value` row of a tooltip. */
export type TooltipRow = [string, string];

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

  /** Show a title and rows near the pointer event, inside the host. */
  show(event: MouseEvent, title: string, rows: TooltipRow[]): void {
    this._node.replaceChildren(htmlEl('div', 'tft-tooltip-title', title));
    for (const [label, value] of rows) {
      const row = htmlEl('div', 'tft-tooltip-row');
      row.append(htmlEl('span', 'tft-tooltip-label', `${label}: `));
      row.append(htmlEl('span', 'tft-tooltip-value', value));
      this._node.appendChild(row);
    }
    this._node.hidden = false;
    this._place(event);
  }

  /** Below-right of the pointer, or above it when there is no room below. */
  private _place(event: MouseEvent): void {
    const box = this._host.getBoundingClientRect();
    const px = event.clientX - box.left;
    const py = event.clientY - box.top;
    const width = this._node.offsetWidth;
    const height = this._node.offsetHeight;
    const x = Math.max(0, Math.min(px + 14, box.width - width - 4));
    const below = py + 14;
    const y = below + height <= box.height ? below : Math.max(0, py - height - 10);
    this._node.style.left = `${x}px`;
    this._node.style.top = `${y}px`;
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

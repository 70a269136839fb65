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
    const box = this._host.getBoundingClientRect();
    const x = Math.min(event.clientX - box.left + 14, Math.max(0, box.width - 260));
    this._node.style.left = `${Math.max(0, x)}px`;
    this._node.style.top = `${event.clientY - box.top + 14}px`;
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

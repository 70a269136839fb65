/**
 * Small pure helpers shared by the views: number formatting, colour palette
 * and SVG element creation. No state.
 */

/** SVG namespace used for every element the views create. */
export const SVG_NS = 'http://www.w3.org/2000/svg';

/** Categorical colours (colour-blind friendly first, then more). */
export const PALETTE: ReadonlyArray<string> = [
  '#4e79a7',
  '#f28e2b',
  '#59a14f',
  '#e15759',
  '#76b7b2',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac'
];

/** The colour of the n-th category; the palette repeats when exhausted. */
export function paletteColor(index: number): string {
  const n = PALETTE.length;
  return PALETTE[((index % n) + n) % n];
}

/** Bytes as a short human string: `512 B`, `4.0 KiB`, `1.5 MiB`. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !isFinite(bytes)) {
    return 'unknown';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A duration given in microseconds, in the largest unit that keeps it >= 1. */
export function formatDuration(us: number): string {
  const abs = Math.abs(us);
  if (abs >= 1e6) {
    return `${(us / 1e6).toFixed(3)} s`;
  }
  if (abs >= 1e3) {
    return `${(us / 1e3).toFixed(3)} ms`;
  }
  return `${Number(us.toFixed(3))} µs`;
}

/** Create an SVG element with the given attributes. */
export function svgEl<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: { [name: string]: string | number } = {}
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    el.setAttribute(name, String(value));
  }
  return el;
}

/** Create an HTML element with a class and optional text. */
export function htmlEl<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (className) {
    el.className = className;
  }
  if (text !== undefined) {
    el.textContent = text;
  }
  return el;
}

/**
 * Small pure helpers shared by the views: number formatting, the palette
 * (device colours, op-type greys and hatches, label colours: data generated
 * from the Python palette into palette.ts) and SVG element creation. No state.
 */
import { PALETTE_DATA } from './palette';

/** SVG namespace used for every element the views create. */
export const SVG_NS = 'http://www.w3.org/2000/svg';

/** Device colours, from the palette shared with the Python views. */
export const PALETTE: ReadonlyArray<string> = PALETTE_DATA.deviceFills;

/** The colour of the n-th device; the palette repeats when exhausted. */
export function paletteColor(index: number): string {
  const n = PALETTE.length;
  return PALETTE[((index % n) + n) % n];
}

/** The label colour of a palette fill (contrast >= 4.5, computed by the Python palette). */
export function labelColor(fill: string): string {
  const upper = fill.toUpperCase();
  const device = PALETTE_DATA.deviceFills.indexOf(upper);
  if (device >= 0) {
    return PALETTE_DATA.deviceLabels[device];
  }
  const op = PALETTE_DATA.opFills.indexOf(upper);
  return op >= 0 ? PALETTE_DATA.opLabels[op] : '#111111';
}

/** How an op type is drawn: a grey, solid or hatched; never a device colour. */
export interface IOpStyle {
  fill: string;
  hatch: string;
}

/** The style of the n-th op type: the greys, then the same greys hatched. */
export function opStyle(index: number): IOpStyle {
  const fills = PALETTE_DATA.opFills;
  const hatches = PALETTE_DATA.opHatches;
  const i = Math.max(0, index);
  return {
    fill: fills[i % fills.length],
    hatch: hatches[Math.floor(i / fills.length) % hatches.length]
  };
}

/** The SVG paint of an op style: its grey, or `url(#<prefix>-<hatch>-<grey>)`. */
export function opPaint(style: IOpStyle, prefix: string): string {
  if (style.hatch === 'solid') {
    return style.fill;
  }
  return `url(#${prefix}-${style.hatch}-${PALETTE_DATA.opFills.indexOf(style.fill)})`;
}

/** `<pattern>`s for the hatched op styles, ids `<prefix>-<hatch>-<grey index>`. */
export function hatchPatterns(prefix: string): SVGPatternElement[] {
  const out: SVGPatternElement[] = [];
  PALETTE_DATA.opFills.forEach((fill, i) => {
    const ink = PALETTE_DATA.opLabels[i];
    const stripes = svgEl('pattern', {
      id: `${prefix}-stripes-${i}`,
      width: 6,
      height: 6,
      patternUnits: 'userSpaceOnUse',
      patternTransform: 'rotate(45)'
    });
    stripes.append(
      svgEl('rect', { width: 6, height: 6, fill }),
      svgEl('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: ink, 'stroke-width': 1.5 })
    );
    const dots = svgEl('pattern', {
      id: `${prefix}-dots-${i}`,
      width: 5,
      height: 5,
      patternUnits: 'userSpaceOnUse'
    });
    dots.append(
      svgEl('rect', { width: 5, height: 5, fill }),
      svgEl('circle', { cx: 2.5, cy: 2.5, r: 1, fill: ink })
    );
    out.push(stripes, dots);
  });
  return out;
}

/** A CSS background that draws a colour key's swatch: its fill, hatched as in the SVG. */
export function swatchBackground(entry: { color: string; hatch: string }): string {
  const ink = labelColor(entry.color);
  if (entry.hatch === 'stripes') {
    return `repeating-linear-gradient(45deg, ${entry.color} 0 3px, ${ink} 3px 4px)`;
  }
  if (entry.hatch === 'dots') {
    return `radial-gradient(${ink} 1px, ${entry.color} 1.5px) 0 0 / 5px 5px`;
  }
  return entry.color;
}

/** `label` cut to `max` characters with an ellipsis in the middle (as the Python view). */
export function elide(label: string, max: number): string {
  if (label.length <= max) {
    return label;
  }
  const keep = max - 1;
  const head = Math.floor(keep / 2);
  return label.slice(0, head) + '…' + label.slice(label.length - (keep - head));
}

/** Bytes as a short human string: `512 B`, `4.0 KiB`, `1.5 MiB` (`unknown` when not a number). */
export function formatBytes(bytes: number | null | undefined, unknown = 'unknown'): string {
  if (bytes === null || bytes === undefined || !isFinite(bytes)) {
    return unknown;
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

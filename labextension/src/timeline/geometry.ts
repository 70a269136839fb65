/**
 * The timeline's pixel geometry: lanes (a transfer band on top, op bars
 * below), the label column, and where transfer arrows start and end. Pure.
 */
import { ITransferArrow } from './model';

/** Pixel geometry of the drawing. */
export const AXIS_HEIGHT = 26;
export const LANE_HEIGHT = 30;
/** The transfer band at the top of each lane; op bars sit below it. */
export const BAND_HEIGHT = 5;
const LANE_GAP = 12;
export const RIGHT_PAD = 28;
const SWATCH = 18;
const CHAR_WIDTH = 7;
/** Lane labels longer than this are elided (the full name stays in the tooltip). */
export const MAX_LABEL_CHARS = 24;

/** Width of the label column: the longest label, up to `MAX_LABEL_CHARS`. */
export function labelWidth(labels: ReadonlyArray<string>): number {
  const longest = Math.max(4, ...labels.map(l => l.length));
  return SWATCH + CHAR_WIDTH * Math.min(longest, MAX_LABEL_CHARS) + 14;
}

/** Top and bottom of a lane's op bars, in pixels. */
export function barSpan(lane: number): [number, number] {
  const top = laneTop(lane);
  return [top + BAND_HEIGHT + 3, top + LANE_HEIGHT - 2];
}

/** The middle of a lane's transfer band, in pixels. */
function bandMiddle(lane: number): number {
  return laneTop(lane) + 1 + BAND_HEIGHT / 2;
}

/** An arrow's end points in pixels: from a bar's middle or a band, to a band or a bar's top. */
export function arrowPoints(
  arrow: ITransferArrow,
  srcLane: number,
  dstLane: number,
  toX: (t: number) => number
): { x1: number; y1: number; x2: number; y2: number } {
  const [top, bottom] = barSpan(srcLane);
  const send = arrow.kind === 'send';
  return {
    x1: toX(arrow.x0_us),
    y1: send ? (top + bottom) / 2 : bandMiddle(srcLane),
    x2: toX(arrow.x1_us),
    y2: send ? bandMiddle(dstLane) : barSpan(dstLane)[0]
  };
}

/** The top of a lane, in pixels. */
export function laneTop(index: number): number {
  return AXIS_HEIGHT + index * (LANE_HEIGHT + LANE_GAP);
}

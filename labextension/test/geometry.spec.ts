import { elide, labelColor, opStyle, PALETTE } from '../src/format';
import { PALETTE_DATA } from '../src/palette';
import { tooltipPlace } from '../src/tooltip';
import { transferArrows, ITimelineData } from '../src/timeline/model';
import { arrowPoints, barSpan, labelWidth, MAX_LABEL_CHARS } from '../src/timeline/geometry';
import { GPU0, GPU1, twoLaneTimeline } from './fixtures';

function withConsumers(): ITimelineData {
  const data = twoLaneTimeline();
  data.transfers[0] = { ...data.transfers[0], src_op: 'a', consumers: ['c'] };
  return data;
}

describe('transfer arrows', () => {
  it('leave the end of the producer bar and enter each consumer bar', () => {
    const arrows = transferArrows(withConsumers());
    expect(arrows.map(a => [a.kind, a.consumer])).toEqual([
      ['send', null],
      ['deliver', 'c']
    ]);
    const [send, deliver] = arrows;
    expect(send).toMatchObject({ x0_us: 10, src: GPU0, x1_us: 10, dst: GPU1 });
    expect(deliver).toMatchObject({ x0_us: 30, src: GPU1, x1_us: 30, dst: GPU1 });
  });

  it('never start before the producer has finished', () => {
    const data = withConsumers();
    data.transfers[0] = { ...data.transfers[0], start_us: 2, end_us: 8 };
    const [send, deliver] = transferArrows(data);
    expect(send.x0_us).toBe(10);
    expect(send.x1_us).toBeGreaterThanOrEqual(send.x0_us);
    expect(deliver.x0_us).toBeGreaterThanOrEqual(10);
    expect(deliver.x1_us).toBeGreaterThanOrEqual(30);
    expect(deliver.x1_us).toBeLessThanOrEqual(90);
  });

  it('start at the transfer itself when the producer is not in the step', () => {
    const data = twoLaneTimeline();
    data.ops = data.ops.slice(1);
    expect(transferArrows(data)[0]).toMatchObject({ x0_us: 10, x1_us: 10 });
  });

  it('touch the producer bar and the consumer bar in pixels', () => {
    const toX = (t: number): number => 100 + t * 2;
    const [send, deliver] = transferArrows(withConsumers());
    const s = arrowPoints(send, 0, 1, toX);
    const [top0, bottom0] = barSpan(0);
    expect(s.x1).toBe(toX(10));
    expect(s.y1).toBeGreaterThan(top0);
    expect(s.y1).toBeLessThan(bottom0);
    const d = arrowPoints(deliver, 1, 1, toX);
    expect(d.y2).toBe(barSpan(1)[0]);
    expect(d.x2).toBeGreaterThanOrEqual(toX(30));
    expect(d.x2).toBeLessThanOrEqual(toX(90));
  });
});

describe('labels and counts', () => {
  it('elides long lane labels in the middle, keeping the device', () => {
    const label = 'worker:0/replica:0/task:0/CPU:0';
    const short = elide(label, MAX_LABEL_CHARS);
    expect(short).toHaveLength(MAX_LABEL_CHARS);
    expect(short.endsWith('CPU:0')).toBe(true);
    expect(elide('worker:0/CPU:0', MAX_LABEL_CHARS)).toBe('worker:0/CPU:0');
  });

  it('makes the label column wide enough for a cluster device name', () => {
    expect(labelWidth(['worker:0/CPU:0'])).toBeGreaterThanOrEqual(14 * 7);
  });
});

describe('palette', () => {
  it('gives every device colour the label colour the Python palette computed', () => {
    PALETTE.forEach((fill, i) => expect(labelColor(fill)).toBe(PALETTE_DATA.deviceLabels[i]));
  });

  it('draws op types in greys and hatches, never in a device colour', () => {
    const styles = Array.from({ length: 12 }, (_, i) => opStyle(i));
    expect(new Set(styles.map(s => `${s.fill}/${s.hatch}`)).size).toBe(12);
    expect(styles.some(s => PALETTE.includes(s.fill))).toBe(false);
  });
});

describe('tooltip placement', () => {
  const size = { width: 100, height: 40 };
  const host = { width: 800, height: 300 };

  it('goes below the hovered bar, off the pointer', () => {
    const place = tooltipPlace({ x: 50, y: 60 }, size, host, { top: 50, bottom: 70 });
    expect(place.y).toBeGreaterThanOrEqual(70);
    expect(place.x).toBeGreaterThan(50);
  });

  it('goes above the bar when there is no room below', () => {
    const place = tooltipPlace({ x: 50, y: 270 }, size, host, { top: 260, bottom: 280 });
    expect(place.y + size.height).toBeLessThanOrEqual(260);
  });
});

import {
  DEFAULT_TIMELINE_SETTINGS,
  fullRange,
  parseTimeline,
  parseTimelineSettings,
  TimelineModel,
  TimeScale
} from '../src/timeline/model';
import { GPU0, GPU1, twoLaneTimeline } from './fixtures';

describe('time scale', () => {
  const scale = new TimeScale([0, 100], [96, 496]);

  it('maps the domain ends onto the range ends', () => {
    expect(scale.toX(0)).toBe(96);
    expect(scale.toX(100)).toBe(496);
    expect(scale.toX(25)).toBe(196);
  });

  it('inverts toX with toTime', () => {
    expect(scale.toTime(scale.toX(37.5))).toBeCloseTo(37.5);
  });

  it('picks round ticks of 1, 2 or 5 times a power of ten', () => {
    expect(scale.ticks(5)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(new TimeScale([0.3, 1.1], [0, 100]).ticks(4)).toEqual([0.4, 0.6, 0.8, 1]);
  });
});

describe('timeline model', () => {
  it('covers the whole step and every op', () => {
    expect(fullRange(twoLaneTimeline())).toEqual([0, 100]);
    const late = { ...twoLaneTimeline(), step_us: 50 };
    expect(fullRange(late)).toEqual([0, 95]);
    expect(fullRange(parseTimeline({}))).toEqual([0, 1]);
  });

  it('keeps the lane order and adds devices seen only on ops', () => {
    const data = twoLaneTimeline();
    data.ops.push({
      name: 'x',
      op: 'Add',
      device: '/job:ps/task:0/device:CPU:0',
      start_us: 0,
      end_us: 1,
      bytes: 4
    });
    const model = new TimelineModel(data);
    expect(model.lanes.map(l => l.short)).toEqual(['GPU:0', 'GPU:1', 'CPU:0']);
    expect(model.laneIndex(GPU1)).toBe(1);
  });

  it('adds job and task to lane names that would be ambiguous', () => {
    const data = twoLaneTimeline();
    data.ops.push({
      name: 'x',
      op: 'Add',
      device: '/job:ps/task:0/device:GPU:0',
      start_us: 0,
      end_us: 1,
      bytes: 4
    });
    const model = new TimelineModel(data);
    expect(model.lanes.map(l => l.short)).toEqual([
      '/job:localhost/task:0/GPU:0',
      '/job:localhost/task:0/GPU:1',
      '/job:ps/task:0/GPU:0'
    ]);
    expect(model.laneIndex('/job:ps/task:0/device:GPU:0')).toBe(2);
  });

  it('colours ops by type, the same type the same colour', () => {
    const model = new TimelineModel(twoLaneTimeline());
    expect(model.opTypes).toEqual(['Const', 'Identity', 'MatMul']);
    expect(model.opStyle('MatMul')).not.toEqual(model.opStyle('Const'));
  });

  it('zooms to a dragged range in either direction and resets', () => {
    const model = new TimelineModel(twoLaneTimeline());
    let changes = 0;
    model.viewChanged.connect(() => changes++);
    model.zoomTo(60, 20);
    expect(model.view).toEqual([20, 60]);
    expect(model.isZoomed).toBe(true);
    model.reset();
    expect(model.view).toEqual([0, 100]);
    expect(changes).toBe(2);
  });

  it('clamps zoom to the full range and to the smallest span', () => {
    const model = new TimelineModel(twoLaneTimeline());
    model.zoomTo(-50, 500);
    expect(model.view).toEqual([0, 100]);
    model.zoomTo(40, 40);
    const [a, b] = model.view;
    expect(b - a).toBeCloseTo(model.minSpan);
    expect(a).toBeGreaterThanOrEqual(0);
  });

  it('zooms about a time that stays where it was', () => {
    const model = new TimelineModel(twoLaneTimeline());
    const before = new TimeScale(model.view, [0, 400]);
    const x = before.toX(30);
    model.zoomAt(30, 4);
    expect(model.view[1] - model.view[0]).toBeCloseTo(25);
    expect(new TimeScale(model.view, [0, 400]).toX(30)).toBeCloseTo(x);
  });

  it('shifts a zoom near the edge back inside the full range', () => {
    const model = new TimelineModel(twoLaneTimeline());
    model.zoomTo(60, 100);
    model.zoomAt(95, 0.8);
    const [a, b] = model.view;
    expect(b).toBe(100);
    expect(a).toBeCloseTo(50);
  });
});

describe('timeline settings from the kernel', () => {
  it('reads color_by and show_transfers from output metadata, defaulting the rest', () => {
    expect(parseTimelineSettings({ color_by: 'device', show_transfers: false })).toEqual({
      colorBy: 'device',
      showTransfers: false
    });
    expect(parseTimelineSettings(null)).toEqual(DEFAULT_TIMELINE_SETTINGS);
    expect(parseTimelineSettings({ color_by: 'job' })).toEqual(DEFAULT_TIMELINE_SETTINGS);
  });

  it('colours bars by lane when asked to colour by device, by grey and hatch by type', () => {
    const data = twoLaneTimeline();
    const [a, c, d] = data.ops;
    const byType = new TimelineModel(data);
    expect(byType.barStyle(c)).not.toEqual(byType.barStyle(d));
    expect(byType.colorKeys().map(k => k.label)).toEqual(['Const', 'Identity', 'MatMul']);
    const byDevice = new TimelineModel(data, { colorBy: 'device', showTransfers: true });
    expect(byDevice.barStyle(c)).toEqual(byDevice.barStyle(d));
    expect(byDevice.barStyle(a)).not.toEqual(byDevice.barStyle(c));
    expect(byDevice.colorKeys()).toEqual([
      { label: 'GPU:0', color: byDevice.barStyle(a).fill, hatch: 'solid' },
      { label: 'GPU:1', color: byDevice.barStyle(c).fill, hatch: 'solid' }
    ]);
    expect(byDevice.laneIndex(GPU0)).toBe(0);
  });
});

describe('modelled timelines', () => {
  it('keep the profile a modelled step ran on, and only a named one', () => {
    const modelled = parseTimeline({ ...twoLaneTimeline(), modelled_on: '8x V100 NVLink' });
    expect(modelled.modelled_on).toBe('8x V100 NVLink');
    expect(new TimelineModel(modelled).data.modelled_on).toBe('8x V100 NVLink');
    expect('modelled_on' in parseTimeline(twoLaneTimeline())).toBe(false);
    expect('modelled_on' in parseTimeline({ ...twoLaneTimeline(), modelled_on: '' })).toBe(false);
    expect('modelled_on' in parseTimeline({ ...twoLaneTimeline(), modelled_on: 3 })).toBe(false);
  });
});

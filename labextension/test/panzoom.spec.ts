import { ViewBox } from '../src/panzoom';

describe('view box', () => {
  it('zooming in about a point keeps that point fixed and halves the size', () => {
    const box = new ViewBox(0, 0, 200, 100);
    box.zoomAt(50, 50, 2);
    expect([box.x, box.y, box.width, box.height]).toEqual([25, 25, 100, 50]);
  });

  it('panning moves the view against the drag', () => {
    const box = new ViewBox(10, 10, 100, 100);
    box.panBy(5, -5);
    expect(box.toString()).toBe('5 15 100 100');
  });
});

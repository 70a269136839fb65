import { deviceLabels, parseDevice, shortDevice, taskOf } from '../src/devices';

describe('device names', () => {
  it('splits a full name into job, replica, task, type and index', () => {
    expect(parseDevice('/job:worker/replica:0/task:1/device:GPU:2')).toEqual({
      job: 'worker',
      replica: '0',
      task: '1',
      type: 'GPU',
      index: '2'
    });
  });

  it('reads legacy lower-case names as upper-case device types', () => {
    expect(parseDevice('/gpu:1')).toMatchObject({ type: 'GPU', index: '1', job: null });
    expect(shortDevice('/cpu:0')).toBe('CPU:0');
  });

  it('shortens to TYPE:N and names empty devices "unplaced"', () => {
    expect(shortDevice('/job:localhost/replica:0/task:0/device:CPU:0')).toBe('CPU:0');
    expect(shortDevice('')).toBe('unplaced');
    expect(shortDevice('/job:ps/task:0')).toBe('/job:ps/task:0');
  });

  it('gives the job and task part of a name', () => {
    expect(taskOf('/job:ps/replica:0/task:3/device:CPU:0')).toBe('/job:ps/task:3');
    expect(taskOf('/device:GPU:0')).toBe('');
  });
});

describe('device labels', () => {
  it('are short names when every device is in one task', () => {
    expect(
      deviceLabels(['/job:localhost/task:0/device:CPU:0', '/job:localhost/task:0/device:GPU:1'])
    ).toEqual(['CPU:0', 'GPU:1']);
  });

  it('carry job and task when devices span tasks', () => {
    expect(
      deviceLabels(['/job:ps/replica:0/task:0/device:CPU:0', '/job:worker/task:1/device:CPU:0'])
    ).toEqual(['/job:ps/task:0/CPU:0', '/job:worker/task:1/CPU:0']);
  });
});

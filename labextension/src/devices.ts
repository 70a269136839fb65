/**
 * Device names as TensorFlow writes them, parsed into their parts.
 *
 * Accepts full names (`/job:worker/replica:0/task:1/device:GPU:0`), partial
 * ones (`/device:CPU:0`, `/job:ps/task:0`) and legacy ones (`/gpu:1`). Pure
 * functions, no state.
 */

/** The parts of a device name; a part the name does not give is null. */
export interface IDeviceName {
  job: string | null;
  replica: string | null;
  task: string | null;
  type: string | null;
  index: string | null;
}

/** Parse a TensorFlow device name; an empty name gives all-null parts. */
export function parseDevice(name: string): IDeviceName {
  const parts: IDeviceName = {
    job: null,
    replica: null,
    task: null,
    type: null,
    index: null
  };
  for (const segment of (name || '').split('/')) {
    const fields = segment.split(':');
    const key = fields[0].toLowerCase();
    if (key === 'job' || key === 'replica' || key === 'task') {
      parts[key] = fields.slice(1).join(':');
    } else if (key === 'device' && fields.length >= 3) {
      parts.type = fields[1].toUpperCase();
      parts.index = fields[2];
    } else if ((key === 'cpu' || key === 'gpu') && fields.length === 2) {
      parts.type = key.toUpperCase();
      parts.index = fields[1];
    }
  }
  return parts;
}

/** `GPU:0` for any name naming a device, else the name (or `unplaced`). */
export function shortDevice(name: string): string {
  const parts = parseDevice(name);
  if (parts.type !== null) {
    return `${parts.type}:${parts.index}`;
  }
  return name || 'unplaced';
}

/** `/job:worker/task:1` (job and task only) or '' when neither is named. */
export function taskOf(name: string): string {
  const parts = parseDevice(name);
  const job = parts.job !== null ? `/job:${parts.job}` : '';
  const task = parts.task !== null ? `/task:${parts.task}` : '';
  return job + task;
}

/**
 * Labels that tell devices apart: `GPU:0` when all devices are in one task, else
 * `/job:worker/task:1/GPU:0`.
 */
export function deviceLabels(names: ReadonlyArray<string>): string[] {
  const tasks = new Set(names.map(taskOf));
  if (tasks.size <= 1) {
    return names.map(shortDevice);
  }
  return names.map(name => {
    const task = taskOf(name);
    return task ? `${task}/${shortDevice(name)}` : shortDevice(name);
  });
}

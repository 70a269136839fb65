/** Small placed graphs and timelines shared by the model tests. */
import { IPlacementData } from '../src/placement/model';
import { ITimelineData } from '../src/timeline/model';

export const GPU0 = '/job:localhost/replica:0/task:0/device:GPU:0';
export const GPU1 = '/job:localhost/replica:0/task:0/device:GPU:1';
export const PS_CPU = '/job:ps/replica:0/task:0/device:CPU:0';
export const WORKER1_CPU = '/job:worker/replica:0/task:1/device:CPU:0';

/** a, b on GPU:0 feed c on GPU:1; c feeds d on GPU:1. */
export function twoGpuGraph(): IPlacementData {
  return {
    nodes: [
      { name: 'a', type: 'Const', requested_device: '/device:GPU:0', assigned_device: GPU0 },
      { name: 'b', type: 'Const', requested_device: '/device:GPU:0', assigned_device: GPU0 },
      { name: 'c', type: 'MatMul', requested_device: '/device:GPU:1', assigned_device: GPU1 },
      { name: 'd', type: 'Identity', requested_device: '', assigned_device: GPU1 }
    ],
    edges: [
      { src: 'a', dst: 'c', cross_device: true, bytes: 64 },
      { src: 'b', dst: 'c', cross_device: true, bytes: 64 },
      { src: 'c', dst: 'd', cross_device: false, bytes: 16 }
    ],
    devices: [
      { name: GPU0, device_type: 'GPU', description: 'virtual GPU backed by the CPU' },
      { name: GPU1, device_type: 'GPU', description: 'virtual GPU backed by the CPU' }
    ]
  };
}

/** A variable on the parameter server read by a worker's op. */
export function psWorkerGraph(): IPlacementData {
  return {
    nodes: [
      {
        name: 'v',
        type: 'VariableV2',
        requested_device: '/job:ps/task:0',
        assigned_device: PS_CPU
      },
      {
        name: 'v/read',
        type: 'Identity',
        requested_device: '/job:ps/task:0',
        assigned_device: PS_CPU
      },
      {
        name: 'y',
        type: 'Mul',
        requested_device: '/job:worker/task:1',
        assigned_device: WORKER1_CPU
      }
    ],
    edges: [
      { src: 'v', dst: 'v/read', cross_device: false, bytes: null },
      { src: 'v/read', dst: 'y', cross_device: true, bytes: 400 }
    ],
    devices: [{ name: PS_CPU, device_type: 'CPU', description: '' }]
  };
}

export function twoLaneTimeline(): ITimelineData {
  return {
    devices: [
      { name: GPU0, short: 'GPU:0' },
      { name: GPU1, short: 'GPU:1' }
    ],
    ops: [
      { name: 'a', op: 'Const', device: GPU0, start_us: 0, end_us: 10, bytes: 64 },
      { name: 'c', op: 'MatMul', device: GPU1, start_us: 30, end_us: 90, bytes: 16 },
      { name: 'd', op: 'Identity', device: GPU1, start_us: 90, end_us: 95, bytes: 16 }
    ],
    transfers: [
      { src_device: GPU0, dst_device: GPU1, tensor: 'a:0', start_us: 10, end_us: 30, bytes: 64 }
    ],
    step_us: 100
  };
}

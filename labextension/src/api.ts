/**
 * Calls to the tfteach server extension (`/tfteach/api/...`) and the shapes
 * of its answers. The server's own auth and XSRF handling come from
 * ServerConnection; a failed call rejects with the server's message.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/**
 * A task's state: `starting` until its process first answers, then `alive`
 * while it answers, `unreachable` when it stops answering, `stopped` when its
 * process is gone.
 */
export type TaskState = 'starting' | 'alive' | 'unreachable' | 'stopped';

/** One task of a LocalCluster, with its health as the server last saw it. */
export interface ITaskInfo {
  job: string;
  task: number;
  address: string;
  pid: number | null;
  alive: boolean;
  state: TaskState;
  devices: string[];
  last_step: number | null;
  error?: string | null;
}

/** A LocalCluster as listed by the server (never with its token). */
export interface IClusterInfo {
  id: string;
  owner_pid: number | null;
  owner_uid: number | null;
  created: number | null;
  /** Which runtime runs the tasks: tfteach's or TensorFlow's own servers. */
  backend: 'tfteach' | 'tensorflow';
  /** The modelled link between its tasks (`LocalCluster(network=...)`); null: loopback. */
  network?: string | null;
  /** The notebook whose kernel started the cluster (null: not a kernel of this server). */
  notebook: string | null;
  mine: boolean;
  tasks: ITaskInfo[];
}

export interface IClusterList {
  clusters: IClusterInfo[];
  message: string | null;
}

export interface ILessonsInfo {
  dir: string | null;
  first: string | null;
  message: string;
}

/** Fetch `/tfteach/api/<path>` and return its JSON body. */
export async function requestAPI<T>(path: string, init: RequestInit = {}): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'tfteach', 'api', path);
  const response = await ServerConnection.makeRequest(url, init, settings);
  const text = await response.text();
  const body = text ? JSON.parse(text) : {};
  if (!response.ok) {
    throw new ServerConnection.ResponseError(response, body.message || text);
  }
  return body as T;
}

/** The path of one task's action endpoint. */
export function taskPath(
  clusterId: string,
  job: string,
  task: number,
  action: 'kill' | 'restart'
): string {
  const enc = encodeURIComponent;
  return `clusters/${enc(clusterId)}/tasks/${enc(job)}/${task}/${action}`;
}

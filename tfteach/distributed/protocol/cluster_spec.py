"""``ClusterSpec``: the jobs of a cluster and the address of every task, as in TF 1.x.

State: ``_cluster_spec = {job_name: {task_index: "host:port"}}``, jobs in the order given.
Invariants: job names and addresses are ``str`` (``bytes`` are decoded); task indices are
``int``; the object is never mutated after construction. Errors and their texts follow
``tensorflow/python/training/server_lib.py``.
"""
from __future__ import annotations

from typing import Any, Mapping

_BAD_CLUSTER = ("`cluster` must be a dictionary mapping one or more job names to lists of "
                "network addresses, or a `ClusterDef` protocol buffer")


class ClusterSpec:
    """Represents a cluster as a set of "tasks", organized into "jobs".

    ``ClusterSpec({"ps": ["ps0:2222"], "worker": {1: "w1:2222", 3: "w3:2222"}})``: a job maps
    to a list of addresses (task index = position) or to a sparse ``{index: address}`` dict.
    """

    def __init__(self, cluster: Any) -> None:
        if isinstance(cluster, ClusterSpec):
            self._cluster_spec = {job: dict(tasks) for job, tasks in
                                  cluster._cluster_spec.items()}
        elif isinstance(cluster, Mapping):
            self._cluster_spec = _normalized({job: _tasks_of(job, tasks)
                                              for job, tasks in cluster.items()})
        elif _is_cluster_def(cluster):
            self._cluster_spec = {job.name: {int(i): addr for i, addr in job.tasks.items()}
                                  for job in cluster.job}
        else:
            raise TypeError(_BAD_CLUSTER)

    def __bool__(self) -> bool:
        return bool(self._cluster_spec)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClusterSpec) and self._cluster_spec == other._cluster_spec

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # mutable-looking value type, as in TF

    def __str__(self) -> str:
        as_dict = self.as_dict()
        items = [f"{job!r}: {as_dict[job]!r}" for job in sorted(as_dict)]
        return "ClusterSpec({" + ", ".join(items) + "})"

    __repr__ = __str__

    def as_dict(self) -> dict[str, Any]:
        """``{job: [addresses]}``, or ``{job: {index: address}}`` for a sparse job."""
        result: dict[str, Any] = {}
        for job in self.jobs:
            indices = self.task_indices(job)
            if not indices:
                result[job] = {}
            elif max(indices) + 1 == len(indices):
                result[job] = self.job_tasks(job)
            else:
                result[job] = {i: self.task_address(job, i) for i in indices}
        return result

    def as_cluster_def(self):
        """This cluster as a ``ClusterDef`` protocol buffer (jobs sorted by name)."""
        from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb

        cluster_def = pb.ClusterDef()
        for job in sorted(self._cluster_spec):
            job_def = cluster_def.job.add(name=job)
            for index, address in self._cluster_spec[job].items():
                job_def.tasks[index] = address
        return cluster_def

    @property
    def jobs(self) -> list[str]:
        """The job names, in the order given."""
        return list(self._cluster_spec)

    def num_tasks(self, job_name: str) -> int:
        """The number of tasks defined in ``job_name``."""
        return len(self._job(job_name))

    def task_indices(self, job_name: str) -> list[int]:
        """The sorted task indices of ``job_name``."""
        return sorted(self._job(job_name))

    def task_address(self, job_name: str, task_index: int) -> str:
        """The address of task ``task_index`` of ``job_name``."""
        job = self._job(job_name)
        try:
            return job[task_index]
        except KeyError:
            raise ValueError(f"No task with index {task_index!r} in job {job_name!r}") from None

    def job_tasks(self, job_name: str) -> list[str | None]:
        """Addresses of ``job_name`` by index, with ``None`` where an index is missing."""
        job = self._job(job_name)
        tasks: list[str | None] = [None] * (max(job) + 1 if job else 0)
        for index, address in job.items():
            tasks[index] = address
        return tasks

    def _job(self, job_name: str) -> dict[int, str]:
        try:
            return self._cluster_spec[job_name]
        except KeyError:
            raise ValueError(f"No such job in cluster: {job_name!r}") from None


def task_name(job_name: str, task_index: int) -> str:
    """TF's full task name: ``/job:J/replica:0/task:T``."""
    return f"/job:{job_name}/replica:0/task:{task_index}"


def _tasks_of(job_name: Any, tasks: Any) -> dict[Any, Any]:
    if isinstance(tasks, (list, tuple)):
        return dict(enumerate(tasks))
    if isinstance(tasks, Mapping):
        return dict(tasks)
    raise TypeError(f"The tasks for job {job_name!r} must be a list or a dictionary "
                    "from integers to strings.")


def _normalized(cluster_spec: dict[Any, dict[Any, Any]]) -> dict[str, dict[int, str]]:
    """Check names, indices and addresses; decode ``bytes`` names and addresses to ``str``."""
    result: dict[str, dict[int, str]] = {}
    for job_name, tasks in cluster_spec.items():
        if not isinstance(job_name, (str, bytes)):
            raise TypeError(f"Job name {job_name!r} must be bytes or unicode")
        job = result.setdefault(_as_str(job_name), {})
        for index, address in tasks.items():
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(f"Task index {index!r} must be an integer")
            if not isinstance(address, (str, bytes)):
                raise TypeError(f"Task address {address!r} must be bytes or unicode")
            job[index] = _as_str(address)
    return result


def _as_str(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _is_cluster_def(value: Any) -> bool:
    if type(value).__name__ != "ClusterDef":
        return False
    from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb

    return isinstance(value, pb.ClusterDef)

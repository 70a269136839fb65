"""Session and run configuration: ConfigProto, GPUOptions, RunOptions, RunMetadata, StepStats.

Plain classes with TF 1.x's field names and defaults. They convert to and from plain dicts
(``to_dict``/``from_dict``) so a cluster can ship them over the wire as JSON.

Like protobuf messages they answer ``HasField(name)`` and ``Clear()``: a field holding a
message (``RunMetadata.step_stats``, ``ConfigProto.gpu_options``) is present once it was
assigned or differs from its defaults; asking about a list, dict or scalar field raises
``ValueError`` as proto3 does ("does not have presence"). ``RunMetadata.partition_graphs``
holds one ``GraphDef`` per device partition of a step (``tfteach.framework.node_def``'s IR).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


class _Message:
    """Protobuf-style field presence for the dataclasses below."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(self.__dict__.get(name), _Message):
            self.__dict__.setdefault("_assigned", set()).add(name)
        object.__setattr__(self, name, value)

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        """Whether message field ``name`` is set (assigned, or changed from its defaults)."""
        kind = type(self).__name__
        if name not in {f.name for f in fields(self)}:
            raise ValueError(f'Protocol message {kind} has no "{name}" field.')
        value = getattr(self, name)
        if not isinstance(value, _Message):
            raise ValueError(f"Field tensorflow.{kind}.{name} does not have presence.")
        return name in self.__dict__.get("_assigned", ()) or value != type(value)()

    def Clear(self) -> None:  # noqa: N802 (protobuf's name)
        """Every field back to its default; no message field present."""
        fresh = type(self)()
        self.__dict__.clear()
        self.__dict__.update(fresh.__dict__)


@dataclass
class GPUOptions(_Message):
    per_process_gpu_memory_fraction: float = 0.0
    allow_growth: bool = False
    visible_device_list: str = ""


@dataclass
class GraphOptions(_Message):
    place_pruned_graph: bool = False


@dataclass
class ConfigProto(_Message):
    """TF's session config (the fields tfteach honours)."""

    device_count: dict = field(default_factory=dict)
    log_device_placement: bool = False
    allow_soft_placement: bool = False
    gpu_options: GPUOptions = field(default_factory=GPUOptions)
    device_filters: list = field(default_factory=list)
    operation_timeout_in_ms: int = 0
    inter_op_parallelism_threads: int = 0
    intra_op_parallelism_threads: int = 0
    graph_options: GraphOptions = field(default_factory=GraphOptions)
    isolate_session_state: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.gpu_options, dict):
            self.gpu_options = GPUOptions(**self.gpu_options)
        if isinstance(self.graph_options, dict):
            self.graph_options = GraphOptions(**self.graph_options)
        self.device_filters = list(self.device_filters)
        self.device_count = dict(self.device_count)

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict | None) -> "ConfigProto":
        return ConfigProto(**(d or {}))

    def CopyFrom(self, other: "ConfigProto") -> None:  # noqa: N802 (TF's name)
        self.__dict__.update(ConfigProto.from_dict(other.to_dict()).__dict__)


@dataclass
class RunOptions(_Message):
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    trace_level: int = 0
    timeout_in_ms: int = 0
    output_partition_graphs: bool = False


@dataclass
class NodeExecStats(_Message):
    """One op's execution on one device (times in microseconds since the epoch)."""

    node_name: str = ""
    op: str = ""
    all_start_micros: int = 0
    all_end_rel_micros: int = 0
    output_bytes: int = 0
    thread_id: int = 0
    timeline_label: str = ""
    op_end_rel_micros: int = 0


@dataclass
class TransferStats(_Message):
    """One tensor crossing from one device (or task) to another."""

    tensor_name: str = ""
    src_device: str = ""
    dst_device: str = ""
    src_op: str = ""
    dst_op: str = ""
    all_start_micros: int = 0
    all_end_rel_micros: int = 0
    bytes: int = 0


@dataclass
class DeviceStepStats(_Message):
    device: str = ""
    node_stats: list = field(default_factory=list)


@dataclass
class StepStats(_Message):
    dev_stats: list = field(default_factory=list)
    transfers: list = field(default_factory=list)

    def device_stats(self, device: str) -> DeviceStepStats:
        for d in self.dev_stats:
            if d.device == device:
                return d
        d = DeviceStepStats(device)
        self.dev_stats.append(d)
        return d

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict) -> "StepStats":
        return StepStats(
            [DeviceStepStats(x["device"], [NodeExecStats(**n) for n in x["node_stats"]])
             for x in d.get("dev_stats", [])],
            [TransferStats(**t) for t in d.get("transfers", [])])


@dataclass
class RunMetadata(_Message):
    step_stats: StepStats = field(default_factory=StepStats)
    partition_graphs: list = field(default_factory=list)
    placement: dict = field(default_factory=dict)

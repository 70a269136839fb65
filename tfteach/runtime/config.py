"""Session and run configuration: ConfigProto, GPUOptions, RunOptions, RunMetadata, StepStats.

Plain classes with TF 1.x's field names and defaults. They convert to and from plain dicts
(``to_dict``/``from_dict``) so a cluster can ship them over the wire as JSON.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class GPUOptions:
    per_process_gpu_memory_fraction: float = 0.0
    allow_growth: bool = False
    visible_device_list: str = ""


@dataclass
class GraphOptions:
    place_pruned_graph: bool = False


@dataclass
class ConfigProto:
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
class RunOptions:
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    trace_level: int = 0
    timeout_in_ms: int = 0
    output_partition_graphs: bool = False


@dataclass
class NodeExecStats:
    """One op's execution on one device (times in microseconds since the epoch)."""

    node_name: str
    op: str
    all_start_micros: int
    all_end_rel_micros: int
    output_bytes: int = 0
    thread_id: int = 0
    timeline_label: str = ""
    op_end_rel_micros: int = 0


@dataclass
class TransferStats:
    """One tensor crossing from one device (or task) to another."""

    tensor_name: str
    src_device: str
    dst_device: str
    src_op: str
    dst_op: str
    all_start_micros: int
    all_end_rel_micros: int
    bytes: int


@dataclass
class DeviceStepStats:
    device: str
    node_stats: list = field(default_factory=list)


@dataclass
class StepStats:
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
class RunMetadata:
    step_stats: StepStats = field(default_factory=StepStats)
    partition_graphs: list = field(default_factory=list)
    placement: dict = field(default_factory=dict)

"""Hardware profiles: what a modelled machine's devices and links can do.

A ``MachineProfile`` is one or more identical hosts, each with one CPU device and
``gpus_per_host`` GPUs, joined by links:

- ``host_link``: CPU <-> GPU on one host (PCIe; each GPU has its own lanes);
- ``gpu_link``: GPU <-> GPU on one host (NVLink, or PCIe through the host: then
  ``gpu_link_via_host`` and a copy holds both GPUs' PCIe lanes);
- ``loopback``: task <-> task on the same host (shared memory or loopback TCP);
- ``network``: task <-> task on different hosts (Ethernet, InfiniBand).

A ``DeviceProfile`` gives peak FLOP/s per dtype, memory bandwidth, the fixed cost of one
kernel (``launch_s``) and of one op that computes nothing (``idle_op_s``: Const, Identity,
NoOp...), and memory size. A ``LinkProfile`` gives bandwidth per direction and latency.

The shipped profiles (``SHIPPED``) use the vendors' published peak figures, each written
beside the number with its source; figures that no datasheet gives (kernel launch and
executor overheads) are marked as estimates. Profiles are frozen dataclasses: derive a
variant with ``dataclasses.replace``. ``to_dict``/``from_dict`` and ``load``/``save`` keep
them as JSON files (``calibrate --save``).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tfteach.errors import NotFoundError
from tfteach.i18n import tr

GB = 1e9
TFLOPS = 1e12
GBIT = 1e9 / 8          # bytes/s of one Gbit/s


@dataclass(frozen=True)
class DeviceProfile:
    """One device: peak FLOP/s per dtype name, bytes/s, fixed costs, memory."""

    name: str
    flops: dict = field(default_factory=dict)      # dtype name -> peak FLOP/s
    mem_bandwidth: float = 100 * GB               # bytes/s
    launch_s: float = 5e-6                          # fixed cost of one kernel
    idle_op_s: float = 1e-6                         # an op that computes nothing
    memory_bytes: int = 16 * 10**9
    # Optional per-op-type fixed costs (an executor whose kernels differ in cost, as
    # tfteach's own Python kernels do); op types missing here cost ``launch_s``.
    op_launch_s: dict = field(default_factory=dict)
    # Element-wise kernels' FLOP/s where they fall short of the matrix peak (a CPU's NumPy
    # loops; 0: the peak), and a cache: an op whose inputs and outputs fit in
    # ``cache_bytes`` moves them at ``cache_bandwidth`` (0: no cache modelled).
    vector_flops: float = 0.0
    cache_bytes: int = 0
    cache_bandwidth: float = 0.0

    def peak(self, dtype: str, matrix: bool = True) -> float:
        """Peak FLOP/s for ``dtype`` (float32's figure for a dtype the profile lacks); for
        element-wise work at most ``vector_flops``."""
        top = self.flops.get(dtype) or self.flops.get("float32") or 1e9
        return top if matrix or not self.vector_flops else min(top, self.vector_flops)

    def bandwidth(self, nbytes: int) -> float:
        """Bytes/s for an op that moves ``nbytes`` in all."""
        if self.cache_bandwidth and nbytes <= self.cache_bytes:
            return self.cache_bandwidth
        return self.mem_bandwidth

    def launch(self, op_type: str) -> float:
        return self.op_launch_s.get(op_type, self.launch_s)


@dataclass(frozen=True)
class LinkProfile:
    """A link: bytes/s in each direction, and latency per transfer."""

    name: str
    bandwidth: float
    latency_s: float

    def time(self, nbytes: int) -> float:
        """Seconds to move ``nbytes`` over this link."""
        return self.latency_s + nbytes / self.bandwidth


@dataclass(frozen=True)
class MachineProfile:
    """One or more identical hosts: devices, links and the step's fixed cost."""

    name: str
    description: str
    cpu: DeviceProfile
    gpu: DeviceProfile | None
    gpus_per_host: int
    host_link: LinkProfile
    gpu_link: LinkProfile
    loopback: LinkProfile
    network: LinkProfile
    hosts: int = 1
    step_overhead_s: float = 30e-6      # a Session.run's own cost before the first op
    shares_host_memory: bool = False    # GPUs in host memory: feeds and fetches not copied
    gpu_link_via_host: bool = False     # GPU copies cross both GPUs' PCIe lanes (no NVLink)
    sources: tuple = ()

    def device(self, device_type: str) -> DeviceProfile:
        """The profile of a device type ("GPU" or "CPU")."""
        if device_type == "GPU" and self.gpu is not None:
            return self.gpu
        return self.cpu

    def to_dict(self) -> dict:
        d = asdict(self)
        d["sources"] = list(self.sources)
        return d

    @staticmethod
    def from_dict(d: dict) -> "MachineProfile":
        d = dict(d)
        for key in ("cpu", "gpu"):
            if d.get(key) is not None:
                d[key] = DeviceProfile(**d[key])
        for key in ("host_link", "gpu_link", "loopback", "network"):
            d[key] = LinkProfile(**d[key])
        d["sources"] = tuple(d.get("sources", ()))
        return MachineProfile(**d)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    def text(self) -> str:
        """A readable description: devices, links and where the figures come from."""
        lines = [f"{self.name}: {self.description}"]
        lines.append(f"  hosts: {self.hosts}, GPUs per host: {self.gpus_per_host}, "
                     f"step overhead {self.step_overhead_s * 1e6:.1f} us")
        for dev in (self.gpu, self.cpu):
            if dev is not None:
                peaks = ", ".join(f"{k} {v / TFLOPS:.3g}" for k, v in dev.flops.items())
                cache = (f" ({dev.cache_bandwidth / GB:.4g} GB/s within "
                         f"{dev.cache_bytes >> 20} MiB)" if dev.cache_bandwidth else "")
                vector = (f", element-wise {dev.vector_flops / TFLOPS:.3g}"
                          if dev.vector_flops else "")
                lines.append(f"  {dev.name}: peak TFLOP/s {peaks}{vector}; memory "
                             f"{dev.mem_bandwidth / GB:.4g} GB/s{cache}, "
                             f"{dev.memory_bytes / GB:.0f} GB; launch "
                             f"{dev.launch_s * 1e6:.2f} us, idle op {dev.idle_op_s * 1e6:.2f} us")
        for role in ("host_link", "gpu_link", "loopback", "network"):
            link = getattr(self, role)
            lines.append(f"  {role:9s} {link.name}: {link.bandwidth / GB:.4g} GB/s per "
                         f"direction, latency {link.latency_s * 1e6:.3g} us")
        lines += [f"  source: {s}" for s in self.sources]
        return "\n".join(lines)


def load(path: str | Path) -> MachineProfile:
    """A profile from a JSON file written by ``MachineProfile.save``."""
    return MachineProfile.from_dict(json.loads(Path(path).read_text()))


# ---- shipped profiles ------------------------------------------------------------------------
# NVIDIA Tesla V100 GPU Accelerator datasheet (2018), SXM2 column: 15.7 TFLOP/s single
# precision, 7.8 double, 125 tensor (fp16); HBM2 900 GB/s, 16 GB (32 GB model too);
# NVLink 2.0 300 GB/s total per GPU (6 links x 25 GB/s per direction).
# PCIe column: 14 TFLOP/s single, 7 double, 112 tensor; 900 GB/s; 16 GB.
# Kernel launch (~5 us) and TF executor per-node costs (~1 us) are estimates of the order
# usually measured with TF 1.x on such GPUs, not datasheet figures.
V100_SXM2 = DeviceProfile("Tesla V100-SXM2-16GB",
                          {"float32": 15.7 * TFLOPS, "float64": 7.8 * TFLOPS,
                           "float16": 125 * TFLOPS},
                          mem_bandwidth=900 * GB, launch_s=5e-6, idle_op_s=1e-6,
                          memory_bytes=16 * 10**9)
V100_PCIE = replace(V100_SXM2, name="Tesla V100-PCIE-16GB",
                    flops={"float32": 14 * TFLOPS, "float64": 7 * TFLOPS,
                           "float16": 112 * TFLOPS})
# NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM: FP32 67 TFLOP/s, FP64 34,
# FP16/BF16 tensor 1,979 with sparsity (989 dense); 141 GB HBM3e at 4.8 TB/s;
# NVLink 900 GB/s (total, both directions), PCIe Gen5 128 GB/s (both directions).
H200_SXM = DeviceProfile("H200 SXM 141GB",
                         {"float32": 67 * TFLOPS, "float64": 34 * TFLOPS,
                          "float16": 989 * TFLOPS},
                         mem_bandwidth=4800 * GB, launch_s=4e-6, idle_op_s=1e-6,
                         memory_bytes=141 * 10**9)
# Host CPUs: Intel Xeon E5-2698 v4 (DGX-1), 20 cores x 2.2 GHz x 32 fp32 FLOP/cycle (AVX2,
# two FMA units) = 1.4 TFLOP/s; 4 channels DDR4-2400 = 76.8 GB/s (Intel ARK).
XEON_E5_2698V4 = DeviceProfile("Xeon E5-2698 v4 (20 cores)",
                               {"float32": 1.4 * TFLOPS, "float64": 0.7 * TFLOPS},
                               mem_bandwidth=76.8 * GB, launch_s=2e-6, idle_op_s=0.5e-6,
                               memory_bytes=256 * 10**9)
# Intel Xeon Platinum 8480C (DGX H100/H200), 56 cores x 2.0 GHz x 64 fp32 FLOP/cycle
# (AVX-512, two FMA units) = 7.2 TFLOP/s; 8 channels DDR5-4800 = 307 GB/s (Intel ARK).
XEON_8480C = DeviceProfile("Xeon Platinum 8480C (56 cores)",
                           {"float32": 7.2 * TFLOPS, "float64": 3.6 * TFLOPS},
                           mem_bandwidth=307 * GB, launch_s=2e-6, idle_op_s=0.5e-6,
                           memory_bytes=1024 * 10**9)

# PCI-SIG: PCIe 3.0 x16 is 8 GT/s x 16 lanes, 128b/130b coding: 15.75 GB/s per direction;
# PCIe 5.0 x16: 63 GB/s per direction (128 GB/s both ways, H200 datasheet). A cudaMemcpy's
# own latency is about 10 us (estimate).
PCIE3 = LinkProfile("PCIe 3.0 x16", 15.75 * GB, 10e-6)
PCIE5 = LinkProfile("PCIe 5.0 x16", 63 * GB, 10e-6)
# NVLink 2.0: 25 GB/s per link per direction; in a DGX-1 (V100) hybrid cube-mesh a GPU's
# six links join it to four others, some pairs by two links: modelled as 50 GB/s per
# direction between any two GPUs (a simplification: some pairs have one link, or none).
NVLINK2_PAIR = LinkProfile("NVLink 2.0 (2 links)", 50 * GB, 5e-6)
# NVLink 4 through NVSwitch (HGX H200): 900 GB/s per GPU both ways, 450 GB/s per direction
# to any other GPU.
NVLINK4_SWITCH = LinkProfile("NVLink 4 + NVSwitch", 450 * GB, 3e-6)
# Two PCIe GPUs copy through the host: each direction crosses both GPUs' x16 links.
PCIE3_PEER = LinkProfile("PCIe 3.0 x16 (through the host)", 15.75 * GB, 15e-6)
SHM = LinkProfile("shared memory", 10 * GB, 20e-6)
# IEEE 802.3 line rates (1, 10, 25, 100 Gbit/s), bytes = bits / 8; TCP latency across a
# switch is tens of microseconds (estimate). InfiniBand EDR: 100 Gbit/s, about 1 us (the
# InfiniBand Trade Association's figures).
ETH_1G = LinkProfile("1 Gbit Ethernet", 1 * GBIT, 50e-6)
ETH_10G = LinkProfile("10 Gbit Ethernet", 10 * GBIT, 30e-6)
ETH_25G = LinkProfile("25 Gbit Ethernet", 25 * GBIT, 20e-6)
ETH_100G = LinkProfile("100 Gbit Ethernet", 100 * GBIT, 10e-6)
IB_EDR = LinkProfile("InfiniBand EDR (100 Gbit)", 100 * GBIT, 1.5e-6)

_V100_SOURCES = ("NVIDIA Tesla V100 GPU Accelerator datasheet (2018)",
                 "PCI-SIG PCIe 3.0 base specification (8 GT/s, 128b/130b)",
                 "Intel ARK: Xeon E5-2698 v4", "IEEE 802.3 Ethernet line rates")


def _v100_host(name: str, description: str, gpu: DeviceProfile, n: int, gpu_link: LinkProfile,
               network: LinkProfile = ETH_10G, hosts: int = 1) -> MachineProfile:
    return MachineProfile(name, description, XEON_E5_2698V4, gpu, n, PCIE3, gpu_link, SHM,
                          network, hosts=hosts, sources=_V100_SOURCES,
                          gpu_link_via_host=gpu_link is PCIE3_PEER)


SHIPPED: dict[str, MachineProfile] = {p.name: p for p in [
    _v100_host("2x V100 PCIe", "two Tesla V100 PCIe cards in one host; GPU copies cross PCIe 3.0",
               V100_PCIE, 2, PCIE3_PEER),
    _v100_host("8x V100 NVLink", "a DGX-1-like host: eight V100 SXM2 joined by NVLink 2.0",
               V100_SXM2, 8, NVLINK2_PAIR),
    MachineProfile("H200", "one H200 SXM on a Xeon 8480C host, PCIe 5.0", XEON_8480C, H200_SXM,
                   1, PCIE5, NVLINK4_SWITCH, SHM, ETH_100G,
                   sources=("NVIDIA H200 Tensor Core GPU datasheet (2024)",
                            "Intel ARK: Xeon Platinum 8480C")),
    MachineProfile("8x H200 NVSwitch", "an HGX H200 host: eight H200 SXM, NVLink 4 + NVSwitch",
                   XEON_8480C, H200_SXM, 8, PCIE5, NVLINK4_SWITCH, SHM, ETH_100G,
                   sources=("NVIDIA H200 Tensor Core GPU datasheet (2024)",
                            "Intel ARK: Xeon Platinum 8480C")),
    _v100_host("2 hosts x 2 V100, 1 Gbit", "two hosts of two V100 PCIe each, 1 Gbit Ethernet",
               V100_PCIE, 2, PCIE3_PEER, ETH_1G, 2),
    _v100_host("2 hosts x 2 V100, 10 Gbit", "two hosts of two V100 PCIe each, 10 Gbit Ethernet",
               V100_PCIE, 2, PCIE3_PEER, ETH_10G, 2),
    _v100_host("2 hosts x 2 V100, 100 Gbit", "two hosts of two V100 PCIe each, 100 Gbit Ethernet",
               V100_PCIE, 2, PCIE3_PEER, ETH_100G, 2),
    _v100_host("4 hosts x 8 V100, InfiniBand", "four DGX-1-like hosts on InfiniBand EDR",
               V100_SXM2, 8, NVLINK2_PAIR, IB_EDR, 4),
]}


def get(name: Any) -> MachineProfile:
    """A shipped profile by name, a profile from a JSON file's path, or ``name`` itself if it
    is already a profile; NotFoundError with the shipped names otherwise."""
    if isinstance(name, MachineProfile):
        return name
    if name in SHIPPED:
        return SHIPPED[name]
    if Path(str(name)).is_file():
        return load(name)
    raise NotFoundError(f"No hardware profile named {name!r}. Shipped profiles: "
                        f"{', '.join(SHIPPED)}.",
                        hint=tr("pick a shipped profile, pass a profile file written by "
                                "`python -m tfteach.hardware calibrate --save FILE`, or "
                                "use calibrate() for this machine."))

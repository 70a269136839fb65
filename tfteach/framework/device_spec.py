"""Device names: parsing, merging and printing, as TF 1.x does it.

A ``DeviceSpec`` has five optional fields: job, replica, task, device_type, device_index.
``from_string`` accepts the legacy (``/gpu:1``) and full
(``/job:w/replica:0/task:1/device:GPU:1``) forms; ``*`` leaves a field unset. ``to_string``
prints the canonical form in the fixed order job, replica, task, device, with ``:*`` for a
type without an index. ``merge_from`` lets the other spec's set fields win.

Parsed specs are cached: parsing is on the hot path of graph building.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from tfteach.errors import with_hint
from tfteach.i18n import tr

_JOB_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class DeviceSpec:
    """A (partial) device specification, immutable."""

    job: str | None = None
    replica: int | None = None
    task: int | None = None
    device_type: str | None = None
    device_index: int | None = None

    @staticmethod
    def from_string(spec: Any) -> "DeviceSpec":
        """Parse a device string (or return a DeviceSpec unchanged)."""
        if isinstance(spec, DeviceSpec):
            return spec
        if spec is None:
            return _EMPTY
        return _parse(str(spec))

    def merge_from(self, other: "DeviceSpec") -> "DeviceSpec":
        """A copy of self where every field set in ``other`` replaces ours."""
        return DeviceSpec(
            other.job if other.job is not None else self.job,
            other.replica if other.replica is not None else self.replica,
            other.task if other.task is not None else self.task,
            other.device_type if other.device_type is not None else self.device_type,
            other.device_index if other.device_index is not None else self.device_index,
        )

    def replace(self, **fields: Any) -> "DeviceSpec":
        return replace(self, **fields)

    def to_string(self) -> str:
        return _to_string(self)

    def __str__(self) -> str:
        return self.to_string()

    @property
    def is_empty(self) -> bool:
        return self == _EMPTY

    def matches(self, full: "DeviceSpec") -> bool:
        """True when every field set here equals that field of ``full``."""
        return all(mine is None or mine == theirs for mine, theirs in zip(
            (self.job, self.replica, self.task, self.device_type, self.device_index),
            (full.job, full.replica, full.task, full.device_type, full.device_index), strict=True))

    def compatible(self, other: "DeviceSpec") -> bool:
        """True when no field is set on both sides with different values."""
        return all(a is None or b is None or a == b for a, b in zip(
            (self.job, self.replica, self.task, self.device_type, self.device_index),
            (other.job, other.replica, other.task, other.device_type, other.device_index),
            strict=True))


_EMPTY = DeviceSpec()


def _bad(part: str, spec: str) -> ValueError:
    return ValueError(with_hint(f"Unknown attribute: '{part}' in '{spec}'", tr(
        "a device looks like '/cpu:0', '/gpu:1', '/device:GPU:1' or "
        "'/job:worker/replica:0/task:1/device:CPU:0'.")))


def _index(value: str, part: str, spec: str) -> int | None:
    if value == "*":
        return None
    if not value.isdigit():
        raise _bad(part, spec)
    return int(value)


@lru_cache(maxsize=4096)
def _parse(spec: str) -> DeviceSpec:
    fields: dict[str, Any] = {}
    for part in spec.split("/"):
        if not part:
            continue
        bits = part.split(":")
        key = bits[0]
        if key == "job" and len(bits) == 2 and (bits[1] == "*" or _JOB_RE.match(bits[1])):
            fields["job"] = None if bits[1] == "*" else bits[1]
        elif key in ("replica", "task") and len(bits) == 2:
            fields[key] = _index(bits[1], part, spec)
        elif key.upper() in ("CPU", "GPU") and len(bits) in (1, 2):
            _set_type(fields, key.upper(), bits[1] if len(bits) == 2 else "*", part, spec)
        elif key == "device" and len(bits) in (2, 3) and bits[1]:
            _set_type(fields, bits[1].upper() if bits[1].upper() in ("CPU", "GPU") else bits[1],
                      bits[2] if len(bits) == 3 else "*", part, spec)
        else:
            raise _bad(part, spec)
    return DeviceSpec(**fields)


def _set_type(fields: dict, dtype: str, index: str, part: str, spec: str) -> None:
    if "device_type" in fields and fields["device_type"] != dtype:
        raise ValueError(f"Cannot specify multiple device types: {spec}")
    fields["device_type"] = None if dtype == "*" else dtype
    fields["device_index"] = _index(index, part, spec)


@lru_cache(maxsize=4096)
def _to_string(spec: DeviceSpec) -> str:
    out = []
    if spec.job is not None:
        out.append(f"/job:{spec.job}")
    if spec.replica is not None:
        out.append(f"/replica:{spec.replica}")
    if spec.task is not None:
        out.append(f"/task:{spec.task}")
    if spec.device_type is not None:
        idx = "*" if spec.device_index is None else spec.device_index
        out.append(f"/device:{spec.device_type}:{idx}")
    elif spec.device_index is not None:
        out.append(f"/device:*:{spec.device_index}")
    return "".join(out)


def canonical(spec: Any) -> str:
    """The canonical string for a device string or spec (``/gpu:0`` -> ``/device:GPU:0``)."""
    if not spec:
        return ""
    return DeviceSpec.from_string(spec).to_string()


def merge_device(spec: Any):
    """A device function that fills the unset fields of an op's device from ``spec``."""
    outer = DeviceSpec.from_string(spec)

    def _merge(op) -> str:
        return outer.merge_from(DeviceSpec.from_string(op.device)).to_string()

    _merge.spec = outer  # type: ignore[attr-defined]
    return _merge

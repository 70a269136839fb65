"""What a cluster step's parts add up to, for the master.

``Gathered`` collects the parts' RunGraph metadata: the step stats of a traced step and,
when asked (``output_partition_graphs``), every task's graphs, one per device, and fills
RunStep's metadata with them. ``root_cause`` picks, among the failures of a step's parts,
the error that caused the others (aborts and cancellations follow from it).
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from tfteach import errors
from tfteach.runtime.session_config import StepStats


class Gathered:
    """What the parts' RunGraph metadata add up to: the step stats of a traced step and, when
    asked (``output_partition_graphs``), every task's graphs, one per device."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.stats = StepStats() if options.get("trace") else None
        self.graphs: list | None = [] if options.get("partition_graphs") else None

    def add(self, meta: bytes) -> None:
        if not meta:
            return
        info = json.loads(meta)
        if self.stats is not None and "step_stats" in info:
            part = StepStats.from_dict(info["step_stats"])
            self.stats.dev_stats.extend(part.dev_stats)
            self.stats.transfers.extend(part.transfers)
        if self.graphs is not None:
            self.graphs.extend(info.get("partition_graphs", []))

    def fill(self, meta: dict) -> None:
        """Add what was gathered to RunStep's metadata ``meta``."""
        if self.stats is not None:
            meta["step_stats"] = self.stats.to_dict()
        if self.graphs is not None:
            meta["partition_graphs"] = sorted(
                self.graphs, key=lambda g: g["node"][0]["device"] if g["node"] else "")


def root_cause(failures: list[Exception]) -> Exception:
    """The error that caused the others: aborts and cancellations follow from it."""
    def rank(e: Exception) -> int:
        if isinstance(e, errors.UnavailableError):
            return 0
        if isinstance(e, (errors.AbortedError, errors.CancelledError)):
            return 2
        return 1
    return min(failures, key=rank)

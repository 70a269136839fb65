"""``%%placement --backend compare``: what tfteach and real TensorFlow each did with one cell.

``compare(ours, theirs, gpus)`` takes the two ``PlacementResult`` objects (tfteach's and
``tf_backend``'s) and returns a ``Comparison``: the errors (class name and message) when either
side raised and they differ, the ops the two placed on different devices (TF's stand-in
``CPU:i+1`` named back as the ``GPU:i`` it stands for when ``gpus`` > 0, i.e. with
``--gpus-as-cpus``), the op names only one graph has, and the fetched values that differ
(NumPy ``allclose``, rtol 1e-5). It displays as a short box: each difference on its own line, or
one line saying that the two agree. No state beyond what it was built with.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfteach.i18n import join, tr, trn
from tfteach.notebook.displays import format_value
from tfteach.notebook.palette import feedback_style
from tfteach.notebook.style import html_escape
from tfteach.notebook.tf_backend import as_tfteach_device
from tfteach.timeline import short_device

_TEXT = "font-family:var(--jp-code-font-family,monospace);font-size:12px;white-space:pre-wrap"


@dataclass
class Comparison:
    """The differences between tfteach's and TensorFlow's run of one cell."""

    errors: tuple[str, str] | None = None
    placement: list[tuple[str, str, str]] = field(default_factory=list)
    only: dict[str, list[str]] = field(default_factory=dict)
    values: list[tuple[str, str, str]] = field(default_factory=list)
    agreed_ops: int = 0
    agreed_values: int = 0
    both_raised: str | None = None

    @property
    def differs(self) -> bool:
        return bool(self.errors or self.placement or self.only or self.values)

    def lines(self) -> list[str]:
        """One line per difference (placement, then values, then errors)."""
        out = [tr("placement of {name}: tfteach {ours}, TensorFlow {theirs}", name=name,
                  ours=ours, theirs=theirs) for name, ours, theirs in self.placement]
        out += [tr("only {side} has {names}", side=side, names=join(names))
                for side, names in self.only.items()]
        out += [tr("value of {name}: tfteach {ours}, TensorFlow {theirs}", name=name,
                   ours=ours, theirs=theirs) for name, ours, theirs in self.values]
        if self.errors:
            out.append(tr("error: tfteach {ours}; TensorFlow {theirs}", ours=self.errors[0],
                          theirs=self.errors[1]))
        return out

    def text(self) -> str:
        if self.differs:
            return "\n".join([trn("tfteach and TensorFlow differ ({n} difference):",
                                  "tfteach and TensorFlow differ ({n} differences):",
                                  len(self.lines()))]
                             + [f"  {line}" for line in self.lines()])
        ops = trn("{n} op on the same devices", "{n} ops on the same devices", self.agreed_ops)
        values = trn("{n} fetched value the same", "{n} fetched values the same",
                     self.agreed_values)
        if self.both_raised:
            return tr("tfteach and TensorFlow agree: {ops}, {values}; both raised {error}.",
                      ops=ops, values=values, error=self.both_raised)
        return tr("tfteach and TensorFlow agree: {ops}, {values}, no errors.", ops=ops,
                  values=values)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        style = feedback_style("error" if self.differs else "success")
        html = (f'<div class="tfteach-compare" style="{style};{_TEXT}">'
                f"{html_escape(self.text())}</div>")
        return {"text/html": html, "text/plain": self.text()}


def compare(ours: Any, theirs: Any, gpus: int = 0) -> Comparison:
    """How ``theirs`` (TensorFlow's ``PlacementResult``) differs from ``ours`` (tfteach's)."""
    result = Comparison()
    _compare_errors(result, ours.error, theirs.error)
    if ours.view is not None and theirs.view is not None:
        _compare_placement(result, ours.view.devices, theirs.view.devices, gpus)
    _compare_values(result, ours.values or {}, theirs.values or {})
    return result


def _error_text(error: Any) -> str:
    if error is None:
        return tr("raised nothing")
    first = (getattr(error, "message", None) or str(error)).splitlines()[0]
    return tr("raised {error}: {message}", error=type(error).__name__, message=first)


def _compare_errors(result: Comparison, ours: Any, theirs: Any) -> None:
    if ours is None and theirs is None:
        return
    if ours is not None and theirs is not None and type(ours).__name__ == type(theirs).__name__:
        result.both_raised = type(ours).__name__
        return
    result.errors = (_error_text(ours), _error_text(theirs))


def _compare_placement(result: Comparison, ours: dict, theirs: dict, gpus: int) -> None:
    for name, device in ours.items():
        if name not in theirs:
            continue
        mine, tfs = short_device(device), short_device(as_tfteach_device(theirs[name], gpus))
        if mine == tfs:
            result.agreed_ops += 1
        else:
            shown = short_device(theirs[name])
            result.placement.append((name, mine, tfs if shown == tfs else
                                     f"{shown} (standing in for {tfs})"))
    for side, names in (("tfteach", set(ours) - set(theirs)),
                        ("TensorFlow", set(theirs) - set(ours))):
        if names:
            result.only[side] = sorted(names)


def _compare_values(result: Comparison, ours: dict, theirs: dict) -> None:
    for name in ours.keys() & theirs.keys():
        if _same(ours[name], theirs[name]):
            result.agreed_values += 1
        else:
            result.values.append((name, format_value(ours[name]), format_value(theirs[name])))


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        x, y = np.asarray(a), np.asarray(b)
        if x.dtype.kind in "biufc" and y.dtype.kind in "biufc":
            return x.shape == y.shape and bool(np.allclose(x, y, rtol=1e-5, atol=1e-6))
        return x.shape == y.shape and bool(np.all(x == y))
    except (TypeError, ValueError):
        return False

"""Checking lesson exercises, with feedback a learner can act on.

    from tfteach.lessons import check, check_placement
    check_placement(_placement, {"product": "/gpu:1", "total": "/cpu:0"},
                    value=[[44, 56], [98, 128]])
    check(answer, 3, what="the number of GPUs")

Each returns a ``Feedback``: truthy when the answer is right, shown in a notebook as a green
(correct) or red (not yet) box listing each problem with a ``Hint:``. A device may be written
any way TF accepts (``GPU:1``, ``/gpu:1``, ``/device:GPU:1`` or a full name); only the parts
given are compared. No state.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfteach.framework.device_spec import DeviceSpec


@dataclass
class Feedback:
    """The outcome of a check: what was checked, what is wrong, and hints."""

    what: str
    problems: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def __bool__(self) -> bool:
        return self.passed

    def text(self) -> str:
        if self.passed:
            return f"Correct: {self.what}. Well done!"
        lines = [f"Not yet: {self.what}."] + [f"- {p}" for p in self.problems]
        return "\n".join(lines + [f"Hint: {h}" for h in dict.fromkeys(self.hints)])

    def html(self) -> str:
        """The box: themed colours (``palette.feedback_style``), `code` in hints as code."""
        from tfteach.notebook.palette import feedback_style
        from tfteach.notebook.style import inline_code

        style = feedback_style("success" if self.passed else "error")
        body = "<br>".join(inline_code(line) for line in self.text().split("\n"))
        return f"<div class='tfteach-check' style='{style}'>{body}</div>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/html": self.html(), "text/plain": self.text()}

    def __repr__(self) -> str:
        return self.text()


def check(actual: Any, expected: Any, what: str = "the answer", hint: str = "",
          atol: float = 1e-6) -> Feedback:
    """Compare ``actual`` with ``expected`` (numbers and arrays within ``atol``)."""
    feedback = Feedback(what)
    if not _same(actual, expected, atol):
        feedback.problems.append(f"expected {_show(expected)}, got {_show(actual)}")
        if hint:
            feedback.hints.append(hint)
    return feedback


def _same(actual: Any, expected: Any, atol: float) -> bool:
    try:
        a, e = np.asarray(actual), np.asarray(expected)
        if a.dtype.kind in "fiub" and e.dtype.kind in "fiub":
            return a.shape == e.shape and bool(np.allclose(a, e, atol=atol))
    except (TypeError, ValueError):
        pass
    return actual == expected


def _show(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return np.array2string(value, separator=", ").replace("\n", "")
    return repr(value)


def device_matches(assigned: str, wanted: str) -> bool:
    """Whether the full device name ``assigned`` has every field ``wanted`` names."""
    return _spec(wanted).matches(DeviceSpec.from_string(assigned))


def _spec(text: str) -> DeviceSpec:
    text = text.strip()
    if not text.startswith("/"):
        text = "/device:" + text
    return DeviceSpec.from_string(text)


def check_placement(result: Any, expected: dict[str, str], value: Any = None,
                    what: str = "the placement", atol: float = 1e-6) -> Feedback:
    """Check where ops were placed (op name -> device) and, optionally, the fetched value.

    ``result`` is what ``%%placement`` leaves in ``_placement`` (or any object with a
    ``view.devices``/``devices`` mapping of op names to device names, and ``values``).
    """
    feedback = Feedback(what)
    error = getattr(result, "error", None)
    if error is not None:
        feedback.problems.append(f"the cell failed with {type(error).__name__}")
        feedback.hints.append(getattr(error, "hint", None) or str(error))
        return feedback
    placed = _full_devices(result)
    for name, wanted in expected.items():
        _check_one(feedback, placed, name, wanted)
    if value is not None:
        _check_value(feedback, getattr(result, "values", None), value, atol)
    return feedback


def _full_devices(result: Any) -> dict[str, str]:
    view = getattr(result, "view", None)
    if view is not None:
        return dict(view.devices)
    return dict(getattr(result, "devices", result) or {})


def _check_one(feedback: Feedback, placed: dict[str, str], name: str, wanted: str) -> None:
    if name not in placed:
        feedback.problems.append(f"there is no op named '{name}'")
        feedback.hints.append(f"create it with name='{name}', e.g. "
                              f"tf.matmul(a, b, name='{name}'), in the %%placement cell")
    elif not device_matches(placed[name], wanted):
        feedback.problems.append(f"'{name}' is on {_short(placed[name])}, not on {wanted}")
        feedback.hints.append(f"create '{name}' inside `with tf.device('{wanted}'):`")


def _check_value(feedback: Feedback, values: dict | None, expected: Any, atol: float) -> None:
    if not values:
        feedback.problems.append("the cell computed no value")
        feedback.hints.append("add --run to the %%placement line and end the cell with the "
                              "tensor to compute")
        return
    got = list(values.values())[-1]
    if not _same(got, expected, atol):
        feedback.problems.append(f"the value is {_show(got)}, expected {_show(expected)}")
        feedback.hints.append("end the cell with the tensor whose value is asked for")


def _short(device: str) -> str:
    from tfteach.timeline import short_device

    return short_device(device)

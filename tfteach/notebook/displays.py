"""Small display objects: learner-friendly errors, headings, notes, fetched values, the device table.

Each has ``_repr_mimebundle_`` with ``text/html`` for notebooks and a deterministic
``text/plain`` for nbval, GitHub and terminals. No state beyond what they were built with.
"""
from __future__ import annotations

import os
from typing import Any, Iterable

import numpy as np

from tfteach.errors import with_hint
from tfteach.i18n import N_, clauses, hint_label, tr
from tfteach.notebook.palette import feedback_style
from tfteach.notebook.style import format_bytes, html_escape, inline_code, text_table
from tfteach.timeline import short_device

_TEXT = "font-family:var(--jp-code-font-family,monospace);font-size:12px;white-space:pre-wrap"


class ErrorBox:
    """A tfteach (TF) error as a short box: class name, TF's message, the hint, and where."""

    def __init__(self, error: BaseException, context: str = "") -> None:
        self.error = error
        self.context = context

    @property
    def title(self) -> str:
        return type(self.error).__name__

    @property
    def message(self) -> str:
        return getattr(self.error, "message", None) or str(self.error)

    @property
    def hint(self) -> str | None:
        return getattr(self.error, "hint", None)

    def text(self) -> str:
        head = (tr("{error} while {context}:", error=self.title, context=tr(self.context))  # i18n: dynamic
                if self.context else f"{self.title}:")
        return with_hint(f"{head}\n{self.message}", self.hint or "")

    def html(self) -> str:
        head = f"<b>{html_escape(self.title)}</b>"
        if self.context:
            head = tr("{error} while {context}", error=head,
                      context=html_escape(tr(self.context)))  # i18n: dynamic
        label = hint_label()
        hint = (f'<div style="margin-top:6px"><b>{html_escape(label.rstrip())}</b>'
                f'{label[len(label.rstrip()):]}{inline_code(self.hint)}</div>'
                if self.hint else "")
        return (f'<div class="tfteach-error" style="{feedback_style("error")};{_TEXT}">'
                f"{head}<div>{html_escape(self.message)}</div>{hint}</div>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/html": self.html(), "text/plain": self.text()}


class Heading:
    """A short title above a group of outputs (e.g. ``tfteach:`` / ``TensorFlow:``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/html": f"<h4>{html_escape(self.text)}</h4>", "text/plain": self.text}


class Note:
    """A plain sentence worth seeing before the pictures (e.g. a device TensorFlow lacks)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        style = f"{feedback_style('note')};{_TEXT}"
        return {"text/html": f'<div class="tfteach-note" style="{style}">'
                             f"{inline_code(self.text)}</div>",
                "text/plain": tr("Note: {text}", text=self.text)}


def format_value(value: Any) -> str:
    """A fetched value as NumPy prints it (None for ops)."""
    if value is None:
        return tr("None (an op: it ran, it has no value)")
    if isinstance(value, (np.ndarray, np.generic)):
        if np.ndim(value) == 0:
            return str(np.asarray(value)[()])
        return np.array2string(np.asarray(value), separator=" ")
    return repr(value)


class RunValues:
    """The values a ``%%placement --run`` cell fetched, by name."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def text(self) -> str:
        blocks = []
        for name, value in self.values.items():
            shown = format_value(value)
            sep = "\n" if "\n" in shown else " "
            blocks.append(f"{name} ={sep}{shown}")
        return "\n".join(blocks)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/plain": self.text()}


def _gpu_mapping(device: Any) -> str:
    """``GPU:0 is virtual GPU 0``: which GPU a device stands for."""
    fields = {"device": short_device(device.name), "index": device.physical_index}
    if device.is_virtual:
        return tr("{device} is virtual GPU {index}", **fields)
    return tr("{device} is physical GPU {index}", **fields)


class DeviceTable:
    """The devices a session would get here, and what CUDA_VISIBLE_DEVICES did."""

    COLUMNS = (N_("device"), N_("type"), N_("memory"), N_("speed"), N_("kind"),
               N_("description"))

    def __init__(self, devices: Iterable[Any], env: dict[str, str] | None = None) -> None:
        self.devices = list(devices)
        self.env = dict(os.environ if env is None else env)

    def rows(self) -> list[tuple[str, ...]]:
        out = []
        for d in self.devices:
            kind = (tr("virtual (CPU-backed)") if d.is_virtual else
                    tr("real GPU") if d.device_type == "GPU" else tr("host CPU"))
            memory = (tr("host memory") if d.device_type == "CPU"
                      else format_bytes(d.memory_limit))
            out.append((d.name, d.device_type, memory, f"{d.speed:g}x", kind,
                        d.description or "-"))
        return out

    def visibility_note(self) -> str:
        """One sentence on CUDA_VISIBLE_DEVICES and how the GPUs map to it."""
        gpus = [d for d in self.devices if d.device_type == "GPU"]
        mapped = clauses(_gpu_mapping(d) for d in gpus)
        env = self.env.get("CUDA_VISIBLE_DEVICES")
        if env is None:
            head = tr("CUDA_VISIBLE_DEVICES is not set: every GPU is visible.")
        elif env.strip() == "":
            head = tr("CUDA_VISIBLE_DEVICES is empty: it hides every GPU.")
        else:
            head = tr("CUDA_VISIBLE_DEVICES={env}: only those GPUs are visible, renumbered "
                      "from 0.", env=env)
        if not gpus:
            return f"{head} {tr('No GPU is visible.')}"
        return tr("{head} {mapping}.", head=head, mapping=mapped)

    def text(self) -> str:
        rows = [self.headings()[:5]] + [r[:5] for r in self.rows()]
        return "\n".join([text_table(rows), self.visibility_note()])

    def headings(self) -> tuple[str, ...]:
        return tuple(tr(c) for c in self.COLUMNS)  # i18n: dynamic

    def html(self) -> str:
        head = "".join(f"<th style='text-align:left'>{c}</th>" for c in self.headings())
        body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{html_escape(v)}</td>"
                                        for v in r) + "</tr>" for r in self.rows())
        return (f"<table class='tfteach-devices'><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table><p>{html_escape(self.visibility_note())}</p>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/html": self.html(), "text/plain": self.text()}

"""Resource containers: the state that outlives a step (variables, queues, random generators).

A local Session owns one ``ResourceMgr``; in a cluster each task owns one that outlives
sessions (and a session with ``isolate_session_state`` its own). A ``ResourceMgr`` holds
named containers, as TF's: a stateful op's ``container`` attr (set by ``tf.container``;
``""`` is the default container) picks its table, and ``clear(containers)`` empties some of
them (``tf.Session.reset``). Variables are ``VarRef`` objects: the ``VariableV2`` kernel
returns one, ref-taking kernels update it, and reading an uninitialized one raises TF's
``FailedPreconditionError``. A variable's bytes count against its device's memory budget.

A variable keeps one buffer that updates write into, as TF's kernels do (``buffer()``; a
new one only when it is first set or changes shape, ``assign()``). Readers get a read-only
view of it (``read()``, ``value``): within a step it shows later updates, as TF's reads
alias the variable, and anything that keeps it past the step copies it (a fetch does:
``executor.to_fetch_value``), so a fetched array never changes and changing it changes no
variable.
"""
from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from tfteach.errors import FailedPreconditionError
from tfteach.i18n import tr


class VarRef:
    """The storage of one variable on one device: ``value`` is what readers see (a
    read-only view of the buffer on the host; the CuPy array itself on a GPU) or None."""

    __slots__ = ("name", "device", "dtype", "shape", "value", "lock", "_buffer")

    def __init__(self, name: str, device: Any, dtype: Any, shape: Any) -> None:
        self.name = name
        self.device = device
        self.dtype = dtype
        self.shape = shape
        self.value: Any = None
        self._buffer: Any = None
        self.lock = threading.Lock()

    def read(self, op: Any = None) -> Any:
        value = self.value
        if value is None:
            self._uninitialized(op)
        return value

    def buffer(self, op: Any = None) -> Any:
        """The array that in-place updates write into (``xp.add(b, d, out=b)``)."""
        buf = self._buffer
        if buf is None:
            self._uninitialized(op)
        return buf

    def _uninitialized(self, op: Any) -> None:
        node = f"\n\t [[Node: {op.summary()}]]" if op is not None else ""
        raise FailedPreconditionError(
            f"Attempting to use uninitialized value {self.name}{node}", op=op,
            hint=tr("run sess.run(tf.global_variables_initializer()) once after creating "
                    "the session (variables belong to a session and start "
                    "uninitialized)."))

    def write(self, value: Any, xp: Any, op: Any = None) -> None:
        """TF's Assign: copy ``value`` into the buffer when the shapes match, else take a
        new buffer (a copy of ``value``)."""
        buf = self._buffer
        if buf is not None and buf.shape == getattr(value, "shape", ()):
            xp.copyto(buf, xp.asarray(value), casting="unsafe")   # (a host value to a GPU)
        else:
            self.assign(xp.array(value, copy=True), op)

    def assign(self, value: Any, op: Any = None) -> None:
        """Make ``value`` (an array nobody else writes to) the variable's new buffer."""
        if isinstance(value, np.generic):
            value = np.array(value)
        if isinstance(value, np.ndarray):
            if not value.flags.writeable:
                value = value.copy()
            view = value.view()
            view.flags.writeable = False
        else:
            view = value
        self._account(int(getattr(value, "nbytes", 0)), value, op)
        self._buffer, self.value = value, view

    def _account(self, new: int, value: Any, op: Any) -> None:
        old = int(getattr(self._buffer, "nbytes", 0)) if self._buffer is not None else 0
        mem = self.device.memory
        if new > old:
            mem.alloc(new - old, getattr(value, "shape", ()), self.dtype,
                      op.name if op is not None else self.name, self.device.name)
        elif old > new:
            mem.free(old - new)

    def release(self) -> None:
        if self.value is not None:
            self.device.memory.free(int(getattr(self._buffer, "nbytes", 0)))
            self.value = self._buffer = None

    def __repr__(self) -> str:
        state = "uninitialized" if self.value is None else f"shape={self.value.shape}"
        return f"<VarRef {self.name} on {self.device.name}, {state}>"


class ResourceMgr:
    """The containers of one session (or one cluster task): ``{container: {name: resource}}``
    (variables, queues, accumulators; each has ``release()``), plus per-op random generators."""

    def __init__(self) -> None:
        self.containers: dict[str, dict[str, Any]] = {"": {}}
        self._rngs: dict[str, np.random.Generator] = {}
        self._lock = threading.Lock()
        self.last_step = 0

    @property
    def variables(self) -> dict[str, Any]:
        """The default container's table."""
        return self.table("")

    def table(self, container: str = "") -> dict[str, Any]:
        """The table of ``container`` (made on first use)."""
        found = self.containers.get(container)
        if found is None:
            with self._lock:
                found = self.containers.setdefault(container, {})
        return found

    def variable(self, name: str, device: Any, dtype: Any, shape: Any,
                 container: str = "") -> VarRef:
        table = self.table(container)
        ref = table.get(name)
        if ref is None:
            with self._lock:
                ref = table.get(name)
                if ref is None:
                    ref = table[name] = VarRef(name, device, dtype, shape)
        return ref

    def rng(self, name: str, seed: int, seed2: int) -> np.random.Generator:
        gen = self._rngs.get(name)
        if gen is None:
            with self._lock:
                entropy = None if seed == 0 and seed2 == 0 else [seed, seed2]
                gen = self._rngs.setdefault(name, np.random.default_rng(entropy))
        return gen

    def clear(self, containers: Sequence[str] | None = None) -> None:
        """Release the resources of ``containers`` (every container, and the random
        generators, when ``None``); later uses start them anew (uninitialized)."""
        with self._lock:
            names = list(self.containers) if containers is None else \
                [c for c in dict.fromkeys(containers) if c in self.containers]
            dropped = [self.containers.pop(c) for c in names]
            self.containers.setdefault("", {})
            if containers is None:
                self._rngs.clear()
        for table in dropped:
            for resource in table.values():
                resource.release()

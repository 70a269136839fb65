"""A resource container: the state that outlives a step (variables, random generators).

A local Session owns one ``ResourceMgr``; in a cluster each task owns one that outlives
sessions (TF's containers). Variables are ``VarRef`` objects: the ``VariableV2`` kernel
returns one, ref-taking kernels update it, and reading an uninitialized one raises TF's
``FailedPreconditionError``. A variable's bytes count against its device's memory budget.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from tfteach.errors import FailedPreconditionError


class VarRef:
    """The storage of one variable on one device."""

    __slots__ = ("name", "device", "dtype", "shape", "value", "lock")

    def __init__(self, name: str, device: Any, dtype: Any, shape: Any) -> None:
        self.name = name
        self.device = device
        self.dtype = dtype
        self.shape = shape
        self.value: Any = None
        self.lock = threading.Lock()

    def read(self, op: Any = None) -> Any:
        value = self.value
        if value is None:
            node = f"\n\t [[Node: {op.summary()}]]" if op is not None else ""
            raise FailedPreconditionError(
                f"Attempting to use uninitialized value {self.name}{node}", op=op,
                hint="run sess.run(tf.global_variables_initializer()) once after creating "
                     "the session (variables belong to a session and start uninitialized).")
        return value

    def assign(self, value: Any, op: Any = None) -> None:
        new = int(getattr(value, "nbytes", 0))
        old = int(getattr(self.value, "nbytes", 0)) if self.value is not None else 0
        if new == old:
            self.value = value
            return
        mem = self.device.memory
        if new > old:
            mem.alloc(new - old, getattr(value, "shape", ()), self.dtype,
                      op.name if op is not None else self.name, self.device.name)
        elif old > new:
            mem.free(old - new)
        self.value = value

    def release(self) -> None:
        if self.value is not None:
            self.device.memory.free(int(getattr(self.value, "nbytes", 0)))
            self.value = None

    def __repr__(self) -> str:
        state = "uninitialized" if self.value is None else f"shape={self.value.shape}"
        return f"<VarRef {self.name} on {self.device.name}, {state}>"


class ResourceMgr:
    """Variables and per-op random generators of one session (or one cluster task)."""

    def __init__(self) -> None:
        self.variables: dict[str, VarRef] = {}
        self._rngs: dict[str, np.random.Generator] = {}
        self._lock = threading.Lock()
        self.last_step = 0

    def variable(self, name: str, device: Any, dtype: Any, shape: Any) -> VarRef:
        ref = self.variables.get(name)
        if ref is None:
            with self._lock:
                ref = self.variables.get(name)
                if ref is None:
                    ref = self.variables[name] = VarRef(name, device, dtype, shape)
        return ref

    def rng(self, name: str, seed: int, seed2: int) -> np.random.Generator:
        gen = self._rngs.get(name)
        if gen is None:
            with self._lock:
                entropy = None if seed == 0 and seed2 == 0 else [seed, seed2]
                gen = self._rngs.setdefault(name, np.random.default_rng(entropy))
        return gen

    def clear(self) -> None:
        with self._lock:
            for ref in self.variables.values():
                ref.release()
            self.variables.clear()
            self._rngs.clear()

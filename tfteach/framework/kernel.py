"""The kernel contract: what a kernel may use (``KernelContext``) and what it may hand back
besides a value (``Pending``, a result that arrives later).

A kernel is ``kernel(ctx, *inputs) -> outputs``. It uses only what ``KernelContext`` lists;
it never reaches into the runtime or the cluster engine (their objects are free to change).

Waiting kernels (queues, accumulators, a Recv from another task) return a ``Pending``
instead of blocking a device thread; the executor (tfteach.runtime) completes the node when
it resolves. Cancellation is driven from the top: the engine tells the executor that a step
is aborted or cancelled, and the executor tells each kernel still waiting in that step
through the hooks the kernel set on its ``Pending``:

- ``on_cancel()``: the step failed, was aborted (another task's part failed, a task died)
  or cancelled (Ctrl-C, a closing session, a stopping server). End the wait with
  ``CancelledError`` and take nothing.
- ``on_deadline()``: the step's deadline (``ctx.deadline``: ``operation_timeout_in_ms`` or
  ``RunOptions.timeout_in_ms``) passed. End the wait with ``DeadlineExceededError``. A
  kernel whose wait has its own timeout leaves it None.

Both are called at most once each, only while the Pending is unresolved, from whichever
thread ends the step. This module is in the lowest layer so that ops can use it without
importing the runtime.

Transfer kernels (``_Send``, ``_Recv``) meet through the step's rendezvous, TF's
``OpKernelContext::rendezvous()``: in a step of a cluster partition the step's resources
carry one as ``ctx.resources.rendezvous`` (a ``StepRendezvous``, bound to that step), put
there by the engine that runs the partition. A kernel never sees the engine itself.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Callable, Protocol


class KernelContext(Protocol):
    """What a kernel may use (the runtime's ``plan.KernelContext`` implements it).

    ``deadline`` is the most a kernel may wait in one step, in seconds (None: no limit); the
    executor enforces it for waiting kernels (see ``Pending.on_deadline``), so a kernel only
    reads it to give a wait of its own (an RPC) the same limit. Cancellation is not on the
    context: a waiting kernel sets ``on_cancel`` on the ``Pending`` it returns.
    """

    op: Any                     # the Operation (None for the executor's copy nodes)
    attrs: Mapping[str, Any]    # the op's attrs
    device: Any                 # the Device it runs on: to_host, from_host, memory
    xp: Any                     # the device's array module (NumPy, or CuPy on a GPU)
    resources: Any              # the step's resource containers (``shared_resource``;
                                # in a cluster step also ``rendezvous``: StepRendezvous)

    @property
    def deadline(self) -> float | None: ...


class StepRendezvous(Protocol):
    """``ctx.resources.rendezvous``: where one step's transfer kernels leave and ask for
    tensors (see the module docstring). Keys are TF's rendezvous keys; the step is implied.

    ``send`` leaves a value (``is_dead``: a dead tensor of an untaken cond branch) for the
    ``_Recv`` of ``key``; ``send_to_master`` leaves it for the step's master instead, in
    the answer of the call that runs the step. ``recv`` starts fetching the tensor a
    ``_Recv`` with ``attrs`` (``key``, ``src_task``, ...) waits for, onto ``device``, and
    resolves ``pending`` with it (or with an error) later, never blocking the caller.
    ``task_name`` names the task running the step.
    """

    task_name: str

    def send(self, key: str, value: Any, is_dead: bool = False) -> None: ...

    def send_to_master(self, key: str, value: Any) -> None: ...

    def recv(self, attrs: Mapping[str, Any], device: Any, pending: "Pending") -> None: ...


class Pending:
    """A kernel's result that arrives later (queues, accumulators). Resolve exactly once.

    ``on_cancel`` and ``on_deadline`` are the kernel's cancellation hooks (see the module
    docstring); the executor calls them through ``cancel`` and ``expire``.
    """

    def __init__(self) -> None:
        self._callbacks: list[Callable] = []
        self._lock = threading.Lock()
        self._result: tuple | None = None
        self.on_cancel: Callable[[], None] | None = None
        self.on_deadline: Callable[[], None] | None = None
        self.started_ns: int | None = None

    @property
    def done(self) -> bool:
        return self._result is not None

    def resolve(self, value: Any = None, error: BaseException | None = None) -> None:
        with self._lock:
            if self._result is not None:
                return
            self._result = (value, error)
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(value, error)

    def add_done_callback(self, cb: Callable) -> None:
        with self._lock:
            if self._result is None:
                self._callbacks.append(cb)
                return
        cb(*self._result)

    def cancel(self) -> None:
        """The step ended without this result: let the kernel end its wait (on_cancel)."""
        self._call("on_cancel")

    def expire(self) -> None:
        """The step's deadline passed: let the kernel time its wait out (on_deadline)."""
        self._call("on_deadline")

    def _call(self, hook_name: str) -> None:
        with self._lock:
            hook = getattr(self, hook_name)
            setattr(self, hook_name, None)      # at most once
            if self._result is not None or hook is None:
                return
        hook()

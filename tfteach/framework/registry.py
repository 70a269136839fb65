"""The op registry: one ``OpDef`` per op type, holding everything about that op.

An ``OpDef`` keeps, side by side, the op's shape/dtype function (run at construction), its
kernel (written once against an array module ``xp``), the device types and dtypes its
kernel supports, its gradient, and facts the runtime needs (stateful, cost, ref inputs,
asynchronous). Op modules in ``tfteach.ops`` call ``register_op`` once per type.

Op kinds are data: ``OpDef.stateful``, ``OpDef.cheap``, ``OpDef.ref_inputs``,
``OpDef.sparse_grads``, ``OpDef.copyable`` and ``OpDef.idle`` replace any matching on op-type
strings (or op-name prefixes) elsewhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from tfteach.framework import dtypes as _dt

ALL_TYPES = frozenset(_dt.ALL)
GPU_NUMERIC = frozenset(_dt.NUMERIC | {_dt.bool_})
GPU_FLOAT = frozenset(_dt.FLOATS | {_dt.int64})


@dataclass
class OpDef:
    """Everything the framework and runtime know about one op type."""

    type: str
    shape_fn: Callable[[Any], list]
    kernel: Callable[..., Any] | None = None
    grad: Callable[..., Any] | None = None
    gpu_types: frozenset = GPU_NUMERIC
    dtype_attr: str = "T"
    stateful: bool = False
    cheap: bool = True
    ref_inputs: tuple = ()
    ref_output: bool = False
    is_async: bool = False
    sparse_grads: bool = False      # its gradient function passes IndexedSlices through
    # A source op (no inputs) that only names state or a fed value: a cluster step's
    # partition may copy it into every part or phase that uses it instead of sending its
    # value (VariableV2, Const, Placeholder).
    copyable: bool = False
    # Does no work when it runs (returns what it holds or is given, or nothing): a phase of
    # only such ops is skipped, an idle op without outputs is dropped from compiled
    # programs and cluster partitions (NoOp, Const, VariableV2, Placeholder, Identity).
    idle: bool = False
    extra: dict = field(default_factory=dict)

    def supported_device_types(self, op: Any) -> list[str]:
        """Device types with a kernel for this op's attrs, in priority order (GPU first)."""
        dtype = op.attrs.get(self.dtype_attr)
        types = ["GPU"] if (dtype is None or dtype in self.gpu_types) and self.gpu_types else []
        return types + ["CPU"]

    def registered_kernels_text(self) -> str:
        """TF's 'Registered kernels:' listing for error messages."""
        lines = ["Registered kernels:", "  device='CPU'"]
        if self.gpu_types:
            for dt in sorted(self.gpu_types, key=lambda d: d.name):
                lines.append(f"  device='GPU'; {self.dtype_attr} in [{dt.enum}]")
        return "\n".join(lines)


_REGISTRY: dict[str, OpDef] = {}


def register_op(op_type: str, shape_fn: Callable, kernel: Callable | None = None,
                **facts: Any) -> OpDef:
    """Register an op type; returns its OpDef. Registering a type twice is an error."""
    if op_type in _REGISTRY:
        raise KeyError(f"Op type '{op_type}' is already registered.")
    op_def = OpDef(op_type, shape_fn, kernel, **facts)
    _REGISTRY[op_type] = op_def
    return op_def


def get(op_type: str) -> OpDef:
    try:
        return _REGISTRY[op_type]
    except KeyError:
        raise KeyError(f"Op type not registered '{op_type}'. Registered op types: "
                       f"{', '.join(sorted(_REGISTRY))}") from None


def set_gradient(op_type: str, grad: Callable) -> None:
    """Attach a gradient function to an op type (used next to the op's registration).

    ``grad(op, *output_grads) -> [input_grad or None per input]``, TF's convention.
    """
    get(op_type).grad = grad


def NOT_DIFFERENTIABLE(op: Any, *grads: Any) -> list:
    """The gradient of an op that has none: no gradient reaches any of its inputs."""
    return [None] * len(op.inputs)


def not_differentiable(*op_types: str) -> None:
    """TF's ``ops.NotDifferentiable``: gradients stop at these ops (no LookupError)."""
    for op_type in op_types:
        get(op_type).grad = NOT_DIFFERENTIABLE


def passes_indexed_slices(*op_types: str) -> None:
    """These ops' gradient functions take an ``IndexedSlices`` and pass it on (TF's Identity);
    every other gradient function gets a sparse gradient summed into a dense tensor first."""
    for op_type in op_types:
        get(op_type).sparse_grads = True


def has_gradient(op_type: str) -> bool:
    """Whether ``op_type`` has a real gradient function (not None, not NOT_DIFFERENTIABLE)."""
    grad = get(op_type).grad
    return grad is not None and grad is not NOT_DIFFERENTIABLE


def registered_types() -> Iterable[str]:
    return sorted(_REGISTRY)

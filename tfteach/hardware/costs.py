"""What one op asks of a device: floating-point operations and bytes of memory traffic.

``op_work(op_type, attrs, inputs, outputs)`` takes the op's input and output
``(shape, itemsize)`` pairs (shapes with known sizes) and returns ``Work(flops, nbytes,
kind)``. The device's cost is then the roofline: ``launch + max(flops / peak, nbytes /
bandwidth)`` (``predict``). Kinds are data, in sets below:

- ``IDLE``: ops that compute nothing (Const, Identity, NoOp, Placeholder, VariableV2...);
  they cost the device's ``idle_op_s`` only.
- ``VIEWS``: ops that return a view or a tiny host value (Reshape, Shape, ...): a kernel's
  fixed cost, no traffic.
- MatMul ``2mnk``; Conv2D (and its two gradients) ``2 * output elements * kh * kw * c_in``
  (kind "matrix": the device's peak); reductions one and a half FLOPs per input element;
  softmax, cross-entropy and transcendental functions a few per element (``PER_ELEMENT``);
  everything else one FLOP per output element (kind "compute": at most the device's
  element-wise FLOP/s). Traffic: every input read once and every output written once
  (``MOVES`` only move bytes).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

IDLE = frozenset({"Const", "Identity", "NoOp", "Placeholder", "VariableV2", "StopGradient",
                  "PlaceholderWithDefault", "IsVariableInitialized"})
VIEWS = frozenset({"Reshape", "ExpandDims", "Squeeze", "Shape", "Size", "Rank",
                   "BroadcastGradientArgs", "ConcatOffset", "InvertPermutation"})
REDUCTIONS = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin", "L2Loss",
                        "BiasAddGrad"})
MOVES = frozenset({"Transpose", "ConcatV2", "Pack", "Unpack", "Split", "Slice", "StridedSlice",
                   "StridedSliceGrad", "Tile", "Pad", "GatherV2", "Fill", "ZerosLike",
                   "OnesLike", "BroadcastTo", "Assign", "Cast", "OneHot"})
# FLOPs per element where one is too few (softmax and cross-entropy: exp, sum, divide, log;
# transcendental functions a few, as grappler's cost estimator weights them). The figures
# are NumPy's kernels' times relative to Add's, measured on an x86 CPU; a GPU's element-wise
# kernels are memory-bound, so there they rarely decide the cost.
PER_ELEMENT = {"Softmax": 12, "LogSoftmax": 12, "SoftmaxCrossEntropyWithLogits": 25,
               "SparseSoftmaxCrossEntropyWithLogits": 25, "Exp": 4, "Log": 4, "Log1p": 4,
               "Tanh": 2, "Sigmoid": 4, "Softplus": 6, "Pow": 8, "Sqrt": 2, "Rsqrt": 2,
               "Maximum": 3.5, "Minimum": 3.5, "Relu": 3.5, "Relu6": 7}
REDUCTION_FLOPS = 1.5   # per input element (NumPy's pairwise sum: 1.5 times an Add's time)


@dataclass(frozen=True)
class Work:
    flops: float
    nbytes: int
    kind: str       # "idle", "view", "matrix" (MatMul, Conv2D), "compute" or "move"


Arg = tuple  # (shape tuple of ints, itemsize)


def _n(arg: Arg) -> int:
    return prod(arg[0])


def _bytes(args: list[Arg]) -> int:
    return sum(_n(a) * a[1] for a in args)


def matmul_flops(a: tuple, b: tuple, transpose_a: bool, transpose_b: bool) -> float:
    """``2 m n k`` for ``a @ b`` (shapes as given, before the transposes)."""
    m, k = (a[1], a[0]) if transpose_a else (a[0], a[1])
    n = b[0] if transpose_b else b[1]
    return 2.0 * m * n * k


def _conv_flops(op_type: str, inputs: list[Arg], outputs: list[Arg]) -> float | None:
    """Conv2D and its gradients: ``2 * (output-gradient or output elements) * kh * kw *
    c_in``, the filter ``[kh, kw, c_in, c_out]`` being an input or the output."""
    if op_type == "Conv2D" and len(inputs) == 2 and len(inputs[1][0]) == 4:
        kh, kw, c_in, _ = inputs[1][0]
        return 2.0 * _n(outputs[0]) * kh * kw * c_in
    if op_type == "Conv2DBackpropInput" and len(inputs) == 3 and len(inputs[1][0]) == 4:
        kh, kw, c_in, _ = inputs[1][0]
        return 2.0 * _n(inputs[2]) * kh * kw * c_in
    if op_type == "Conv2DBackpropFilter" and len(inputs) == 3 and len(outputs[0][0]) == 4:
        kh, kw, c_in, _ = outputs[0][0]
        return 2.0 * _n(inputs[2]) * kh * kw * c_in
    return None


def op_work(op_type: str, attrs: dict, inputs: list[Arg], outputs: list[Arg]) -> Work:
    """The FLOPs and bytes of one op (see the module docstring)."""
    if op_type in IDLE:
        return Work(0.0, 0, "idle")
    if op_type in VIEWS:
        return Work(0.0, 0, "view")
    traffic = _bytes(inputs) + _bytes(outputs)
    if op_type in MOVES:
        return Work(0.0, traffic, "move")
    out_n = sum(_n(o) for o in outputs)
    if op_type == "MatMul" and len(inputs) == 2 and all(len(a[0]) == 2 for a in inputs):
        return Work(matmul_flops(inputs[0][0], inputs[1][0], bool(attrs.get("transpose_a")),
                                 bool(attrs.get("transpose_b"))), traffic, "matrix")
    conv = _conv_flops(op_type, inputs, outputs)
    if conv is not None:
        return Work(conv, traffic, "matrix")
    if op_type in REDUCTIONS:
        flops = float(_n(inputs[0])) * REDUCTION_FLOPS if inputs else float(out_n)
    elif op_type == "AddN":
        flops = float(out_n * max(1, len(inputs) - 1))
    else:
        flops = float(out_n * PER_ELEMENT.get(op_type, 1))
    return Work(flops, traffic, "compute")

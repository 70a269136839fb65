"""Every op with a gradient, checked against central finite differences in float64.

For outputs ``o(x)`` and a random cotangent ``c`` (fed as ``grad_ys``), ``tf.gradients``
must give ``d sum(o * c) / dx`` as measured by perturbing each input element by ±eps.
``test_every_op_with_a_gradient_is_checked`` keeps this list complete: registering a new
gradient without adding a case here fails the suite.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest

import tfteach as tf
from tfteach.framework import registry

R = np.random.RandomState(7)
A = R.randn(2, 3)
A2 = R.randn(2, 3)
B = R.randn(3)
COL = R.randn(2, 1)
ROW = R.randn(1, 3)
POS = 0.5 + R.rand(2, 3)
AWAY = np.array([[0.7, -1.3, 0.4], [-0.6, 1.8, -0.25]])    # no entry near 0
X3 = R.randn(2, 3, 2)
WITH_ZERO = np.array([[1.5, 0.0, -2.0], [0.5, 1.2, 0.7]])
LOGITS = R.randn(4, 5)
PROBS = np.exp(R.randn(4, 5))
PROBS /= PROBS.sum(axis=1, keepdims=True)
IMG = R.randn(2, 4, 5, 2)            # NHWC images for convolution, pooling, normalisation
FILT = R.randn(3, 2, 2, 3)
DEPTH = R.randn(3)


@dataclass
class Case:
    op: str                      # the op type whose gradient this case checks
    build: Callable              # placeholders -> output tensor or list of outputs
    inputs: list                 # input arrays (float64 unless stated)
    wrt: list | None = None      # indices of inputs to differentiate (default: all float)
    shapes: list | None = None   # placeholder shapes (default: the inputs' shapes)
    eps: float = 1e-6
    rtol: float = 1e-5
    label: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.op}{'-' + self.label if self.label else ''}"


def _nested_loops(x, y, inner_count, in_cond=False):
    """Three outer iterations; the inner loop runs ``inner_count(i)`` times in iteration i
    (``in_cond``: only where i is odd, else the cond's other branch)."""
    def inner(i, a):
        return tf.while_loop(lambda j, b: j < inner_count(i),
                             lambda j, b: (j + 1, tf.sin(b) * x + y), [0, a])[1]

    def outer(i, a):
        if in_cond:
            return i + 1, tf.cond(tf.equal(i % 2, 1), lambda: inner(i, a), lambda: a * y)
        return i + 1, inner(i, a) * 0.5
    return tf.while_loop(lambda i, a: i < 3, outer, [0, x * y])[1]


def _raw(op_type: str):
    """Build ``op_type`` directly (for op types with no public function, e.g. AddV2)."""
    def build(x, y):
        return tf.get_default_graph().create_op(op_type, [x, y], {"T": x.dtype}).outputs[0]
    return build


CASES = [
    # elementwise binary, with and without broadcasting, static and dynamic shapes
    Case("Add", lambda x, y: x + y, [A, B], label="broadcast-row"),
    Case("Add", lambda x, y: x + y, [COL, ROW], label="both-broadcast"),
    Case("Add", lambda x, y: x + y, [A, B], shapes=[[None, None], [None]], label="dynamic"),
    Case("AddV2", _raw("AddV2"), [A, B]),
    Case("Sub", lambda x, y: x - y, [A, COL]),
    Case("Mul", lambda x, y: x * y, [A, B]),
    Case("Mul", lambda x, y: x * y, [A, ROW], shapes=[[None, 3], [1, None]], label="dynamic"),
    Case("RealDiv", lambda x, y: x / y, [A, POS]),
    Case("DivNoNan", tf.div_no_nan, [A, POS], label="broadcast"),
    Case("DivNoNan", tf.div_no_nan, [B, np.array([0.0, 2.0, -1.5])], wrt=[0],
         label="zero-divisor"),
    Case("Maximum", tf.maximum, [A, A2]),
    Case("Minimum", tf.minimum, [A, B]),
    Case("Pow", tf.pow, [POS, A]),
    Case("SquaredDifference", tf.squared_difference, [A, B]),
    Case("Select", lambda x, y: tf.where(tf.constant([[True, False, True], [False, True, True]]),
                                         x, y), [A, A2]),
    # elementwise unary
    Case("Neg", tf.negative, [A]),
    Case("Log", tf.log, [POS]),
    Case("Exp", tf.exp, [A]),
    Case("Sqrt", tf.sqrt, [POS]),
    Case("Rsqrt", tf.rsqrt, [POS]),
    Case("Square", tf.square, [A]),
    Case("Abs", tf.abs, [AWAY]),
    Case("Sign", lambda x: tf.sign(x) * x, [AWAY]),
    Case("Reciprocal", tf.reciprocal, [AWAY]),
    Case("Log1p", tf.log1p, [POS]),
    # matmul and sums of tensors
    Case("MatMul", tf.matmul, [A, R.randn(3, 4)]),
    Case("MatMul", lambda a, b: tf.matmul(a, b, transpose_a=True), [R.randn(3, 2), R.randn(3, 4)],
         label="ta"),
    Case("MatMul", lambda a, b: tf.matmul(a, b, transpose_b=True), [A, R.randn(4, 3)],
         label="tb"),
    Case("MatMul", lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
         [R.randn(3, 2), R.randn(4, 3)], label="ta-tb"),
    Case("AddN", lambda x, y: tf.add_n([x, y, x]), [A, A2]),
    # reductions
    Case("Sum", lambda x: tf.reduce_sum(x, 1), [A], label="axis1"),
    Case("Sum", lambda x: tf.reduce_sum(x, 0, keepdims=True), [A], label="keepdims"),
    Case("Sum", lambda x: tf.reduce_sum(x, [0, 2]), [X3], label="two-axes"),
    Case("Sum", lambda x: tf.reduce_sum(x, 1), [X3], shapes=[[None, 3, None]], label="dynamic"),
    Case("Sum", lambda x: tf.reduce_sum(x), [A], shapes=[None], label="unknown-rank"),
    Case("Mean", lambda x: tf.reduce_mean(x, -1), [A]),
    Case("Mean", lambda x: tf.reduce_mean(x, 0), [A], shapes=[[None, 3]], label="dynamic"),
    Case("Max", lambda x: tf.reduce_max(x, 1), [A]),
    Case("Min", lambda x: tf.reduce_min(x, 0, keepdims=True), [A]),
    Case("Prod", lambda x: tf.reduce_prod(x, 1), [WITH_ZERO]),
    Case("Prod", lambda x: tf.reduce_prod(x, [0, 1]), [WITH_ZERO], label="all"),
    # array ops
    Case("Identity", tf.identity, [A]),
    Case("PlaceholderWithDefault", lambda x: tf.placeholder_with_default(x * 2, [2, 3]), [A]),
    Case("Fill", lambda v: tf.fill([2, 3], v), [np.array(1.5)]),
    Case("Reshape", lambda x: tf.reshape(x, [3, 2]), [A]),
    Case("Reshape", lambda x: tf.reshape(x, [-1]), [A], shapes=[[None, 3]], label="dynamic"),
    Case("Transpose", lambda x: tf.transpose(x, [2, 0, 1]), [X3]),
    Case("Transpose", lambda x, p: tf.transpose(x, p), [X3, np.array([1, 2, 0], np.int32)],
         wrt=[0], label="fed-perm"),
    Case("ConcatV2", lambda x, y: tf.concat([x, y], 1), [A, R.randn(2, 2)]),
    Case("Split", lambda x: tf.split(x, 3, axis=1)[::2], [A]),
    Case("Cast", lambda x: tf.cast(tf.cast(x, tf.float32), tf.float64), [A], eps=1e-2,
         rtol=1e-4),
    Case("ExpandDims", lambda x: tf.expand_dims(x, 1), [A]),
    Case("Squeeze", lambda x: tf.squeeze(x), [COL]),
    Case("Pack", lambda x, y: tf.stack([x, y], axis=1), [A, A2]),
    Case("Unpack", lambda x: tf.unstack(x, axis=1)[1:], [A]),
    Case("Tile", lambda x: tf.tile(x, [2, 3]), [COL]),
    Case("Slice", lambda x: tf.slice(x, [0, 1], [2, 2]), [A]),
    Case("ReverseV2", lambda x: tf.reverse(x, [0, 1]), [A]),
    Case("StridedSlice", lambda x: x[:, ::-2], [A]),
    Case("StridedSlice", lambda x: x[1, None, 1:], [A], shapes=[[None, None]], label="dynamic"),
    Case("Pad", lambda x: tf.pad(x, [[1, 0], [0, 2]]), [A]),
    Case("BroadcastTo", lambda x: tf.broadcast_to(x, [2, 3]), [COL]),
    Case("BroadcastTo", lambda x: tf.broadcast_to(x, [4, 2, 3]), [B], label="new-axes"),
    # rows by index (tf.gather's gradient is an IndexedSlices, densified to compare)
    Case("GatherV2", lambda x: tf.gather(x, [2, 0, 2]), [R.randn(4, 3)]),
    Case("GatherV2", lambda x: tf.gather(x, [[1, 1], [0, 3]]), [R.randn(4, 3)],
         shapes=[[None, 3]], label="2d-indices-dynamic"),
    Case("GatherV2", lambda x: tf.gather(x, [2, 0, 2], axis=1), [X3], label="axis1"),
    Case("UnsortedSegmentSum", lambda x: tf.unsorted_segment_sum(x, [2, 0, -1, 2], 3),
         [R.randn(4, 2)]),
    Case("DynamicStitch", lambda x, y: tf.dynamic_stitch([[0, 2], [1]], [x, y]),
         [R.randn(2, 3), R.randn(1, 3)]),
    Case("ParallelDynamicStitch",
         lambda x, y: tf.parallel_dynamic_stitch([[3, 0], [1, 2]], [x, y]),
         [R.randn(2, 3), R.randn(2, 3)]),
    Case("FloorMod", tf.floormod, [np.array([[2.3, -1.7, 5.1], [0.4, 3.3, -2.2]]),
                                   np.array([[0.7, 0.9, 1.3], [1.1, 0.6, 0.8]])]),
    # nn
    Case("Relu", tf.nn.relu, [AWAY]),
    Case("Relu6", tf.nn.relu6, [AWAY * 4]),
    Case("Sigmoid", tf.nn.sigmoid, [A]),
    Case("Tanh", tf.nn.tanh, [A]),
    Case("Softplus", tf.nn.softplus, [A]),
    Case("Cos", tf.cos, [A]),
    Case("Sin", tf.sin, [A]),
    Case("Elu", tf.nn.elu, [AWAY]),
    Case("Selu", tf.nn.selu, [AWAY]),
    Case("Softmax", tf.nn.softmax, [LOGITS]),
    Case("Softmax", lambda x: tf.nn.softmax(x, axis=0), [LOGITS], label="axis0"),
    Case("LogSoftmax", tf.nn.log_softmax, [LOGITS]),
    Case("BiasAdd", tf.nn.bias_add, [A, B]),
    Case("BiasAdd", lambda x, b: tf.nn.bias_add(x, b, data_format="NCHW"), [X3, B],
         label="NCHW"),
    Case("L2Loss", tf.nn.l2_loss, [A]),
    Case("SoftmaxCrossEntropyWithLogits",
         lambda lg, lb: tf.nn.softmax_cross_entropy_with_logits_v2(labels=lb, logits=lg),
         [LOGITS, PROBS]),
    Case("SparseSoftmaxCrossEntropyWithLogits",
         lambda lg, lb: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=lb, logits=lg),
         [LOGITS, np.array([0, 4, 2, 2], np.int64)], wrt=[0]),
    # convolution, pooling, normalisation
    Case("Conv2D", lambda x, f: tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"), [IMG, FILT],
         label="same"),
    Case("Conv2D", lambda x, f: tf.nn.conv2d(x, f, [1, 2, 1, 1], "VALID", dilations=[1, 1, 2, 1]),
         [IMG, FILT], shapes=[[None, 4, 5, 2], [3, 2, 2, 3]], label="strided-dilated"),
    # 8 channels into 2: the kernels take the image a band of rows at a time
    Case("Conv2D", lambda x, f: tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME", dilations=[1, 2, 1, 1]),
         [R.randn(1, 5, 4, 8), R.randn(3, 2, 8, 2)], label="row-bands"),
    Case("Conv2D", lambda x, f: tf.nn.conv2d(x, f, [1, 2, 2, 1], "VALID", dilations=[1, 1, 2, 1]),
         [R.randn(2, 6, 7, 8), R.randn(3, 2, 8, 2)], label="row-bands-strided"),
    Case("Conv2DBackpropInput", lambda x, f: tf.nn.conv2d_transpose(
        x, f, [2, 8, 5, 3], [1, 2, 1, 1], "SAME"), [IMG, R.randn(3, 2, 3, 2)]),
    Case("DepthwiseConv2dNative", lambda x, f: tf.nn.depthwise_conv2d(
        x, f, [1, 2, 1, 1], "SAME", rate=[1, 2]), [IMG, R.randn(2, 3, 2, 2)]),
    Case("MaxPool", lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"), [IMG]),
    Case("AvgPool", lambda x: tf.nn.avg_pool(x, [1, 3, 2, 1], [1, 1, 2, 1], "SAME"), [IMG]),
    Case("LRN", lambda x: tf.nn.lrn(x, 1, bias=1.0, alpha=0.5, beta=0.75), [IMG]),
    Case("FusedBatchNormV3", lambda x, s, o: tf.nn.fused_batch_norm(x, s, o)[0],
         [IMG, DEPTH[:2], DEPTH[1:]], label="training"),
    Case("FusedBatchNormV3", lambda x, s, o: tf.nn.fused_batch_norm(
        x, s, o, [0.1, -0.2], [0.5, 2.0], is_training=False)[0], [IMG, DEPTH[:2], DEPTH[1:]],
        label="inference"),
    # control flow: a cond's Switch and Merge (each branch taken by the data's sign)
    Case("Switch", lambda x, y: tf.cond(tf.reduce_sum(x) > -100.0, lambda: x * y,
                                        lambda: tf.sin(x)), [A, B], label="true"),
    Case("Merge", lambda x, y: tf.cond(tf.reduce_sum(x) > 100.0, lambda: x * y,
                                       lambda: tf.sin(x) + y), [A, B], label="false"),
    # while loops nested in a loop's body (their gradient loops nest too): fixed counts, a
    # count that depends on the outer iteration, a loop in a cond in a loop
    Case("Merge", lambda x, y: _nested_loops(x, y, lambda i: 2), [A, B], label="loop-in-loop"),
    Case("Merge", lambda x, y: _nested_loops(x, y, lambda i: i), [A, B],
         label="run-time-inner-count"),
    Case("Merge", lambda x, y: _nested_loops(x, y, lambda i: i, in_cond=True), [A, B],
         label="loop-in-cond-in-loop"),
    # tf.gradients in a loop's body reaches x through its Enter (then differentiated again)
    Case("Enter", lambda x, y: tf.while_loop(lambda i, a: i < 2, lambda i, a: (
        i + 1, a + tf.gradients(tf.reduce_sum(tf.sin(a * x)), x)[0] * y),
        [0, tf.ones_like(x)])[1], [A, B]),
    # cumulative sums and products, top-k (distinct values: no ties to split)
    Case("Cumsum", lambda x: tf.cumsum(x, 1, exclusive=True, reverse=True), [A]),
    Case("Cumprod", lambda x: tf.cumprod(x, 0, reverse=True), [AWAY]),
    Case("TopKV2", lambda x: tf.nn.top_k(x, 2)[0], [A]),
    Case("Diag", lambda x: tf.diag(x), [A]),
    Case("DiagPart", lambda x: tf.diag_part(x), [R.randn(2, 3, 2, 3)]),
    Case("MatrixInverse", lambda x: tf.matrix_inverse(x), [np.eye(3) + 0.3 * R.randn(3, 3)]),
    Case("GatherNd", lambda x: tf.gather_nd(x, [[1, 2], [0, 0], [1, 2]]), [A]),
    Case("ScatterNd", lambda u: tf.scatter_nd([[0], [2], [0]], u, [4, 3]), [R.randn(3, 3)]),
    Case("ReverseSequence", lambda x: tf.reverse_sequence(x, [2, 0, 3], 1, 0),
         [R.randn(3, 4, 2)]),
    # TensorArrays: unstack (scatter) -> read / gather; write -> stack (gather)
    Case("TensorArrayScatterV3", lambda x: tf.TensorArray(x.dtype, 2).unstack(x).stack(), [A]),
    Case("TensorArrayReadV3", lambda x: tf.TensorArray(
        x.dtype, 2, clear_after_read=False).unstack(x).read(1) * x, [A]),
    Case("TensorArrayWriteV3", lambda x: tf.TensorArray(x.dtype, 2).write(0, x[1] * x[0])
         .write(1, tf.sin(x[0])).stack(), [A]),
    Case("TensorArrayGatherV3", lambda x: tf.TensorArray(x.dtype, 2).unstack(x)
         .gather([1, 0]) * x, [A]),
    Case("TensorArraySplitV3", lambda x: tf.TensorArray(x.dtype, 2, infer_shape=False)
         .split(x, [1, 2]).read(1) * x[:2], [R.randn(3, 2)]),
    Case("TensorArrayConcatV3", lambda x: tf.TensorArray(x.dtype, 2, infer_shape=False)
         .write(0, x[:1]).write(1, tf.sin(x)).concat(), [A]),
    # identities with a side: printing and numeric checks
    Case("Print", lambda x: tf.Print(x, [x], "x: ", first_n=0) * x, [A]),
    Case("CheckNumerics", lambda x: tf.check_numerics(x * x, "x squared"), [A]),
    # batched diagonals (tf.linalg.diag, diag_part, set_diag)
    Case("MatrixDiagV3", lambda x: tf.linalg.diag(x), [A]),
    Case("MatrixDiagPartV3", lambda x: tf.linalg.diag_part(x), [X3]),
    Case("MatrixSetDiagV3", lambda x, d: tf.linalg.set_diag(x, d), [X3, R.randn(2, 2)]),
    # einsum (a product, a reduction broadcast back) and sorted segment sums
    Case("Einsum", lambda x, y: tf.einsum("ij,jk->ik", x, y), [A, R.randn(3, 2)]),
    Case("Einsum", lambda x, y: tf.einsum("bij,k->bk", x, y), [X3, B], label="summed"),
    Case("Einsum", lambda x, y: tf.einsum("...ij,...jk->...ik", x, y), [X3, R.randn(1, 2, 2)],
         label="ellipsis-broadcast"),
    Case("SegmentSum", lambda x: tf.segment_sum(x, [0, 0, 2]), [R.randn(3, 2)]),
]


def _objective(sess, outs, feeds, cotangents) -> float:
    values = sess.run(outs, feeds)
    return float(sum(np.sum(v * c) for v, c in zip(values, cotangents)))


def _numeric(sess, outs, feeds, ph, cotangents, eps) -> np.ndarray:
    base = feeds[ph]
    grad = np.zeros_like(base, dtype=np.float64)
    for i in np.ndindex(base.shape):
        for sign in (1, -1):
            moved = base.copy()
            moved[i] += sign * eps
            grad[i] += sign * _objective(sess, outs, {**feeds, ph: moved}, cotangents)
    return grad / (2 * eps)


def _placeholders(case: Case) -> list:
    shapes = case.shapes or [a.shape for a in case.inputs]
    return [tf.placeholder(tf.as_dtype(a.dtype), shape=s) for a, s in zip(case.inputs, shapes)]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradient_matches_finite_differences(case: Case):
    phs = _placeholders(case)
    outs = case.build(*phs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    assert case.op in {op.type for op in tf.get_default_graph().get_operations()}, \
        f"case {case.id} does not build a {case.op} op"
    wrt = case.wrt if case.wrt is not None else list(range(len(phs)))
    feeds = {p: a for p, a in zip(phs, case.inputs)}
    with tf.Session() as sess:
        shapes = [np.shape(v) for v in sess.run(outs, feeds)]
        rng = np.random.RandomState(1)
        cotangents = [np.asarray(rng.randn(*s)) for s in shapes]
        grad_ys = [tf.placeholder(o.dtype) for o in outs]
        grads = tf.gradients(outs, [phs[i] for i in wrt], grad_ys=grad_ys)
        grads = [tf.convert_to_tensor(gr) if isinstance(gr, tf.IndexedSlices) else gr
                 for gr in grads]
        cot_feeds = {g: c.astype(o.dtype.np) for g, c, o in zip(grad_ys, cotangents, outs)}
        symbolic = sess.run(grads, {**feeds, **cot_feeds})
        for i, sym in zip(wrt, symbolic):
            num = _numeric(sess, outs, feeds, phs[i], cotangents, case.eps)
            np.testing.assert_allclose(sym, num, rtol=case.rtol, atol=case.rtol * 1e-2,
                                       err_msg=f"d/d input {i} of {case.id}")


def test_every_op_with_a_gradient_is_checked():
    with_gradient = {t for t in registry.registered_types() if registry.has_gradient(t)}
    checked = {c.op for c in CASES}
    assert with_gradient - checked == set(), "add a finite-difference case for these ops"
    assert checked - with_gradient == set(), "these cases check ops that have no gradient"

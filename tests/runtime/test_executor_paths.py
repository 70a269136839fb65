"""The executor's three paths agree: the compiled program, the synchronous ready queue and
the worker threads give the same values for every op type that tfteach registers.

Each example below builds a small graph for one family of ops and lists the runs to make
(fetches and feeds, in order, in one session: set-up runs first). Every example runs once
per path in a fresh session; the values of every run must be equal. Op types are covered
by the nodes the executor actually ran; a registered op type that no example runs fails
the coverage test, unless ``NOT_STANDALONE`` says why it cannot run on its own.
"""
from __future__ import annotations

import numpy as np
import pytest

import tfteach as tf
from tfteach.framework import registry
from tfteach.runtime.executor import Executor

NOT_STANDALONE = {
    "_Send": "needs a cluster step's rendezvous (tests/distributed run it)",
    "_Recv": "needs a cluster step's rendezvous (tests/distributed run it)",
    "Placeholder": "a fed placeholder is never run; an unfed one is refused before the run",
    "TFRecordDataset": "runs inside tf.data.TFRecordDataset's flat_map function, as in TF "
                       "(input_pipelines reads a file with it), never as a plan's node",
}

_F32 = np.float32


def _mat(*shape, start=0.5):
    return (np.arange(np.prod(shape), dtype=_F32).reshape(shape) / 7.0 + start)


def _grads(y, xs):
    return tf.gradients(tf.reduce_sum(y), xs)


# ---- examples: each returns a list of runs (fetches, feed_dict) -------------------------------
def unary_math():
    x = tf.placeholder(tf.float32, [2, 3])
    outs = [tf.abs(x - 1.0), tf.exp(x), tf.floor(x * 3.0), tf.log(x), tf.log1p(x), -x,
            tf.reciprocal(x), tf.rsqrt(x), tf.sigmoid(x), tf.sign(x - 1.0), tf.sqrt(x),
            tf.square(x), tf.tanh(x), tf.nn.relu(x - 1.0), tf.nn.relu6(x * 5.0),
            tf.nn.softplus(x)]
    return [(outs + _grads(tf.add_n(outs), [x]), {x: _mat(2, 3)})]


def binary_math():
    a, b = tf.constant(_mat(2, 3)), tf.constant(_mat(3, start=1.5))
    i, j = tf.constant([7, -7, 9]), tf.constant([2, 3, -4])
    outs = [a + b, tf.add(a, b), a - b, a * b, a / b, tf.pow(a, b), tf.maximum(a, b),
            tf.minimum(a, b), tf.squared_difference(a, b), tf.floordiv(i, j),
            tf.floormod(i, j), tf.truncatemod(i, j), tf.equal(i, j), tf.not_equal(i, j), tf.greater(a, b),
            tf.greater_equal(a, b), tf.less(a, b), tf.less_equal(a, b),
            tf.logical_and(a > 1.0, b > 1.6), tf.logical_or(a > 1.0, b > 1.6),
            tf.logical_not(a > 1.0), tf.where(a > a * 0.9, a, a * 2.0)]
    add_v2 = a.graph.create_op("AddV2", [a, a], {"T": tf.float32}).outputs[0]  # TF's graphs'
    u = tf.placeholder(tf.float32, None)              # unknown shapes: BroadcastGradientArgs
    grads = _grads(a * b + a / b + tf.pow(a, b), [a, b]) + _grads(u * a, [u])
    return [(outs + [add_v2] + grads, {u: _mat(3)})]


def reductions_and_matmul():
    a = tf.constant(_mat(3, 4))
    w = tf.constant(_mat(4, 2))
    bias = tf.constant(_mat(2))
    y = tf.nn.bias_add(tf.matmul(a, w), bias)
    outs = [tf.reduce_sum(a, 1), tf.reduce_mean(a, 0), tf.reduce_max(a), tf.reduce_min(a, 1),
            tf.reduce_prod(a, 1), tf.argmax(a, 1), tf.argmin(a, 0), tf.add_n([a, a, a]),
            tf.nn.l2_loss(a), y]
    return [(outs + _grads(tf.reduce_prod(a, 1) + 0.0, [a]) + _grads(y, [a, w, bias]), {})]


def shapes_and_slices():
    x = tf.constant(_mat(2, 3, 4))
    parts = tf.split(x, 2, axis=2)
    outs = [tf.identity(x), tf.stop_gradient(x), tf.reshape(x, [6, 4]), tf.shape(x),
            tf.size(x), tf.rank(x), tf.expand_dims(x, 0), tf.squeeze(tf.expand_dims(x, 0)),
            tf.transpose(x, [2, 0, 1]), tf.invert_permutation([2, 0, 1]),
            tf.concat(parts, 0), tf.stack([x, x]), tf.unstack(x)[1], parts[1],
            tf.slice(x, [0, 1, 1], [2, 2, 2]), tf.pad(x, [[0, 1], [1, 0], [0, 0]]),
            tf.tile(x, [1, 2, 1]), tf.broadcast_to(tf.constant([1.0, 2.0]), [3, 2]),
            tf.fill([2, 2], 3.0), tf.zeros_like(x), tf.ones_like(x), tf.range(1, 10, 2),
            tf.one_hot([0, 2, 1], 3), tf.cast(x, tf.int32), x[1, ::-1, 1:], tf.shape(x)[0]]
    grads = _grads(tf.concat([x, x * 2.0], 1), [x]) + _grads(tf.transpose(x, [1, 0, 2]), [x]) \
        + _grads(x[:, None, ::2], [x])
    return [(outs + grads, {})]


def gather_and_segments():
    data = tf.constant(_mat(5, 3))
    idx = tf.constant([4, 0, 2])
    out = tf.gather(data, idx)
    rows = [tf.gather(data, [0, 1]), tf.gather(data, [2, 3])]
    stitched = tf.dynamic_stitch([[0, 2], [1, 3]], rows)
    par = tf.parallel_dynamic_stitch([[1, 0]], rows[:1])
    parts = tf.dynamic_partition(data, [0, 1, 0, 1, 1], 2)
    seg = tf.unsorted_segment_sum(data, [1, 0, 1, 2, 0], 3)
    uniq, where = tf.unique(tf.constant([3, 1, 3, 2, 1]))
    return [([out, stitched, par, parts[0], parts[1], seg, uniq, where]
             + _grads(out * 2.0, [data]), {})]


def softmax_and_losses():
    logits = tf.constant(_mat(3, 4))
    labels = tf.constant(np.eye(4, dtype=_F32)[[0, 3, 1]])
    dense = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant([0, 3, 1]),
                                                            logits=logits)
    outs = [tf.nn.softmax(logits), tf.nn.log_softmax(logits), dense, sparse]
    return [(outs + _grads(dense + sparse, [logits]), {})]


def conv_nets():
    x = tf.placeholder(tf.float32, [2, 5, 4, 3])
    f = tf.constant(_mat(3, 2, 3, 4) - 2.0)
    conv = tf.nn.conv2d(x, f, [1, 2, 1, 1], "SAME")
    pooled = tf.nn.avg_pool(tf.nn.max_pool(conv, [1, 2, 2, 1], [1, 1, 1, 1], "VALID"),
                            [1, 2, 2, 1], [1, 1, 1, 1], "SAME")
    normed, _, _ = tf.nn.fused_batch_norm(tf.nn.lrn(pooled, 1, alpha=0.1), tf.ones([4]),
                                          tf.zeros([4]))
    return [([normed] + _grads(normed * normed, [x, f]), {x: _mat(2, 5, 4, 3)})]


def random_ops():
    outs = [tf.random_uniform([3], seed=1), tf.random_normal([3], seed=2),
            tf.truncated_normal([3], seed=3), tf.random_shuffle(tf.range(6), seed=4)]
    return [(outs, {})]


def variables_and_scatter():
    v = tf.Variable(_mat(4, 2), name="v")
    n = tf.Variable(0, name="n")
    d = tf.placeholder_with_default(tf.constant(2.0), [])
    updates = [tf.assign(v, v * d), tf.assign_sub(v, tf.ones([4, 2])),
               tf.scatter_add(v, [0, 2], tf.ones([2, 2])),
               tf.scatter_sub(v, [1], tf.ones([1, 2])),
               tf.scatter_update(v, [3], tf.zeros([1, 2]))]
    return [([tf.is_variable_initialized(v)], {}), (tf.global_variables_initializer(), {}),
            ([tf.assign_add(v, tf.ones([4, 2])), tf.count_up_to(n, 5),
              tf.is_variable_initialized(v)], {})] + \
        [([u], {}) for u in updates] + [(tf.group(*updates[:1]), {}), ([v.value()], {})]


def _training(make_optimizer):
    emb = tf.Variable(_mat(5, 2), name="emb")
    w = tf.Variable(_mat(2, 1), name="w")
    loss = tf.reduce_sum(tf.matmul(tf.gather(emb, [0, 3]), w))
    train = make_optimizer().minimize(loss)
    return [(tf.global_variables_initializer(), {}), (train, {}), (train, {}),
            ([emb.value(), w.value()], {})]


def optimizers():
    runs = []
    for make in (lambda: tf.train.GradientDescentOptimizer(0.1),
                 lambda: tf.train.MomentumOptimizer(0.1, 0.9),
                 lambda: tf.train.AdagradOptimizer(0.1),
                 lambda: tf.train.AdamOptimizer(0.1),
                 lambda: tf.train.RMSPropOptimizer(0.1),
                 lambda: tf.train.RMSPropOptimizer(0.1, centered=True)):
        with tf.variable_scope(None, default_name="opt"):
            runs += _training(make)
    return runs


def queues():
    q = tf.FIFOQueue(10, [tf.float32, tf.int32], shapes=[[2], []])
    return [(q.enqueue_many([_mat(3, 2), [1, 2, 3]]), {}),
            (q.enqueue([_mat(2), 4]), {}),
            ([q.size()], {}), (q.dequeue(), {}), (q.dequeue_many(2), {}), (q.close(), {}),
            (q.dequeue(), {}), ([q.size()], {})]


def accumulators():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    sparse = tf.SparseConditionalAccumulator(tf.float32, shape=[3, 2])
    grad = tf.IndexedSlices(tf.constant(_mat(1, 2)), tf.constant([1]), tf.constant([3, 2]))
    taken = sparse.take_indexed_slices_grad(1)
    return [(acc.apply_grad(_mat(2), local_step=0), {}),
            (acc.apply_grad(_mat(2, start=2.0), local_step=0), {}),
            ([acc.num_accumulated()], {}), ([acc.take_grad(2)], {}),
            (acc.set_global_step(5), {}), (acc.cancel_waiting_takes(), {}),
            (sparse.apply_indexed_slices_grad(grad, local_step=0), {}),
            ([taken.indices, taken.values, taken.dense_shape], {})]


def activations_and_summaries():
    x = tf.placeholder(tf.float32, [2, 3])
    outs = [tf.cos(x), tf.sin(x), tf.nn.elu(x - 1.0), tf.nn.selu(x - 1.0),
            tf.div_no_nan(x, x - _mat(2, 3))]
    summaries = [tf.summary.scalar("loss", tf.reduce_sum(x)), tf.summary.histogram("x", x),
                 tf.summary.image("img", tf.reshape(x, [1, 2, 3, 1])),
                 tf.summary.text("note", tf.constant("hi"))]
    return [(outs + _grads(tf.add_n(outs), [x]) + [tf.summary.merge(summaries)],
             {x: _mat(2, 3)})]


def input_pipelines():
    import tempfile
    path = tempfile.NamedTemporaryFile("wb", suffix=".csv", delete=False)
    with path:
        path.write(b"1,2.5\n3,4.5\n")
    images = tf.constant(_mat(1, 3, 4, 2))
    ds = tf.data.Dataset.from_tensor_slices((_mat(5, 2), np.arange(5))).map(
        lambda x, y: (tf.reverse(x, [0]), y)).filter(lambda x, y: y < 4).shuffle(
        3, seed=1).repeat(2).skip(1).take(6).batch(2).prefetch(1)
    lines = tf.data.TextLineDataset(path.name).map(lambda r: tf.decode_csv(r, [[0], [0.0]]))
    it = tf.data.Iterator.from_structure(lines.output_types, lines.output_shapes)
    more = tf.data.Dataset.range(3).repeat(2)
    fixed = tf.data.Dataset.from_tensors(np.arange(3))
    pairs = tf.data.Dataset.zip((tf.data.Dataset.range(4), tf.data.Dataset.range(4)))
    joined = pairs.shard(2, 1).concatenate(pairs.take(1)).cache().padded_batch(2, ([], []))
    generated = tf.data.Dataset.from_generator(lambda: iter([[1, 2], [3, 4]]), tf.int32, [2])
    with tf.python_io.TFRecordWriter(path.name + ".tfrecord") as writer:
        writer.write(b"record")
    records = tf.data.TFRecordDataset([path.name + ".tfrecord"] * 2).batch(2)
    flat = tf.data.Dataset.range(1, 4).flat_map(lambda n: tf.data.Dataset.range(n)).interleave(
        lambda i: tf.data.Dataset.from_tensors(i).repeat(2), cycle_length=2).batch(9)
    names = tf.FIFOQueue(4, tf.string)
    key, value = tf.TextLineReader().read(names)
    whole = tf.WholeFileReader().read(names)
    rec = tf.FixedLengthRecordReader(4).read(names)
    shuffle = tf.RandomShuffleQueue(10, 2, tf.int32, shapes=[], seed=3)
    return [(tf.data.make_one_shot_iterator(ds).get_next(), {}),
            (it.make_initializer(lines), {}), (it.get_next(), {}),
            (tf.data.make_one_shot_iterator(more).get_next(), {}),
            (tf.data.make_one_shot_iterator(fixed).get_next(), {}),
            (tf.data.make_one_shot_iterator(joined).get_next(), {}),
            (tf.data.make_one_shot_iterator(flat).get_next(), {}),
            (tf.data.make_one_shot_iterator(records).get_next(), {}),
            (tf.data.Iterator.from_string_handle(
                tf.data.make_one_shot_iterator(generated).string_handle(), tf.int32,
                [2]).get_next(), {}),
            (names.enqueue_many([[path.name] * 3]), {}),
            ([key, value] + tf.decode_csv(value, [[0], [0.0]]), {}),
            (list(whole), {}), ([tf.decode_raw(rec[1], tf.int32)], {}),
            ([tf.TextLineReader().num_records_produced()], {}),
            (shuffle.enqueue_many([np.arange(5, dtype=np.int32)]), {}),
            (shuffle.dequeue_up_to(2), {}), (shuffle.close(), {}), (shuffle.dequeue_up_to(5), {}),
            ([tf.image.resize_images(images, [5, 3]), tf.image.adjust_contrast(images, 2.0),
              tf.image.resize_images(images, [2, 7], method=1), tf.reverse(images, [2])], {})]


def control_flow():
    """cond (a RefSwitch for the assign), while_loop (one in another's body too) and their
    gradients: every path runs them in frames."""
    x = tf.placeholder(tf.float32, [2, 3])
    p = tf.placeholder(tf.bool, [])
    v = tf.Variable(np.zeros((2, 3), _F32))
    y = tf.cond(p, lambda: tf.assign(v, x) * 2.0, lambda: tf.sin(x))
    z = tf.cond(p, lambda: x * x, lambda: tf.sin(x))
    c = tf.case([(p, lambda: x * 3.0), (tf.logical_not(p), lambda: x - 1.0)])   # Asserts
    count = tf.Variable(0.0)

    def body(i, a):
        with tf.control_dependencies([tf.assign_add(count, 1.0)]):      # a RefEnter
            return i + 1, a * x
    _, w = tf.while_loop(lambda i, a: i < 3, body, [0, tf.ones_like(x)])
    # a loop in a loop's body: its gradient keeps history by iteration path (i, j)
    _, nested = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tf.while_loop(
        lambda j, b: j < i, lambda j, b: (j + 1, b * x), [0, a])[1]), [0, x])
    runs = [([y, z, w, c, nested] + _grads(z + w + nested, [x]), {x: _mat(2, 3), p: flag})
            for flag in (True, False)]
    return [([v.initializer, count.initializer], {})] + runs + [([count], {})]


def indexing_and_scans():
    """Bool reductions, float classes, top-k, scans, diagonals, inverse, nd indexing."""
    x = tf.placeholder(tf.float32, [3, 3])
    b = x > 0.5
    values, indices = tf.nn.top_k(x, 2)
    fetches = [tf.reduce_all(b, 1), tf.reduce_any(b, 0), tf.is_nan(x), tf.is_inf(x),
               tf.is_finite(x), values, indices, tf.nn.in_top_k(x, [0, 1, 2], 2),
               tf.cumsum(x, 1), tf.cumprod(x, 0), tf.diag(tf.constant([1.0, 2.0])),
               tf.diag_part(x), tf.matrix_inverse(x + tf.diag(tf.constant([3.0, 3.0, 3.0]))),
               tf.gather_nd(x, [[0, 1], [2, 2]]),
               tf.scatter_nd([[1], [0]], tf.constant([5.0, 6.0]), [3])]
    return [(fetches, {x: _mat(3, 3)})]


def checks_and_more_math():
    """Printing, numeric checks and the array and math ops TF 1.x programs often use."""
    x = tf.placeholder(tf.float32, [2, 3])
    printed = tf.Print(x, [x], "x: ", first_n=1)
    shown = tf.print("x:", x, output_stream="stdout")
    fetches = [printed, tf.check_numerics(x, "x"), tf.boolean_mask(x, x > 1.0),
               tf.eye(3), tf.eye(2, 3), tf.linalg.diag_part(x), *tf.setdiff1d([1, 2, 3], [2]),
               tf.bincount([1, 1, 3]), tf.einsum("ij,kj->ik", x, x), tf.segment_sum(x, [0, 0]),
               tf.multinomial(tf.zeros([2, 3]), 4, seed=1)]
    return [(fetches, {x: _mat(2, 3)}), ([shown], {x: _mat(2, 3)}),
            (tf.check_numerics(x / 0.0, "x / 0"), {x: _mat(2, 3)})]


def tensor_arrays():
    """TensorArrays in and out of a while loop (map_fn), their gradients, a dynamic size;
    reverse_sequence (what bidirectional RNNs use)."""
    x = tf.placeholder(tf.float32, [3, 2])
    m = tf.map_fn(lambda r: r * r, x)
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(0, x[0]).write(2, x[2])
    close = tf.TensorArray(tf.float32, size=1).close()
    pieces = tf.TensorArray(tf.float32, size=2, infer_shape=False).split(x, [1, 2]).concat()
    r = tf.reverse_sequence(x, [3, 1], seq_axis=0, batch_axis=1)
    return [([m, r, pieces, ta.gather([2, 0]), ta.size(), ta.read(1)] +
             _grads(m + r + pieces, [x]),
             {x: _mat(3, 2)}), ([close], {})]


def conv_variants():
    """Transposed, 1-D, depthwise and separable convolutions and their gradients."""
    x = tf.placeholder(tf.float32, [2, 4, 5, 2])
    f = tf.constant(_mat(3, 2, 2, 2))
    ys = [tf.nn.conv2d_transpose(x, f, [2, 8, 10, 2], [1, 2, 2, 1]),
          tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME"),
          tf.nn.separable_conv2d(x, f, tf.constant(_mat(1, 1, 4, 3)), [1, 1, 1, 1], "VALID"),
          tf.nn.conv1d(x[:, 0], f[0], 1, "SAME")] + tf.shape_n([x, f])
    return [(ys + _grads(tf.add_n([tf.reduce_sum(y) for y in ys[:4]]), [x, f]),
             {x: _mat(2, 4, 5, 2)})]


EXAMPLES = [unary_math, binary_math, reductions_and_matmul, shapes_and_slices,
            gather_and_segments, softmax_and_losses, conv_nets, random_ops, variables_and_scatter,
            optimizers, queues, accumulators, activations_and_summaries, input_pipelines,
            control_flow, indexing_and_scans, checks_and_more_math]
EXAMPLES += [tensor_arrays, conv_variants]


# ---- running them -----------------------------------------------------------------------------
def _build(example):
    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):
        runs = example()
    return graph, runs


def _run_all(graph, runs, mode):
    """Every run's values in a fresh session whose executor takes the path ``mode``, and the
    op types of the nodes it ran."""
    sess = tf.Session(graph=graph)
    sess._executor.close()
    sess._executor = Executor(mode)
    values = []
    with sess:
        for fetches, feed in runs:
            values.append(_outcome(sess, fetches, feed))
        ran = {n.type for plan in sess._plans.values() for n in plan.nodes}
        inline = all(plan.run_inline for plan in sess._plans.values())
    return values, ran, inline


def _outcome(sess, fetches, feed):
    try:
        return sess.run(fetches, feed)
    except tf.errors.OpError as e:      # an error is an outcome too (a closed, empty queue)
        return (type(e).__name__, e.message)


def _assert_same(a, b, path):
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{path}[{k}]")
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=path)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.__name__)
def test_the_three_paths_give_the_same_values(example):
    graph, runs = _build(example)
    sync, _, inline = _run_all(graph, runs, "sync")
    threaded, _, _ = _run_all(graph, runs, "threaded")
    _assert_same(sync, threaded, "threaded")
    if inline:                            # no waiting kernels: the program path applies
        program, _, _ = _run_all(graph, runs, "program")
        _assert_same(sync, program, "program")


def test_every_registered_op_type_runs_in_an_example():
    ran: set = set()
    for example in EXAMPLES:
        ran |= _run_all(*_build(example), "sync")[1]
    ours = {t for t in registry.registered_types()
            if (registry.get(t).kernel is not None
                and registry.get(t).kernel.__module__.startswith("tfteach."))}
    assert sorted(ours - ran - set(NOT_STANDALONE)) == []


def test_the_sync_path_runs_every_node_on_the_callers_thread():
    import threading

    x = tf.placeholder(tf.float32, [])
    with tf.device("/cpu:0"):
        a = x * 2.0
    with tf.device("/gpu:1"):
        b = x + 1.0
    sess = tf.Session()
    sess._executor = Executor("sync")
    md = tf.RunMetadata()
    sess.run(a + b, {x: 1.0}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=md)
    threads = {n.thread_id for d in md.step_stats.dev_stats for n in d.node_stats}
    assert threads == {threading.get_ident()}


def test_a_dequeue_times_out_on_the_sync_path_with_deadline_exceeded():
    with tf.device("/cpu:0"):
        q = tf.FIFOQueue(1, tf.float32, name="q")
        deq = q.dequeue()
    sess = tf.Session()
    sess._executor = Executor("sync")
    with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting in q_Dequeue"):
        sess.run(deq, options=tf.RunOptions(timeout_in_ms=100))
    sess.run(q.enqueue(1.0))
    assert sess.run(deq) == 1.0           # the timed-out dequeue took nothing


def test_an_unknown_executor_mode_is_refused():
    with pytest.raises(ValueError, match="one of"):
        Executor("fast")

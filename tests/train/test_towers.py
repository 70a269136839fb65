"""The multi-GPU tower pattern of TF's CIFAR-10 tutorial, on the shipped digits: variables
on /cpu:0, one tower per (virtual) GPU sharing them through variable-scope reuse, the
towers' gradients averaged on /cpu:0 and applied there."""
import pytest

import tfteach as tf
from tfteach.data import batches, load_digits

TOWERS = 2


def _variable_on_cpu(name, shape, initializer):
    with tf.device("/cpu:0"):
        return tf.get_variable(name, shape, initializer=initializer)


def _model(x):
    """64-64-10 MLP; its variables live on the CPU whatever device runs the maths."""
    with tf.variable_scope("hidden"):
        w = _variable_on_cpu("weights", [64, 64], tf.glorot_uniform_initializer())
        b = _variable_on_cpu("biases", [64], tf.zeros_initializer())
        h = tf.nn.relu(tf.matmul(x, w) + b)
    with tf.variable_scope("softmax_linear"):
        w = _variable_on_cpu("weights", [64, 10], tf.glorot_uniform_initializer())
        b = _variable_on_cpu("biases", [10], tf.zeros_initializer())
        return tf.matmul(h, w) + b


def _tower_loss(x, y):
    logits = _model(x)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))


def _average_gradients(tower_grads):
    averaged = []
    for grads_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grads_and_vars]
        grad = tf.reduce_mean(tf.concat(grads, 0), 0)
        averaged.append((grad, grads_and_vars[0][1]))
    return averaged


def _build():
    tf.set_random_seed(0)
    with tf.device("/cpu:0"):
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.AdamOptimizer(0.005)
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        xs, ys = tf.split(x, TOWERS), tf.split(y, TOWERS)
        tower_grads = []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(TOWERS):
                with tf.device(f"/gpu:{i}"), tf.name_scope(f"tower_{i}"):
                    loss = _tower_loss(xs[i], ys[i])
                    tf.get_variable_scope().reuse_variables()
                    tower_grads.append(opt.compute_gradients(loss))
        train_op = opt.apply_gradients(_average_gradients(tower_grads), global_step=global_step)
        with tf.variable_scope(tf.get_variable_scope(), reuse=True):
            correct = tf.equal(tf.argmax(_model(x), 1), y)
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    return x, y, train_op, accuracy, global_step


@pytest.mark.slow
def test_two_gpu_towers_train_a_digits_mlp_to_95_percent():
    (x_train, y_train), (x_test, y_test) = load_digits()
    x_train, x_test = x_train / 16.0, x_test / 16.0
    x, y, train_op, accuracy, global_step = _build()
    assert len(tf.trainable_variables()) == 4            # the towers share one set
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(25):
            for bx, by in batches(x_train, y_train, 64, seed=epoch):
                if len(bx) % TOWERS:
                    continue
                sess.run(train_op, {x: bx, y: by})
        sess.run(train_op, {x: x_train[:64], y: y_train[:64]},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=meta)
        test_accuracy = sess.run(accuracy, {x: x_test, y: y_test})
        steps = sess.run(global_step)
    print(f"\ntower training: {steps} steps, test accuracy {test_accuracy:.4f}")
    assert test_accuracy >= 0.95
    placed = meta.placement
    assert placed["tower_0/hidden/MatMul"].endswith("device:GPU:0")
    assert placed["tower_1/hidden/MatMul"].endswith("device:GPU:1")
    grad_w = "tower_1/gradients/tower_1/hidden/MatMul_grad/MatMul_1"
    assert placed[grad_w].endswith("device:GPU:1")
    assert placed["hidden/weights"].endswith("device:CPU:0")
    assert placed["Adam/update_hidden/weights/ApplyAdam"].endswith("device:CPU:0")
    assert placed["hidden/weights/Adam"].endswith("device:CPU:0")
    busy = {d.device.split("/")[-1] for d in meta.step_stats.dev_stats if d.node_stats}
    assert busy >= {"device:GPU:0", "device:GPU:1", "device:CPU:0"}

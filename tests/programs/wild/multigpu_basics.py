"""Multi-GPU basics in the shape of the example repositories' multigpu_basics: A^n + B^n
computed on one GPU, then on two, the sum on the CPU, with log_device_placement.

On a machine without GPUs (this one, and CI) the first session fails to place the
``/gpu:0`` ops as TF does; the learner adds allow_soft_placement and the rest runs on the
CPU. Small matrices instead of 10000x10000; the sum's checksum instead of the timings.
"""
import datetime

import numpy as np

from wild_tf import tf

log_device_placement = True
n = 4
rng = np.random.RandomState(0)
A = (rng.rand(64, 64) / 32).astype("float32")
B = (rng.rand(64, 64) / 32).astype("float32")
c1 = []
c2 = []


def matpow(M, n):
    if n < 1:
        return M
    return tf.matmul(M, matpow(M, n - 1))


with tf.device("/gpu:0"):
    a = tf.placeholder(tf.float32, [64, 64])
    b = tf.placeholder(tf.float32, [64, 64])
    c1.append(matpow(a, n))
    c1.append(matpow(b, n))
with tf.device("/cpu:0"):
    sum = tf.add_n(c1)

t1_1 = datetime.datetime.now()
try:
    with tf.Session(config=tf.ConfigProto(log_device_placement=log_device_placement)) as sess:
        sess.run(sum, {a: A, b: B})
except tf.errors.InvalidArgumentError as e:
    print("single GPU run failed:", type(e).__name__)
t2_1 = datetime.datetime.now()

tf.reset_default_graph()
with tf.device("/gpu:0"):
    a = tf.placeholder(tf.float32, [64, 64])
    c2.append(matpow(a, n))
with tf.device("/gpu:1"):
    b = tf.placeholder(tf.float32, [64, 64])
    c2.append(matpow(b, n))
with tf.device("/cpu:0"):
    sum = tf.add_n(c2)

t1_2 = datetime.datetime.now()
config = tf.ConfigProto(log_device_placement=log_device_placement, allow_soft_placement=True)
with tf.Session(config=config) as sess:
    total = sess.run(sum, {a: A, b: B})
t2_2 = datetime.datetime.now()
print("A^n + B^n checksum: %.6e" % total.sum())
print("multi GPU time is a timedelta:", isinstance(t2_2 - t1_2, datetime.timedelta))

"""The blocks of TF 1.x's "Using GPUs" guide, one after another in one script: logging
device placement, manual placement on the CPU, a soft-placed matmul, and at the end a
device that does not exist, which ends the program with TF's error (uncaught, as a
learner's script would).
"""
from wild_tf import tf


def matrices():
    """The guide's two constants, a (2x3) and b (3x2)."""
    return (tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name="a"),
            tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name="b"))


# Logging device placement
a, b = matrices()
c = tf.matmul(a, b)
sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
print(sess.run(c))

# Manual device placement
tf.reset_default_graph()
with tf.device("/cpu:0"):
    a, b = matrices()
c = tf.matmul(a, b, name="manual")
sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
print(sess.run(c))

# Allowing soft placement
tf.reset_default_graph()
with tf.device("/device:GPU:2"):
    a, b = matrices()
    c = tf.matmul(a, b, name="soft")
sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True, log_device_placement=True))
print(sess.run(c))

# The same without soft placement: no such device
sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
print(sess.run(c))

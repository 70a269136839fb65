"""The host/worker tutorial's client with large tensors: a 1 MiB feed goes to worker 1,
its product to worker 0, and a 1 MiB result comes back (what shared memory carries between
tasks of one host). ``python big_tensors.py`` in the folder of the pair's config.json."""
import json

import numpy as np

import tfteach as tf

with open("config.json") as f:
    cluster_def = json.load(f)

rng = np.random.RandomState(0)
value = rng.uniform(-1, 1, size=(512, 512)).astype(np.float32)

x = tf.placeholder(tf.float32, [512, 512])
with tf.device("/job:worker/task:1"):
    y1 = tf.matmul(x, x)
with tf.device("/job:worker/task:0"):
    y = y1 * 0.5 + x

with tf.Session("grpc://" + cluster_def["worker"][0]) as sess:
    for _ in range(3):
        result = sess.run(y, feed_dict={x: value})
    print("%.3f %.3f" % (float(result.sum()), float(np.abs(result).max())))

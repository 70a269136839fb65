"""A worker whose ps was never started: CreateSession waits for it.

Usage: unreachable_ps.py PS_PORT WORKER_PORT TIMEOUT_MS
"""
import sys

import tfteach as tf

cluster = tf.train.ClusterSpec({"ps": ["localhost:" + sys.argv[1]],
                                "worker": ["localhost:" + sys.argv[2]]})
server = tf.train.Server(cluster, job_name="worker", task_index=0)
with tf.device("/job:ps/task:0"):
    v = tf.Variable(1.0, name="v")
config = tf.ConfigProto(operation_timeout_in_ms=int(sys.argv[3]))
with tf.Session(server.target, config=config) as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(v))

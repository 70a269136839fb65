"""Two tasks of the job "local": this process is task 0; task 1 runs elsewhere.

Usage: local_two_tasks.py PORT0 PORT1
"""
import sys

import tfteach as tf

cluster = tf.train.ClusterSpec({"local": ["localhost:" + sys.argv[1],
                                          "localhost:" + sys.argv[2]]})
server = tf.train.Server(cluster, job_name="local", task_index=0)

x = tf.constant(2)
with tf.device("/job:local/task:1"):
    y2 = x - 66
with tf.device("/job:local/task:0"):
    y1 = x + 300
    y = y1 + y2

with tf.Session(server.target) as sess:
    print(sess.run(y))

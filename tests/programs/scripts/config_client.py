"""The host/worker tutorial's client: ops on both workers, the session on worker 0."""
import json

import tfteach as tf

with open("config.json") as f:
    cluster_def = json.load(f)

x = tf.constant(2)

with tf.device("/job:worker/task:1"):
    y2 = x - 66

with tf.device("/job:worker/task:0"):
    y1 = x + 300
    y = y1 + y2

with tf.Session("grpc://" + cluster_def["worker"][0]) as sess:
    result = sess.run(y)
    print(result)

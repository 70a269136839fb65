"""Everything left open: a LocalCluster, a grpc:// session on it, an in-process server and
a MonitoredTrainingSession on that server. ``left_open.py [end|raise|wait]`` then ends
normally, raises, or waits (for a signal, or for its kernel to be shut down)."""
import sys
import time

import tfteach as tf
from tfteach.cluster import LocalCluster

cluster = LocalCluster(ps=1, workers=1)
with tf.device("/job:ps/task:0"):
    v = tf.Variable(tf.ones([256, 256]), name="v")     # 256 KiB: shared memory between tasks
with tf.device("/job:worker/task:0"):
    total = tf.reduce_sum(v * 2.0)
sess = tf.Session(cluster.target())
sess.run(tf.global_variables_initializer())
print(sess.run(total))

server = tf.train.Server.create_local_server()
with tf.Graph().as_default():
    step = tf.train.get_or_create_global_step()
    train = tf.assign_add(step, 1)
    mon = tf.train.MonitoredTrainingSession(master=server.target)
    print(mon.run(train))

how = sys.argv[1] if len(sys.argv) > 1 else "end"
if how == "raise":
    raise RuntimeError("the learner's bug")
if how == "wait":
    print("waiting", flush=True)
    time.sleep(600)

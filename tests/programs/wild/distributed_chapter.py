"""A distributed-TensorFlow notebook chapter run as one script, in the shape of the
chapters of public TF 1.x courses: a ClusterSpec of one ps and two workers, all three
servers started in this process, variables pinned to the ps, a computation on each worker
task, run through a session on worker 0's target, with the placement logged; then a
second session on the other worker's target sees the same variable values (variables live
on the ps and outlive sessions); then a parameter-server update from both workers.

    distributed_chapter.py PORT,PORT,PORT
"""
import sys

import numpy as np

from wild_tf import tf

ports = sys.argv[1].split(",")
cluster = tf.train.ClusterSpec({"ps": ["localhost:" + ports[0]],
                                "worker": ["localhost:" + ports[1], "localhost:" + ports[2]]})
ps = tf.train.Server(cluster, job_name="ps", task_index=0)
worker0 = tf.train.Server(cluster, job_name="worker", task_index=0)
worker1 = tf.train.Server(cluster, job_name="worker", task_index=1)
print("cluster jobs:", sorted(cluster.jobs), "workers:", cluster.num_tasks("worker"))

with tf.device("/job:ps/task:0"):
    weights = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="weights")
    counter = tf.Variable(0, name="counter")
with tf.device("/job:worker/task:0"):
    x0 = tf.constant([[1.0, 2.0, 3.0]], name="x0")
    y0 = tf.matmul(x0, weights, name="y0")
with tf.device("/job:worker/task:1"):
    x1 = tf.constant([[0.5, -1.0, 2.0]], name="x1")
    y1 = tf.matmul(x1, weights, name="y1")
with tf.device("/job:worker/task:0"):
    total = tf.add_n([y0, y1], name="total")
bump = tf.assign_add(counter, 1)

config = tf.ConfigProto(log_device_placement=True)
with tf.Session(worker0.target, config=config) as sess:
    sess.run(tf.global_variables_initializer())
    print("y0:", sess.run(y0).tolist(), "y1:", sess.run(y1).tolist())
    print("total:", sess.run(total).tolist())
    sess.run(weights.assign(weights * 2.0))
    print("counter:", sess.run(bump))

with tf.Session(worker1.target) as sess:
    print("weights seen from worker 1:", sess.run(weights).tolist())
    print("counter:", sess.run(bump))

with tf.device("/job:worker/task:1"):
    grad = tf.ones_like(weights, name="grad")
update = tf.assign_sub(weights, 0.5 * grad)
with tf.Session(worker1.target) as sess:
    sess.run(update)
with tf.Session(worker0.target) as sess:
    sess.run(update)
    print("after two updates:", sess.run(weights).tolist())

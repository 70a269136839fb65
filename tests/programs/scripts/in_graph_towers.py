"""In-graph replication: one client builds a tower on each worker, the variables on the ps,
and averages the towers' gradients.

Usage: in_graph_towers.py CLUSTER_JSON   (one ps, any number of workers, all started)
"""
import json
import sys

import numpy as np

import tfteach as tf

cluster = tf.train.ClusterSpec(json.load(open(sys.argv[1])))
num_workers = cluster.num_tasks("worker")

with tf.device("/job:ps/task:0"):
    w = tf.Variable(tf.zeros([1, 1]), name="w")
    b = tf.Variable(tf.zeros([1]), name="b")
    opt = tf.train.GradientDescentOptimizer(0.2)

tower_grads, feeds = [], {}
for i in range(num_workers):
    with tf.device("/job:worker/task:%d" % i), tf.name_scope("tower_%d" % i):
        x = tf.placeholder(tf.float32, [None, 1])
        y = tf.placeholder(tf.float32, [None, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        tower_grads.append(opt.compute_gradients(loss, [w, b]))
        xs = np.linspace(-1, 1, 32, dtype=np.float32).reshape(-1, 1) + 0.01 * i
        feeds[x], feeds[y] = xs, 2 * xs + 1

with tf.device("/job:ps/task:0"):
    averaged = [(tf.add_n([tower[k][0] for tower in tower_grads]) / num_workers, var)
                for k, var in enumerate([w, b])]
    train_op = opt.apply_gradients(averaged)

with tf.Session("grpc://" + cluster.task_address("worker", 0)) as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(100):
        sess.run(train_op, feed_dict=feeds)
    w_, b_ = sess.run([w, b])
    print("w=%.3f b=%.3f" % (w_[0, 0], b_[0]))

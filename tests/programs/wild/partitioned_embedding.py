"""A large embedding spread over parameter servers, as TF 1.x's distributed guide and
wide-and-deep style programs do it: get_variable with a fixed_size_partitioner under
replica_device_setter puts one part on each ps task, embedding_lookup gathers rows
from the parts (partition_strategy="div"), the model trains through the parts, and a
Saver writes the embedding as one tensor in slices, which a local graph with another
number of parts restores. All tasks are servers in this process, on loopback ports.

    partitioned_embedding.py PORT,PORT,PORT LOGDIR
"""
import os
import sys

import numpy as np

from wild_tf import tf

ports = sys.argv[1].split(",")
logdir = sys.argv[2]
cluster = tf.train.ClusterSpec({"ps": ["localhost:" + ports[0], "localhost:" + ports[1]],
                                "worker": ["localhost:" + ports[2]]})
servers = [tf.train.Server(cluster, job_name="ps", task_index=i) for i in range(2)]
worker = tf.train.Server(cluster, job_name="worker", task_index=0)
VOCAB, DIM = 30, 4
table = np.arange(VOCAB * DIM, dtype=np.float32).reshape(VOCAB, DIM) / 100.0


def model(num_parts, device):
    with tf.device(device):
        embeddings = tf.get_variable("embeddings", [VOCAB, DIM],
                                     initializer=tf.constant_initializer(0.0),
                                     partitioner=tf.fixed_size_partitioner(num_parts))
        ids = tf.placeholder(tf.int64, [None])
        rows = tf.nn.embedding_lookup(embeddings, ids, partition_strategy="div")
        loss = tf.reduce_sum(tf.square(rows - 1.0))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    return embeddings, ids, rows, loss, train_op


embeddings, ids, rows, loss, train_op = model(3, tf.train.replica_device_setter(
    cluster=cluster, worker_device="/job:worker/task:0"))
for part in embeddings:
    print("part %s shape %s on %s" % (part.op.name, part.get_shape().as_list(), part.device))
saver = tf.train.Saver()
with tf.Session(worker.target) as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(embeddings.assign(table))
    print("rows 0, 11, 29:", sess.run(rows, {ids: [0, 11, 29]})[:, 0].tolist())
    for _ in range(3):
        sess.run(train_op, {ids: [1, 12, 12, 25]})
    print("loss after training: %.6f" % sess.run(loss, {ids: [1, 12, 25]}))
    path = saver.save(sess, os.path.join(logdir, "emb.ckpt"))
print("saved:", [(name, shape) for name, shape in tf.train.list_variables(path)
                 if name.startswith("emb")])

tf.reset_default_graph()
embeddings, ids, rows, loss, train_op = model(2, None)
with tf.Session() as sess:
    tf.train.Saver().restore(sess, path)
    print("restored into %d parts, loss: %.6f" % (len(list(embeddings)),
                                                  sess.run(loss, {ids: [1, 12, 25]})))

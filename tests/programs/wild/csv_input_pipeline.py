"""A queue-based CSV input pipeline as TF 1.x tutorials wrote them: a filename queue
(string_input_producer), a TextLineReader skipping the header line, decode_csv with
record defaults, tf.train.batch, a Coordinator with start_queue_runners, and a linear
model trained from the batches until the input runs out (OutOfRangeError).

    csv_input_pipeline.py LOGDIR      (the CSV file is written there first)
"""
import os
import sys

import numpy as np

from wild_tf import tf

logdir = sys.argv[1]
os.makedirs(logdir, exist_ok=True)
path = os.path.join(logdir, "data.csv")
rng = np.random.RandomState(4)
features = rng.uniform(-1, 1, size=(40, 2))
with open(path, "w") as f:
    f.write("x1,x2,y\n")
    for x1, x2 in features:
        f.write("%.4f,%.4f,%.4f\n" % (x1, x2, 2 * x1 - x2 + 0.5))

filename_queue = tf.train.string_input_producer([path], num_epochs=3, shuffle=False)
reader = tf.TextLineReader(skip_header_lines=1)
_, value = reader.read(filename_queue)
x1, x2, y = tf.decode_csv(value, record_defaults=[[0.0], [0.0], [0.0]])
features_batch, label_batch = tf.train.batch([tf.stack([x1, x2]), y], batch_size=10)

w = tf.Variable(tf.zeros([2, 1]))
b = tf.Variable(0.0)
pred = tf.squeeze(tf.matmul(features_batch, w), 1) + b
loss = tf.reduce_mean(tf.square(pred - label_batch))
train_op = tf.train.GradientDescentOptimizer(0.3).minimize(loss)

with tf.Session() as sess:
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    steps = 0
    try:
        while not coord.should_stop():
            _, l = sess.run([train_op, loss])
            steps += 1
    except tf.errors.OutOfRangeError:
        print("input exhausted after %d steps" % steps)
    finally:
        coord.request_stop()
    coord.join(threads)
    print("final loss %.5f" % l)
    print("w:", np.round(sess.run(w).ravel(), 3).tolist(), "b: %.3f" % sess.run(b))

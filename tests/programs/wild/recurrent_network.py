"""Recurrent networks in the shape of the example repositories' recurrent_network (an LSTM
over the rows of an image, static_rnn over tf.unstack, the last output into a dense
softmax layer) and their dynamic_rnn and bidirectional_dynamic_rnn variants, with
tf.map_fn and tf.scan as learners meet them beside RNNs.

Changed for both runtimes: the variables start at values from a seeded NumPy generator
(assigned after initialisation; the runtimes' random initializers draw different
numbers), small synthetic 6x5 "images".
"""
import numpy as np

from wild_tf import tf

rng = np.random.RandomState(4)
steps, width, hidden, classes = 6, 5, 8, 3

images = rng.uniform(0, 1, size=(24, steps, width)).astype(np.float32)
labels = rng.randint(0, classes, size=24)
images[np.arange(24), labels * 2, :] += 1.5

x = tf.placeholder(tf.float32, [None, steps, width], name="x")
y = tf.placeholder(tf.int64, [None], name="y")

with tf.variable_scope("static"):
    outputs, _ = tf.nn.static_rnn(tf.nn.rnn_cell.BasicLSTMCell(hidden), tf.unstack(x, steps, 1),
                                  dtype=tf.float32)
    logits_static = tf.matmul(outputs[-1], tf.get_variable("w", [hidden, classes])) + \
        tf.get_variable("b", [classes], initializer=tf.zeros_initializer())

with tf.variable_scope("dynamic"):
    lengths = tf.placeholder(tf.int32, [None], name="lengths")
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(hidden),
                                        tf.nn.rnn_cell.LSTMCell(hidden, use_peepholes=True)])
    seq_out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
    (fw, bw), _ = tf.nn.bidirectional_dynamic_rnn(
        tf.nn.rnn_cell.BasicRNNCell(4), tf.nn.rnn_cell.BasicRNNCell(4), x, dtype=tf.float32)
    features = tf.concat([state[1].h, fw[:, -1], bw[:, 0]], 1)
    logits_dynamic = tf.matmul(features, tf.get_variable("w", [hidden + 8, classes]))

row_norms = tf.map_fn(lambda image: tf.reduce_sum(tf.square(image), 1), x)
running = tf.scan(lambda acc, row: acc + row, tf.transpose(x, [1, 0, 2]))

losses = [tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=lg))
          for lg in (logits_static, logits_dynamic)]
train = tf.train.AdamOptimizer(0.05).minimize(tf.add_n(losses))
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits_static, 1), y), tf.float32))

print("variables:", [v.op.name for v in tf.trainable_variables()])
print("shapes:", seq_out.shape.as_list(), fw.shape.as_list(), row_norms.shape.as_list(),
      running.shape.as_list())
feed = {x: images, y: labels, lengths: rng.randint(1, steps + 1, size=24)}
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for v in tf.trainable_variables():
        sess.run(v.assign(rng.normal(0, 0.4, size=v.shape.as_list()).astype(np.float32)))
    for step in range(8):
        _, (l_static, l_dynamic) = sess.run([train, losses], feed)
        if step % 2 == 1:
            print("step %d: static loss %.5f, dynamic loss %.5f" % (step, l_static, l_dynamic))
    print("accuracy %.4f" % sess.run(accuracy, feed))
    print("row norms of image 0:", np.round(sess.run(row_norms, feed)[0], 5).tolist())
    print("running sum, last row of image 0:", np.round(sess.run(running, feed)[-1, 0], 5).tolist())

"""A tf.layers model in the shape of the example repositories' convolutional_network (and
the TF 1.x "layers" tutorial): conv2d, max_pooling2d, flatten, dense, dropout with a
training switch, batch_normalization whose moving statistics are updated by the
UPDATE_OPS run with the train op, and an l2-regularised loss from tf.losses.

Changed for both runtimes: kernels from a seeded NumPy generator through
constant_initializer (the runtimes' random initializers draw different numbers), dropout
only in the training graph with rate 0 so both runtimes see the same numbers, small
synthetic 8x8 images.
"""
import numpy as np

from wild_tf import tf

rng = np.random.RandomState(2)


def init(*shape):
    return tf.constant_initializer(rng.normal(0, 0.3, size=shape).astype(np.float32))


def conv_net(x, is_training, reuse):
    with tf.variable_scope("ConvNet", reuse=reuse):
        x = tf.reshape(x, shape=[-1, 8, 8, 1])
        x = tf.layers.conv2d(x, 4, 3, activation=tf.nn.relu, kernel_initializer=init(3, 3, 1, 4),
                             name="conv1")
        x = tf.layers.max_pooling2d(x, 2, 2)
        x = tf.layers.batch_normalization(x, training=is_training, name="bn1")
        x = tf.layers.flatten(x)
        x = tf.layers.dense(x, 16, activation=tf.nn.relu, kernel_initializer=init(36, 16),
                            name="fc1")
        x = tf.layers.dropout(x, rate=0.0, training=is_training)
        return tf.layers.dense(x, 3, kernel_initializer=init(16, 3), name="out")


images = rng.uniform(0, 1, size=(96, 64)).astype(np.float32)
labels = rng.randint(0, 3, size=96)
images[np.arange(96), labels * 20] += 2.0

x = tf.placeholder(tf.float32, [None, 64])
y = tf.placeholder(tf.int32, [None])
logits_train = conv_net(x, is_training=True, reuse=False)
logits_test = conv_net(x, is_training=False, reuse=True)
loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits_train)
l2 = tf.add_n([tf.nn.l2_loss(v) for v in tf.trainable_variables() if "kernel" in v.name])
total = loss + 1e-3 * l2
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    train_op = tf.train.MomentumOptimizer(0.05, 0.9).minimize(total)
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits_test, 1, output_type=tf.int32), y),
                                  tf.float32))
print("update ops:", len(update_ops), "trainable:", len(tf.trainable_variables()),
      "global:", len(tf.global_variables()))

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, 13):
        batch = slice((step * 24) % 96, (step * 24) % 96 + 24)
        _, l = sess.run([train_op, total], feed_dict={x: images[batch], y: labels[batch]})
        if step % 4 == 0:
            print("Step %d, Minibatch Loss= %.5f" % (step, l))
    moving_mean = [v for v in tf.global_variables() if "moving_mean" in v.name][0]
    print("moving mean: %s" % np.array2string(sess.run(moving_mean), precision=5))
    print("Testing Accuracy: %.4f" % sess.run(accuracy, feed_dict={x: images, y: labels}))

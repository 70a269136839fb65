"""A multi-GPU tower trainer in the shape of TF's CIFAR-10 tutorial (cifar10_multi_gpu_train
with its cifar10 model): tf.app.flags, variables on the CPU with weight decay in a 'losses'
collection, towers on /gpu:N sharing variables through a reused variable scope, gradients
averaged over the towers, a staircase learning rate, moving averages of the weights,
summaries of activations and gradients, queue input (a batch queue behind a prefetch
queue, both filled by queue runners), a Saver, tf.gfile for the train directory.

Changed for both runtimes: synthetic 12x12 images from a seeded NumPy generator (no
download, no random distortions), small layers, weights from NumPy, a few steps; each
step prints the mean of the towers' losses (which tower took which batch is up to the
threads; the mean is not). The train op and the losses run in one step, as in the
tutorial, so an update may land before a tower's backward pass reads the weight it uses
(TF's ref variables alias the buffer the optimizer updates): numbers agree to 1 %.
"""
import os

import numpy as np

from wild_tf import tf

FLAGS = tf.app.flags.FLAGS
tf.app.flags.DEFINE_string("train_dir", "/tmp/cifar10_train", "Where to write checkpoints.")
tf.app.flags.DEFINE_integer("max_steps", 6, "Number of batches to run.")
tf.app.flags.DEFINE_integer("num_gpus", 2, "How many GPUs to use.")
tf.app.flags.DEFINE_integer("batch_size", 8, "Images per tower and step.")
tf.app.flags.DEFINE_boolean("log_device_placement", False, "Whether to log placement.")

TOWER_NAME = "tower"
IMAGE_SIZE = 12
NUM_CLASSES = 4
MOVING_AVERAGE_DECAY = 0.9999
INITIAL_LEARNING_RATE = 0.1
LEARNING_RATE_DECAY_FACTOR = 0.5
rng = np.random.RandomState(7)


def _activation_summary(x):
    tf.summary.histogram(x.op.name + "/activations", x)
    tf.summary.scalar(x.op.name + "/sparsity", tf.nn.zero_fraction(x))


def _variable_on_cpu(name, shape, initializer):
    with tf.device("/cpu:0"):
        return tf.get_variable(name, shape, initializer=initializer, dtype=tf.float32)


def _variable_with_weight_decay(name, shape, stddev, wd):
    values = np.clip(rng.normal(0.0, stddev, size=shape), -2 * stddev, 2 * stddev)
    var = _variable_on_cpu(name, shape, tf.constant_initializer(values.astype(np.float32)))
    if wd is not None:
        weight_decay = tf.multiply(tf.nn.l2_loss(var), wd, name="weight_loss")
        tf.add_to_collection("losses", weight_decay)
    return var


def inputs():
    images = rng.uniform(0, 1, size=(64, IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
    labels = rng.randint(0, NUM_CLASSES, size=64).astype(np.int32)
    images[np.arange(64), labels, :, labels % 3] += 1.0
    image, label = tf.train.slice_input_producer([tf.constant(images), tf.constant(labels)],
                                                 shuffle=False)
    return tf.train.batch([image, label], batch_size=FLAGS.batch_size, num_threads=1,
                          capacity=4 * FLAGS.batch_size)


def inference(images):
    with tf.variable_scope("conv1") as scope:
        kernel = _variable_with_weight_decay("weights", [3, 3, 3, 8], 0.1, None)
        conv = tf.nn.conv2d(images, kernel, [1, 1, 1, 1], padding="SAME")
        biases = _variable_on_cpu("biases", [8], tf.constant_initializer(0.0))
        conv1 = tf.nn.relu(tf.nn.bias_add(conv, biases), name=scope.name)
        _activation_summary(conv1)
    pool1 = tf.nn.max_pool(conv1, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME",
                           name="pool1")
    norm1 = tf.nn.lrn(pool1, 4, bias=1.0, alpha=0.001 / 9.0, beta=0.75, name="norm1")
    with tf.variable_scope("local3") as scope:
        reshape = tf.reshape(norm1, [FLAGS.batch_size, -1])
        dim = reshape.get_shape().as_list()[1]
        weights = _variable_with_weight_decay("weights", [dim, 16], 0.04, 0.004)
        biases = _variable_on_cpu("biases", [16], tf.constant_initializer(0.1))
        local3 = tf.nn.relu(tf.matmul(reshape, weights) + biases, name=scope.name)
        _activation_summary(local3)
    with tf.variable_scope("softmax_linear") as scope:
        weights = _variable_with_weight_decay("weights", [16, NUM_CLASSES], 1 / 16.0, None)
        biases = _variable_on_cpu("biases", [NUM_CLASSES], tf.constant_initializer(0.0))
        softmax_linear = tf.add(tf.matmul(local3, weights), biases, name=scope.name)
    return softmax_linear


def tower_loss(scope, images, labels):
    logits = inference(images)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits, name="cross_entropy_per_example")
    tf.add_to_collection("losses", tf.reduce_mean(cross_entropy, name="cross_entropy"))
    losses = tf.get_collection("losses", scope)
    total_loss = tf.add_n(losses, name="total_loss")
    for l in losses + [total_loss]:
        tf.summary.scalar(l.op.name, l)
    return total_loss


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads, strict=True):
        grads = [tf.expand_dims(g, 0) for g, _ in grad_and_vars]
        grad = tf.reduce_mean(tf.concat(axis=0, values=grads), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


def train():
    with tf.Graph().as_default(), tf.device("/cpu:0"):
        global_step = tf.get_variable("global_step", [], initializer=tf.constant_initializer(0),
                                      trainable=False)
        lr = tf.train.exponential_decay(INITIAL_LEARNING_RATE, global_step, 4,
                                        LEARNING_RATE_DECAY_FACTOR, staircase=True)
        opt = tf.train.GradientDescentOptimizer(lr)
        images, labels = inputs()
        batch_queue = tf.FIFOQueue(2 * FLAGS.num_gpus, [tf.float32, tf.int32],
                                   shapes=[images.get_shape(), labels.get_shape()])
        tf.train.add_queue_runner(tf.train.QueueRunner(batch_queue,
                                                       [batch_queue.enqueue([images, labels])]))
        tower_grads, tower_losses = [], []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(FLAGS.num_gpus):
                with tf.device("/gpu:%d" % i):
                    with tf.name_scope("%s_%d" % (TOWER_NAME, i)) as scope:
                        image_batch, label_batch = batch_queue.dequeue()
                        loss = tower_loss(scope, image_batch, label_batch)
                        tf.get_variable_scope().reuse_variables()
                        summaries = tf.get_collection(tf.GraphKeys.SUMMARIES, scope)
                        tower_grads.append(opt.compute_gradients(loss))
                        tower_losses.append(loss)
        grads = average_gradients(tower_grads)
        summaries.append(tf.summary.scalar("learning_rate", lr))
        for grad, var in grads:
            summaries.append(tf.summary.histogram(var.op.name + "/gradients", grad))
        apply_gradient_op = opt.apply_gradients(grads, global_step=global_step)
        variable_averages = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
        variables_averages_op = variable_averages.apply(tf.trainable_variables())
        train_op = tf.group(apply_gradient_op, variables_averages_op)
        saver = tf.train.Saver(tf.global_variables())
        summary_op = tf.summary.merge(summaries)
        init = tf.global_variables_initializer()
        sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True,
                                                log_device_placement=FLAGS.log_device_placement))
        sess.run(init)
        tf.train.start_queue_runners(sess=sess)
        summary_writer = tf.summary.FileWriter(FLAGS.train_dir, sess.graph)
        for step in range(FLAGS.max_steps):
            _, loss_values, rate = sess.run([train_op, tower_losses, lr])
            assert not np.isnan(loss_values).any(), "Model diverged with loss = NaN"
            print("step %d, loss = %.5f, lr = %.3f" % (step, np.mean(loss_values), rate))
            if step % 3 == 0:
                summary_writer.add_summary(sess.run(summary_op), step)
            if step + 1 == FLAGS.max_steps:
                checkpoint_path = os.path.join(FLAGS.train_dir, "model.ckpt")
                saved = saver.save(sess, checkpoint_path, global_step=step)
                print("saved", os.path.basename(saved), tf.gfile.Exists(saved + ".index"))
        # the averages' update runs beside the optimizer's (tf.group), so whether it saw a
        # weight before or after its step is up to the threads, in TF as here
        weights = tf.trainable_variables()
        shadows = sess.run([variable_averages.average(v) for v in weights])
        gap = max(np.abs(s - w).max() for s, w in zip(shadows, sess.run(weights), strict=True))
        print("moving averages of %d variables, within 0.1 of the weights: %s"
              % (len(shadows), gap < 0.1))


def main(argv=None):
    if tf.gfile.Exists(FLAGS.train_dir):
        tf.gfile.DeleteRecursively(FLAGS.train_dir)
    tf.gfile.MakeDirs(FLAGS.train_dir)
    train()


if __name__ == "__main__":
    tf.app.run()

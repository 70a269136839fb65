"""A between-graph replica trainer in the shape of TF's mnist_replica example: everything
driven by tf.app.flags (--ps_hosts, --worker_hosts, --job_name, --task_index,
--sync_replicas, --train_steps), a ps that joins its server, workers that build the model
under replica_device_setter, a SyncReplicasOptimizer whose chief runs the sync queue
runner and the token init op, and a Supervisor's prepare_or_wait_for_session.

Changed for both runtimes: synthetic MNIST-shaped data from a seeded NumPy generator, a
small hidden layer, few steps. Which worker's gradients make which step is up to timing,
so the workers print what holds on every run: the global step reached, and whether the
validation cross entropy came below a bound.
"""
import tempfile

import numpy as np

from wild_tf import tf

flags = tf.app.flags
flags.DEFINE_string("data_dir", "/tmp/mnist-data", "Directory for storing mnist data")
flags.DEFINE_integer("task_index", None, "Worker task index, should be >= 0.")
flags.DEFINE_integer("replicas_to_aggregate", None, "Gradients to aggregate per step "
                     "(default: the number of workers)")
flags.DEFINE_integer("hidden_units", 32, "Number of units in the hidden layer")
flags.DEFINE_integer("train_steps", 30, "Number of (global) training steps to perform")
flags.DEFINE_integer("batch_size", 50, "Training batch size")
flags.DEFINE_float("learning_rate", 0.3, "Learning rate")
flags.DEFINE_boolean("sync_replicas", False, "Use the sync_replicas (synchronized replicas) "
                     "mode, wherein the parameter updates from workers are aggregated "
                     "before applied to avoid stale gradients")
flags.DEFINE_string("ps_hosts", "localhost:2222", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "localhost:2223,localhost:2224",
                    "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", None, "job name: worker or ps")
FLAGS = flags.FLAGS

IMAGE_PIXELS = 28


def synthetic(rng, n):
    labels = rng.randint(0, 10, size=n)
    images = rng.uniform(0.0, 0.2, size=(n, IMAGE_PIXELS, IMAGE_PIXELS)).astype(np.float32)
    for i, label in enumerate(labels):
        images[i, 2 * label + 3: 2 * label + 6, :] += 0.8
    return images.reshape(n, -1), np.eye(10, dtype=np.float32)[labels]


def main(unused_argv):
    if FLAGS.job_name is None or FLAGS.job_name == "":
        raise ValueError("Must specify an explicit `job_name`")
    if FLAGS.task_index is None or FLAGS.task_index == "":
        raise ValueError("Must specify an explicit `task_index`")
    ps_spec = FLAGS.ps_hosts.split(",")
    worker_spec = FLAGS.worker_hosts.split(",")
    num_workers = len(worker_spec)
    cluster = tf.train.ClusterSpec({"ps": ps_spec, "worker": worker_spec})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()

    is_chief = FLAGS.task_index == 0
    rng = np.random.RandomState(FLAGS.task_index)
    train_x, train_y = synthetic(rng, 500)
    val_x, val_y = synthetic(np.random.RandomState(99), 200)
    worker_device = "/job:worker/task:%d/cpu:0" % FLAGS.task_index
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device,
                                                  ps_device="/job:ps/cpu:0", cluster=cluster)):
        global_step = tf.Variable(0, name="global_step", trainable=False)
        hid_w = tf.Variable(tf.truncated_normal(
            [IMAGE_PIXELS * IMAGE_PIXELS, FLAGS.hidden_units],
            stddev=1.0 / IMAGE_PIXELS), name="hid_w")
        hid_b = tf.Variable(tf.zeros([FLAGS.hidden_units]), name="hid_b")
        sm_w = tf.Variable(tf.truncated_normal([FLAGS.hidden_units, 10],
                                               stddev=1.0 / np.sqrt(FLAGS.hidden_units)),
                           name="sm_w")
        sm_b = tf.Variable(tf.zeros([10]), name="sm_b")
        x = tf.placeholder(tf.float32, [None, IMAGE_PIXELS * IMAGE_PIXELS])
        y_ = tf.placeholder(tf.float32, [None, 10])
        hid = tf.nn.relu(tf.nn.xw_plus_b(x, hid_w, hid_b))
        y = tf.nn.softmax(tf.nn.xw_plus_b(hid, sm_w, sm_b))
        cross_entropy = -tf.reduce_sum(y_ * tf.log(tf.clip_by_value(y, 1e-10, 1.0)))
        opt = tf.train.AdamOptimizer(FLAGS.learning_rate / 30)
        if FLAGS.sync_replicas:
            replicas_to_aggregate = FLAGS.replicas_to_aggregate or num_workers
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=replicas_to_aggregate,
                                                 total_num_replicas=num_workers,
                                                 name="mnist_sync_replicas")
        train_step = opt.minimize(cross_entropy, global_step=global_step)
        if FLAGS.sync_replicas:
            local_init_op = opt.local_step_init_op
            if is_chief:
                local_init_op = opt.chief_init_op
            ready_for_local_init_op = opt.ready_for_local_init_op
            chief_queue_runner = opt.get_chief_queue_runner()
            sync_init_op = opt.get_init_tokens_op()
        init_op = tf.global_variables_initializer()
        train_dir = tempfile.mkdtemp()
        if FLAGS.sync_replicas:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=train_dir, init_op=init_op,
                                     local_init_op=local_init_op,
                                     ready_for_local_init_op=ready_for_local_init_op,
                                     recovery_wait_secs=1, global_step=global_step)
        else:
            sv = tf.train.Supervisor(is_chief=is_chief, logdir=train_dir, init_op=init_op,
                                     recovery_wait_secs=1, global_step=global_step)
        sess_config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                                     device_filters=["/job:ps",
                                                     "/job:worker/task:%d" % FLAGS.task_index])
        sess = sv.prepare_or_wait_for_session(server.target, config=sess_config)
        if FLAGS.sync_replicas and is_chief:
            sess.run(sync_init_op)
            sv.start_queue_runners(sess, [chief_queue_runner])
        local_step = 0
        while True:
            lo = (local_step * FLAGS.batch_size) % 500
            feed = {x: train_x[lo:lo + FLAGS.batch_size], y_: train_y[lo:lo + FLAGS.batch_size]}
            _, step = sess.run([train_step, global_step], feed_dict=feed)
            local_step += 1
            if step >= FLAGS.train_steps:
                break
        val_xent = sess.run(cross_entropy, feed_dict={x: val_x, y_: val_y}) / len(val_x)
        print("worker %d: reached global step %d: %s"
              % (FLAGS.task_index, FLAGS.train_steps, step >= FLAGS.train_steps))
        print("worker %d: validation cross entropy below 1.0: %s"
              % (FLAGS.task_index, val_xent < 1.0))


if __name__ == "__main__":
    tf.app.run()

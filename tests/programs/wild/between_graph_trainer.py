"""A between-graph trainer in the shape of TF 1.x's "Distributed TensorFlow" guide: argparse
flags --ps_hosts, --worker_hosts, --job_name and --task_index, a ps that joins, workers
that build the same graph under replica_device_setter(cluster=...) and train
asynchronously in a MonitoredTrainingSession with a StopAtStepHook until the global step
reaches its last step.

Changed for both runtimes: a small regression on synthetic data (y = 3x - 2 plus noise)
instead of a real model, and device_filters in the session config. Asynchronous updates interleave differently on every run, so the
workers print what holds on every run: whether the loss came below a bound, and that the
fitted weights are near the true ones.
"""
import argparse
import sys

import numpy as np

from wild_tf import tf

FLAGS = None


def main(_):
    ps_hosts = FLAGS.ps_hosts.split(",")
    worker_hosts = FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
    elif FLAGS.job_name == "worker":
        rng = np.random.RandomState(FLAGS.task_index)
        data_x = rng.uniform(-1, 1, size=(256, 1)).astype(np.float32)
        data_y = (3 * data_x - 2 + rng.normal(0, 0.05, size=(256, 1))).astype(np.float32)
        with tf.device(tf.train.replica_device_setter(
                worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
            x = tf.placeholder(tf.float32, [None, 1])
            y = tf.placeholder(tf.float32, [None, 1])
            w = tf.get_variable("w", [1, 1], initializer=tf.zeros_initializer())
            b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
            global_step = tf.train.get_or_create_global_step()
            train_op = tf.train.AdagradOptimizer(0.5).minimize(loss, global_step=global_step)
        hooks = [tf.train.StopAtStepHook(last_step=FLAGS.last_step)]
        # each worker talks only to the ps and itself: a worker that finished first and
        # exited must not keep the other's session from starting (TF waits for it forever)
        config = tf.ConfigProto(device_filters=["/job:ps",
                                                "/job:worker/task:%d" % FLAGS.task_index])
        with tf.train.MonitoredTrainingSession(master=server.target,
                                               is_chief=(FLAGS.task_index == 0),
                                               checkpoint_dir=None, hooks=hooks,
                                               config=config) as mon_sess:
            step = 0
            while not mon_sess.should_stop():
                lo = (step * 32) % 256
                feed = {x: data_x[lo:lo + 32], y: data_y[lo:lo + 32]}
                mon_sess.run(train_op, feed_dict=feed)
                step += 1
        # the other worker may have reached the last step first: read the result in a
        # session of our own (a monitored session refuses runs once it should stop)
        with tf.Session(server.target, config=config) as sess:
            last_loss, weights, bias = sess.run([loss, w, b], {x: data_x, y: data_y})
        print("worker %d: loss below 0.1: %s" % (FLAGS.task_index, last_loss < 0.1))
        print("worker %d: w near 3 and b near -2: %s"
              % (FLAGS.task_index, abs(weights[0, 0] - 3) < 0.3 and abs(bias[0] + 2) < 0.3))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.register("type", "bool", lambda v: v.lower() == "true")
    parser.add_argument("--ps_hosts", type=str, default="", help="Comma-separated ps hosts")
    parser.add_argument("--worker_hosts", type=str, default="", help="Comma-separated workers")
    parser.add_argument("--job_name", type=str, default="", help="One of 'ps', 'worker'")
    parser.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    parser.add_argument("--last_step", type=int, default=150, help="Global steps to train")
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)

"""Between-graph training in the style of TF's distributed MNIST example: one program for
every task, told its part by flags.

    trainer.py --ps_hosts=H:P --worker_hosts=H:P,H:P --job_name=ps --task_index=0
    trainer.py --ps_hosts=H:P --worker_hosts=H:P,H:P --job_name=worker --task_index=0 ...

A ps serves forever (``server.join()``); a worker fits y = 2x + 1 with its variables on the
ps (``replica_device_setter``) until the global step reaches ``--steps``, in a
MonitoredTrainingSession or (``--supervisor``) a Supervisor's managed session, with
``--replicas_to_aggregate=N`` through a SyncReplicasOptimizer.
"""
import argparse

import numpy as np

import tfteach as tf

parser = argparse.ArgumentParser()
parser.add_argument("--ps_hosts", required=True)
parser.add_argument("--worker_hosts", required=True)
parser.add_argument("--job_name", required=True)
parser.add_argument("--task_index", type=int, default=0)
parser.add_argument("--steps", type=int, default=100)
parser.add_argument("--replicas_to_aggregate", type=int, default=0)
parser.add_argument("--supervisor", action="store_true")
parser.add_argument("--logdir", default=None)
FLAGS = parser.parse_args()

cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                "worker": FLAGS.worker_hosts.split(",")})
server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
if FLAGS.job_name == "ps":
    server.join()

is_chief = FLAGS.task_index == 0
num_workers = len(FLAGS.worker_hosts.split(","))
with tf.device(tf.train.replica_device_setter(
        worker_device="/job:worker/task:%d" % FLAGS.task_index, cluster=cluster)):
    x = tf.placeholder(tf.float32, [None, 1], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    w = tf.Variable(tf.zeros([1, 1]), name="w")
    b = tf.Variable(tf.zeros([1]), name="b")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.GradientDescentOptimizer(0.2)
    if FLAGS.replicas_to_aggregate:
        opt = tf.train.SyncReplicasOptimizer(
            opt, replicas_to_aggregate=FLAGS.replicas_to_aggregate,
            total_num_replicas=num_workers)
    train_op = opt.minimize(loss, global_step=global_step)

# Each worker talks to the ps and itself only: it need not wait for the other workers.
sess_config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % FLAGS.task_index])
rng = np.random.RandomState(FLAGS.task_index)
xs = rng.uniform(-1, 1, size=(64, 1)).astype(np.float32)
feed = {x: xs, y: 2 * xs + 1}


# What this worker did, kept outside the loop: a MonitoredTrainingSession ends quietly on
# OutOfRangeError (a sync worker whose chief has closed the token queue at the end).
progress = {"local_steps": 0, "w": np.full((1, 1), np.nan), "b": np.full(1, np.nan)}


def train(sess, should_stop):
    step = 0
    while not should_stop() and step < FLAGS.steps:
        _, step, progress["w"], progress["b"] = sess.run([train_op, global_step, w, b],
                                                         feed_dict=feed)
        progress["local_steps"] += 1


if FLAGS.supervisor:
    sv = tf.train.Supervisor(is_chief=is_chief, logdir=FLAGS.logdir,
                             init_op=tf.global_variables_initializer(),
                             global_step=global_step, save_model_secs=0, recovery_wait_secs=1)
    with sv.managed_session(server.target, config=sess_config) as sess:
        train(sess, sv.should_stop)
    sv.stop()
else:
    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.steps + 1)]
    if FLAGS.replicas_to_aggregate:
        hooks.append(opt.make_session_run_hook(is_chief))
    with tf.train.MonitoredTrainingSession(master=server.target, is_chief=is_chief,
                                           hooks=hooks, config=sess_config) as sess:
        train(sess, sess.should_stop)

print("worker %d: %d local steps, w=%.2f b=%.2f" % (
    FLAGS.task_index, progress["local_steps"], progress["w"][0, 0], progress["b"][0]))

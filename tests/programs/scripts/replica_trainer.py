"""Between-graph replica training in the shape of TF's ``mnist_replica.py``: a Supervisor's
``prepare_or_wait_for_session``, and with ``--sync_replicas`` a SyncReplicasOptimizer whose
chief runs the sync token queue runner; the program ends without closing anything.

    replica_trainer.py --ps_hosts=H:P --worker_hosts=H:P,H:P --job_name=ps --task_index=0
    replica_trainer.py --ps_hosts=H:P --worker_hosts=H:P,H:P --job_name=worker \
        --task_index=0 --sync_replicas --train_steps=40

A ps serves forever (``server.join()``); a worker fits y = 2x + 1 until the global step
reaches ``--train_steps`` and prints its validation loss.
"""
import argparse
import tempfile

import numpy as np

import tfteach as tf

parser = argparse.ArgumentParser()
parser.add_argument("--ps_hosts", required=True)
parser.add_argument("--worker_hosts", required=True)
parser.add_argument("--job_name", required=True)
parser.add_argument("--task_index", type=int, default=0)
parser.add_argument("--train_steps", type=int, default=40)
parser.add_argument("--sync_replicas", action="store_true")
FLAGS = parser.parse_args()

ps_spec = FLAGS.ps_hosts.split(",")
worker_spec = FLAGS.worker_hosts.split(",")
num_workers = len(worker_spec)
cluster = tf.train.ClusterSpec({"ps": ps_spec, "worker": worker_spec})
server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
if FLAGS.job_name == "ps":
    server.join()

is_chief = FLAGS.task_index == 0
worker_device = "/job:worker/task:%d/cpu:0" % FLAGS.task_index
with tf.device(tf.train.replica_device_setter(worker_device=worker_device,
                                              ps_device="/job:ps/cpu:0", cluster=cluster)):
    global_step = tf.Variable(0, name="global_step", trainable=False)
    x = tf.placeholder(tf.float32, [None, 1])
    y_ = tf.placeholder(tf.float32, [None, 1])
    w = tf.Variable(tf.zeros([1, 1]), name="w")
    b = tf.Variable(tf.zeros([1]), name="b")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y_))
    opt = tf.train.GradientDescentOptimizer(0.2)
    if FLAGS.sync_replicas:
        opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=num_workers,
                                             total_num_replicas=num_workers,
                                             name="replica_sync_replicas")
    train_step = opt.minimize(loss, global_step=global_step)
    if FLAGS.sync_replicas:
        local_init_op = opt.chief_init_op if is_chief else opt.local_step_init_op
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
                             device_filters=["/job:ps", "/job:worker/task:%d" % FLAGS.task_index])
sess = sv.prepare_or_wait_for_session(server.target, config=sess_config)
if FLAGS.sync_replicas and is_chief:
    sess.run(sync_init_op)
    sv.start_queue_runners(sess, [chief_queue_runner])

rng = np.random.RandomState(FLAGS.task_index)
while True:
    xs = rng.uniform(-1, 1, size=(32, 1)).astype(np.float32)
    _, step = sess.run([train_step, global_step], feed_dict={x: xs, y_: 2 * xs + 1})
    if step >= FLAGS.train_steps:
        break

val_x = np.linspace(-1, 1, 50, dtype=np.float32).reshape(-1, 1)
val_loss = sess.run(loss, feed_dict={x: val_x, y_: 2 * val_x + 1})
print("After %d training step(s), validation loss = %.6f" % (FLAGS.train_steps, val_loss))

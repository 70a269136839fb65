"""Learning-rate schedules as TF 1.x programs use them: a global step from
get_or_create_global_step and, per step, the rates of exponential_decay (smooth and
staircase), piecewise_constant, polynomial_decay (with cycle), inverse_time_decay,
natural_exp_decay and cosine_decay, with a real optimizer stepping the global step.
"""
from wild_tf import tf

global_step = tf.train.get_or_create_global_step()
rates = {
    "exponential": tf.train.exponential_decay(0.1, global_step, 3, 0.5),
    "staircase": tf.train.exponential_decay(0.1, global_step, 3, 0.5, staircase=True),
    "piecewise": tf.train.piecewise_constant(global_step, [2, 5], [1.0, 0.5, 0.1]),
    "polynomial": tf.train.polynomial_decay(0.1, global_step, 4, 0.01, power=2.0, cycle=True),
    "inverse_time": tf.train.inverse_time_decay(0.1, global_step, 2, 0.5),
    "natural_exp": tf.train.natural_exp_decay(0.1, global_step, 2, 0.5, staircase=True),
    "cosine": tf.train.cosine_decay(0.1, global_step, 6, alpha=0.1),
}
w = tf.Variable(5.0)
loss = tf.square(w)
train_op = tf.train.GradientDescentOptimizer(rates["staircase"]).minimize(
    loss, global_step=global_step)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(8):
        values = sess.run(rates)
        step = sess.run(global_step)
        print("step %d: " % step + ", ".join("%s=%.6f" % (k, values[k]) for k in sorted(values)))
        sess.run(train_op)
    print("w after 8 steps: %.6f" % sess.run(w))

"""The tutorials' first distributed program: a one-task local server and a session on it."""
import tfteach as tf

c = tf.constant("Hello, distributed TensorFlow!")
server = tf.train.Server.create_local_server()
sess = tf.Session(server.target)
print(sess.run(c))

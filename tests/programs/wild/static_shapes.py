"""Static shapes as TF 1.x programs read them (the CIFAR-10 and MNIST tutorials' model
code does): ``tensor.get_shape()[i].value`` (a ``Dimension``, whose value is None when
unknown), ``as_list()``, ``tf.Dimension`` arithmetic, and ``set_shape`` on a placeholder
whose batch size is None.
"""
from wild_tf import tf

images = tf.placeholder(tf.float32, [None, 28, 28, 1])
flat = tf.reshape(images, [-1, 784])
print("dims:", flat.get_shape()[1].value, flat.get_shape()[0].value)
print("as_list:", images.get_shape().as_list())
area = images.get_shape()[1] * images.get_shape()[2]
print("area:", area.value, "unknown stays unknown:", (tf.Dimension(None) * 2).value)
batch = tf.placeholder(tf.float32)
batch.set_shape([32, 10])
print("after set_shape:", batch.get_shape().as_list(), batch.get_shape()[0].value)

"""``tf.data.experimental``: the names TF 1.x programs take from it.

``AUTOTUNE`` (``num_parallel_calls`` / ``prefetch`` buffer sizes chosen by the runtime):
tfteach's datasets compute each element when it is asked for, so any value behaves alike.
"""
AUTOTUNE = -1

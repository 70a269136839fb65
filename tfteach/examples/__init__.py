"""Runnable programs in the style of the TF 1.x tutorials (``python -m tfteach.examples.X``).

- ``distributed_digits``: the classic ``--job_name=worker --task_index=1`` between-graph
  training program (softmax regression on the handwritten digits), sync or async.
"""

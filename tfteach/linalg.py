"""``tf.linalg``: TF 1.x's linear-algebra namespace (``matmul``, ``inv`` = ``tf.matrix_inverse``,
``tensor_diag`` / ``tensor_diag_part`` = ``tf.diag`` / ``tf.diag_part``).

``tf.linalg.diag`` is TF's batched MatrixDiag, not ``tf.diag``, so it is not an alias here.
The ops live in ``tfteach.ops``; a name TF has here and tfteach lacks is an AttributeError
that says so.
"""
from tfteach.errors import missing_attribute
from tfteach.ops.diag_ops import diag as tensor_diag
from tfteach.ops.diag_ops import diag_part as tensor_diag_part
from tfteach.ops.math_ops import matmul
from tfteach.ops.matrix_inverse_ops import matrix_inverse as inv

__all__ = ["inv", "matmul", "tensor_diag", "tensor_diag_part"]


def __getattr__(name: str):
    """A name tf.linalg has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.linalg", f"tf.linalg.{name}", name)

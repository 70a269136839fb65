"""``tf.linalg``: TF 1.x's linear-algebra namespace (``matmul``, ``inv`` = ``tf.matrix_inverse``,
``tensor_diag`` / ``tensor_diag_part`` = ``tf.diag`` / ``tf.diag_part``).

``tf.linalg.diag`` is TF's batched MatrixDiagV3 (``tf.matrix_diag``), not ``tf.diag``.
The ops live in ``tfteach.ops``; a name TF has here and tfteach lacks is an AttributeError
that says so.
"""
from tfteach.errors import missing_attribute
from tfteach.ops.diag_ops import diag as tensor_diag
from tfteach.ops.diag_ops import diag_part as tensor_diag_part
from tfteach.ops.einsum_ops import einsum
from tfteach.ops.math_ops import matmul
from tfteach.ops.reduce_composites import norm
from tfteach.ops.tensordot_ops import tensordot
from tfteach.ops.matrix_diag_ops import eye
from tfteach.ops.matrix_diag_ops import matrix_diag as diag
from tfteach.ops.matrix_diag_ops import matrix_diag_part as diag_part
from tfteach.ops.matrix_diag_ops import matrix_set_diag as set_diag
from tfteach.ops.matrix_inverse_ops import matrix_inverse as inv

__all__ = ["diag", "diag_part", "einsum", "eye", "inv", "matmul", "norm", "set_diag",
           "tensor_diag", "tensor_diag_part", "tensordot"]


def __getattr__(name: str):
    """A name tf.linalg has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.linalg", f"tf.linalg.{name}", name)

"""tfteach: TensorFlow 1.x graph code on a teaching runtime. ``import tfteach as tf``.

This module only gathers the public API (TF 1.x names) from the layers; see docs/ARCHITECTURE.md.
tfteach-only additions live in ``tfteach.config``, ``tfteach.cluster``, ``tfteach.notebook``,
``tfteach.data`` and ``tfteach.timeline``.
"""
from __future__ import annotations

from tfteach import _late, errors
from tfteach.framework import dtypes
from tfteach.framework.device_spec import DeviceSpec
from tfteach.framework.dtypes import (DType, as_dtype, bool_ as bool, double, float16, float32,
                                      float64, half, int32, int64, string)
from tfteach.framework.dtypes import (bfloat16, complex64, complex128, int8, int16, qint8, qint16,
                                      qint32, quint8, quint16, uint8, uint16, uint32, uint64)
from tfteach.framework.graph import (Graph, GraphKeys, Operation, Tensor, get_default_graph,
                                     reset_default_graph)
from tfteach.framework.graph_def import GraphDef, NodeDef, import_graph_def
from tfteach.framework.tensor_shape import Dimension, TensorShape
from tfteach.ops.init_ops import (constant_initializer, glorot_normal_initializer,
                                  glorot_uniform_initializer, ones_initializer,
                                  random_normal_initializer, random_uniform_initializer,
                                  truncated_normal_initializer, variance_scaling_initializer,
                                  zeros_initializer)
from tfteach.ops.array_ops import (broadcast_to, cast, concat, constant, expand_dims, fill,
                                   identity, invert_permutation, one_hot, ones, ones_like, pad,
                                   placeholder, placeholder_with_default, rank, reshape, shape,
                                   size, split, squeeze, stack, stop_gradient, tile, to_float,
                                   transpose, unstack, zeros, zeros_like)
from tfteach.ops.array_ops import range_ as range
from tfteach.ops.array_ops import slice_ as slice
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.control_ops import group, no_op
from tfteach.ops.control_ops import tuple_ as tuple
from tfteach.ops.cond_ops import cond
from tfteach.ops.case_ops import case
from tfteach.ops.logging_ops import Assert
from tfteach.ops.check_ops import (assert_equal, assert_greater, assert_greater_equal,
                                   assert_less, assert_less_equal, assert_negative,
                                   assert_non_negative, assert_non_positive, assert_none_equal,
                                   assert_positive, assert_rank, assert_type)
from tfteach.ops.check_ops import assert_integer, assert_rank_at_least, assert_scalar
from tfteach.ops.numerics_ops import check_numerics, verify_tensor_all_finite
from tfteach.ops.print_ops import Print
from tfteach.ops.print_ops import print_v2 as print
from tfteach.ops.boolean_mask_ops import boolean_mask
from tfteach.ops.matrix_diag_ops import eye, matrix_diag, matrix_diag_part, matrix_set_diag
from tfteach.ops.grid_ops import lin_space, linspace, meshgrid
from tfteach.ops.set_ops import setdiff1d
from tfteach.ops.bincount_ops import bincount
from tfteach.ops.tensordot_ops import tensordot
from tfteach.ops.einsum_ops import einsum
from tfteach.ops.reduce_composites import norm, reduce_logsumexp
from tfteach.ops.segment_ops import segment_sum
from tfteach.ops.multinomial_ops import multinomial
from tfteach.ops.while_ops import while_loop
from tfteach.ops.tensor_array import TensorArray
from tfteach.ops.functional_ops import foldl, foldr, map_fn, scan
from tfteach.ops.data_flow_ops import FIFOQueue, QueueBase, dynamic_partition
from tfteach.ops.shuffle_queue_ops import RandomShuffleQueue
from tfteach.ops.io_ops import (FixedLengthRecordReader, ReaderBase, TextLineReader,
                             WholeFileReader)
from tfteach.ops.parsing_ops import decode_csv, decode_raw
from tfteach.ops.image_ops import random_crop
from tfteach.ops.reverse_ops import reverse
from tfteach.ops.reverse_sequence_ops import reverse_sequence
from tfteach.ops.shape_n_ops import shape_n
from tfteach.ops.math_ops import (abs, add, add_n, arg_max, arg_min, argmax, argmin, div,
                                  divide, equal, exp,
                                  greater, greater_equal, less, less_equal, log,
                                  log1p, logical_and, logical_not, logical_or, matmul, maximum,
                                  minimum, multiply, negative, not_equal, pow, reciprocal,
                                  reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum,
                                  rsqrt, sign, sqrt, square, squared_difference, subtract,
                                  truediv, floor, where, clip_by_value)
from tfteach.ops.gradients_impl import gradients
from tfteach.ops.clip_ops import (clip_by_average_norm, clip_by_global_norm, clip_by_norm,
                                  global_norm)
from tfteach.ops.div_no_nan import div_no_nan
from tfteach.ops.bool_reduce_ops import count_nonzero, reduce_all, reduce_any
from tfteach.ops.float_class_ops import is_finite, is_inf, is_nan
from tfteach.ops.cumulative_ops import cumprod, cumsum
from tfteach.ops.diag_ops import diag, diag_part
from tfteach.ops.v1_shorthands import tables_initializer, to_double, to_int32, to_int64
from tfteach.platform.behavior import (disable_eager_execution, disable_v2_behavior,
                                       disable_v2_tensorshape, enable_eager_execution,
                                       enable_v2_behavior, enable_v2_tensorshape,
                                       executing_eagerly)
from tfteach.ops.matrix_inverse_ops import matrix_inverse
from tfteach.ops.nd_index_ops import gather_nd, scatter_nd
from tfteach.ops.sequence_mask_ops import sequence_mask
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.ops.accumulator_ops import ConditionalAccumulator, SparseConditionalAccumulator
from tfteach.ops.gather_ops import (dynamic_stitch, gather, parallel_dynamic_stitch, unique,
                                    unsorted_segment_sum)
from tfteach.ops.mod_ops import floordiv, floormod, mod, truncatemod
from tfteach.ops.math_ops import cos, sin
from tfteach.ops.scatter_ops import scatter_add, scatter_sub, scatter_update
from tfteach.ops.strided_slice import strided_slice     # also tensor[...]
from tfteach.ops.unconnected_gradients import UnconnectedGradients
from tfteach.ops.nn_ops import sigmoid, tanh
# Registered in every process (a cluster task imports graphs that use them):
from tfteach.ops import conv_ops as _conv, normalization_ops as _norm, pooling_ops as _pool  # noqa: F401
from tfteach.ops import training_ops as _training  # noqa: F401 - a task runs Apply* ops
from tfteach.ops import summary_ops as _summary_ops  # noqa: F401 - and summary ops
from tfteach.ops import elu_ops as _elu_ops  # noqa: F401 - and Elu, Selu
from tfteach.ops import iterator_ops as _iterator_ops  # noqa: F401 - and tf.data's ops
from tfteach.ops import dataset_ops as _dataset_ops  # noqa: F401
from tfteach.ops import dataset_file_ops as _dataset_file_ops  # noqa: F401
from tfteach.ops.random_ops import (random_normal, random_shuffle, random_uniform,
                                    set_random_seed, truncated_normal)
from tfteach.ops.state_ops import (Variable, all_variables, assign, assign_add, assign_sub,
                                   count_up_to, global_variables, global_variables_initializer,
                                   initialize_all_variables, is_variable_initialized,
                                   local_variables, local_variables_initializer,
                                   trainable_variables, variables_initializer)
from tfteach.ops.partitioned_variables import (fixed_size_partitioner,
                                               min_max_variable_partitioner,
                                               variable_axis_size_partitioner)
from tfteach.ops.variable_scope import (AUTO_REUSE, VariableScope, get_local_variable,
                                        get_variable, get_variable_scope, variable_scope)
from tfteach.runtime.session_config import (ConfigProto, GPUOptions, GraphOptions, RunMetadata,
                                    RunOptions)
from tfteach.runtime.session import (InteractiveSession, Session, get_default_session,
                                     register_target_factory)

newaxis = None      # ``tensor[:, tf.newaxis]``, as TF

# The public API (``from tfteach import *``): TF 1.x names, plus tf.train/nn/layers/initializers
# (loaded on first use). tfteach-only modules (config, cluster, data, timeline, notebook,
# lessons) are reached as attributes and stay out of ``import *``.
__all__ = [
    "__version__", "abs", "Assert", "app", "flags", "gfile", "bfloat16", "complex64", "complex128", "int8", "int16", "qint8",
    "qint16", "qint32", "quint8", "quint16", "uint8", "uint16", "uint32", "uint64", "add", "add_n", "add_to_collection", "all_variables", "arg_max", "arg_min", "argmax", "argmin",
    "as_dtype", "assign", "assign_add", "assign_sub", "AUTO_REUSE", "bool", "broadcast_to", "case", "cast",
    "cond", "while_loop", "TensorArray", "map_fn", "scan", "foldl", "foldr",
    "reverse_sequence", "shape_n",
    "assert_equal", "assert_greater", "assert_greater_equal", "assert_less", "assert_less_equal",
    "assert_negative", "assert_non_negative", "assert_non_positive", "assert_none_equal",
    "assert_positive", "assert_rank", "assert_type", "check_numerics", "debugging", "Print", "print",
    "assert_integer", "assert_rank_at_least", "assert_scalar", "verify_tensor_all_finite",
    "bincount", "boolean_mask", "eye", "lin_space", "linspace", "matrix_diag", "matrix_diag_part",
    "matrix_set_diag", "meshgrid", "setdiff1d", "einsum", "multinomial", "norm", "reduce_logsumexp",
    "segment_sum", "tensordot",
    "clip_by_average_norm", "clip_by_global_norm", "clip_by_norm",
    "clip_by_value", "colocate_with", "concat", "ConditionalAccumulator", "ConfigProto",
    "constant", "constant_initializer", "container", "control_dependencies", "convert_to_tensor", "cos",
    "cumprod", "cumsum", "diag", "diag_part", "matrix_inverse",
    "gather_nd", "scatter_nd", "sequence_mask",
    "count_nonzero", "reduce_all", "reduce_any", "is_finite", "is_inf", "is_nan",
    "count_up_to", "device", "Dimension", "div_no_nan", "DeviceSpec", "div", "divide", "double", "DType", "dtypes",
    "dynamic_partition", "dynamic_stitch", "equal", "errors", "exp", "expand_dims", "FIFOQueue", "RandomShuffleQueue", "TextLineReader",
    "FixedLengthRecordReader", "WholeFileReader", "ReaderBase", "decode_csv", "decode_raw",
    "image", "random_crop", "reverse", "reverse_v2",
    "fill", "fixed_size_partitioner", "float16", "float32", "float64", "floor", "floordiv", "floormod", "truncatemod", "gather",
    "get_collection", "get_collection_ref", "get_default_graph", "get_default_session",
    "get_local_variable", "get_seed", "get_variable", "get_variable_scope", "global_norm", "global_variables",
    "global_variables_initializer", "glorot_normal_initializer", "glorot_uniform_initializer",
    "GPUOptions", "gradients", "Graph", "GraphDef", "GraphKeys", "GraphOptions", "greater",
    "greater_equal", "group", "half", "identity", "import_graph_def", "IndexedSlices",
    "initialize_all_variables", "initializers",
    "int32", "int64", "InteractiveSession", "invert_permutation", "is_variable_initialized",
    "layers", "less", "less_equal", "local_variables", "local_variables_initializer", "log",
    "log1p", "logical_and", "losses", "logical_not", "logical_or", "matmul", "maximum", "metrics", "minimum", "mod",
    "min_max_variable_partitioner", "mul", "multiply", "name_scope", "neg", "negative", "newaxis", "nn", "no_op", "NodeDef", "not_equal", "one_hot",
    "ones", "ones_initializer", "ones_like", "Operation", "pad", "parallel_dynamic_stitch",
    "placeholder", "placeholder_with_default", "pow", "QueueBase", "random_normal",
    "random_normal_initializer", "random_shuffle", "random_uniform", "random_uniform_initializer",
    "range", "rank", "reciprocal", "reduce_max", "reduce_mean", "reduce_min", "reduce_prod",
    "reduce_sum", "report_uninitialized_variables", "reset_default_graph", "reshape", "rsqrt",
    "RunMetadata", "RunOptions", "scatter_add", "scatter_sub", "scatter_update", "Session",
    "set_random_seed", "shape", "sigmoid", "sign", "sin", "size", "slice", "SparseConditionalAccumulator",
    "split", "sqrt", "square", "squared_difference", "squeeze", "stack", "stop_gradient",
    "strided_slice", "string",
    "sub", "subtract", "summary", "tables_initializer", "tanh", "Tensor", "TensorShape", "tile",
    "to_double", "to_float", "to_int32", "to_int64", "train",
    "trainable_variables", "transpose", "truediv", "truncated_normal",
    "truncated_normal_initializer", "tuple", "UnconnectedGradients", "unique",
    "unsorted_segment_sum", "unstack", "Variable", "variable_scope", "variables_initializer",
    "variable_axis_size_partitioner", "VariableScope", "variance_scaling_initializer", "where", "zeros", "zeros_initializer",
    "zeros_like", "disable_eager_execution", "disable_v2_behavior", "disable_v2_tensorshape",
    "enable_eager_execution", "enable_v2_behavior", "enable_v2_tensorshape", "executing_eagerly",
]



def _package_version() -> str:
    """The installed distribution's version (its one source is labextension/package.json)."""
    from importlib import metadata
    try:
        return metadata.version("tfteach")
    except metadata.PackageNotFoundError:     # imported from a source tree, not installed
        return "0+unknown"


__version__ = _package_version()
sub = subtract
reverse_v2 = reverse
mul = multiply
neg = negative


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where Jupyter finds the prebuilt JupyterLab extension inside this package."""
    return [{"src": "labextension", "dest": "tfteach"}]


def device(device_name_or_function):
    """``with tf.device('/gpu:0'):`` — request a device for the ops created inside."""
    return get_default_graph().device(device_name_or_function)


def name_scope(name, default_name=None, values=None):
    """``with tf.name_scope('tower_0'):`` — prefix the names of the ops created inside."""
    return get_default_graph().name_scope(name if name is not None else default_name)


def container(container_name):
    """``with tf.container('name'):`` put the variables and queues created inside into that
    resource container (``tf.Session.reset(target, ['name'])`` clears it on a cluster)."""
    return get_default_graph().container(container_name)


def colocate_with(op, ignore_existing=False):
    """Place the ops created inside on the same device as ``op``."""
    return get_default_graph().colocate_with(op, ignore_existing)


def control_dependencies(control_inputs):
    """Ops created inside run only after ``control_inputs``."""
    return get_default_graph().control_dependencies(control_inputs)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """The names of the variables not initialized yet (a 1-D string tensor)."""
    from tfteach.train.monitored_session import report_uninitialized_variables as _report
    return _report(var_list, name)


def get_seed(op_seed):
    from tfteach.ops.random_ops import get_seed as _get_seed
    return _get_seed(op_seed)


_LAZY = {"train": "tfteach.train", "nn": "tfteach.nn", "layers": "tfteach.layers",
         "data": "tfteach.data", "image": "tfteach.ops.image_ops", "config": "tfteach.config", "timeline": "tfteach.timeline",
         "cluster": "tfteach.cluster", "notebook": "tfteach.notebook",
         "initializers": "tfteach.ops.init_ops",
         "losses": "tfteach.ops.losses", "metrics": "tfteach.ops.metrics", "lessons": "tfteach.lessons",
         "summary": "tfteach.summary", "app": "tfteach.platform.app",
         "flags": "tfteach.platform.flags", "gfile": "tfteach.platform.gfile",
         "python_io": "tfteach.platform.python_io", "io": "tfteach.io",
         "compat": "tfteach.compat", "math": "tfteach.math",
         "random": "tfteach.random", "linalg": "tfteach.linalg",
         "logging": "tfteach.platform.tf_logging",
         "debugging": "tfteach.debugging", "contrib": "tfteach.contrib"}


def _grpc_session(target, graph=None, config=None):
    from tfteach.distributed.client.remote_session import RemoteSession
    return RemoteSession(target, graph, config)


def _grpc_reset(target, containers=None, config=None):
    from tfteach.distributed.client.remote_session import RemoteSession
    RemoteSession.reset(target, containers, config)


register_target_factory("grpc://", _grpc_session, _grpc_reset)


def _cluster_spec():
    from tfteach.distributed.protocol.cluster_spec import ClusterSpec
    return ClusterSpec


def _server():
    from tfteach.distributed.service.grpc_server import Server
    return Server


_late.TRAIN.update(ClusterSpec=_cluster_spec, Server=_server)


def __getattr__(name):
    """Submodules load on first use, so `import tfteach` stays fast."""
    if name in _LAZY:
        import importlib
        module = importlib.import_module(_LAZY[name])
        globals()[name] = module
        return module
    raise errors.missing_attribute("tfteach", f"tf.{name}", name)


def load_ipython_extension(ipython):
    """``%load_ext tfteach``: the magics (tfteach.notebook)."""
    from tfteach.notebook.magics import load_ipython_extension as _load
    _load(ipython)


def unload_ipython_extension(ipython):
    """``%unload_ext tfteach``: stop the magics' cluster and restore tracebacks."""
    from tfteach.notebook.magics import unload_ipython_extension as _unload
    _unload(ipython)

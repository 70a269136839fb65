"""``tf.train``: optimizers, the global step, learning-rate decay and checkpoints.

The cluster classes (``ClusterSpec``, ``Server``) belong to ``tfteach.distributed`` and are
attached by the top-level package; this module never imports the distributed layer.
"""
from tfteach.framework.graph import GraphKeys
from tfteach.framework.graph_def import write_graph
from tfteach.train.checkpoint_format import CheckpointState
from tfteach.train.learning_rate_decay import (cosine_decay, exponential_decay,
                                                inverse_time_decay,
                                                natural_exp_decay, piecewise_constant,
                                                polynomial_decay)
from tfteach.train.moving_averages import ExponentialMovingAverage
from tfteach.train.optimizer import Optimizer
from tfteach.train.optimizers import (AdagradOptimizer, AdamOptimizer,
                                      GradientDescentOptimizer, MomentumOptimizer,
                                      RMSPropOptimizer)
from tfteach.train.saver import (Saver, checkpoint_exists, get_checkpoint_state,
                                 latest_checkpoint, list_variables, load_variable)
from tfteach.train.training_util import (create_global_step, get_global_step,
                                         get_or_create_global_step, global_step)

__all__ = ["AdagradOptimizer", "AdamOptimizer", "CheckpointState", "ExponentialMovingAverage",
           "GradientDescentOptimizer", "cosine_decay", "inverse_time_decay", "natural_exp_decay",
           "piecewise_constant", "polynomial_decay",
           "GraphKeys", "MomentumOptimizer", "Optimizer", "RMSPropOptimizer", "Saver",
           "checkpoint_exists", "create_global_step", "exponential_decay",
           "get_checkpoint_state", "get_global_step", "get_or_create_global_step",
           "global_step", "latest_checkpoint", "list_variables", "load_variable",
           "write_graph"]

# Distributed training: device setter, sync replicas, sessions, hooks.
from tfteach.train.coordinator import Coordinator
from tfteach.train.device_setter import (GreedyLoadBalancingStrategy, byte_size_load_fn,
                                         replica_device_setter)
from tfteach.train.hooks import (CheckpointSaverHook, LoggingTensorHook, NanLossDuringTrainingError,
                                 NanTensorHook, SecondOrStepTimer, SessionRunArgs,
                                 SessionRunContext, SessionRunHook, SessionRunValues,
                                 StepCounterHook, StopAtStepHook)
from tfteach.train.monitored_session import (ChiefSessionCreator, MonitoredSession,
                                             MonitoredTrainingSession, Scaffold, SessionManager,
                                             SingularMonitoredSession, WorkerSessionCreator)
from tfteach.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from tfteach.train.input import (input_producer, limit_epochs, range_input_producer,
                                 slice_input_producer, string_input_producer)
from tfteach.train.batch_input import batch, batch_join, shuffle_batch, shuffle_batch_join
from tfteach.train.supervisor import Supervisor
from tfteach.train.sync_replicas_optimizer import SyncReplicasOptimizer

__all__ += ["CheckpointSaverHook", "ChiefSessionCreator", "Coordinator",
            "GreedyLoadBalancingStrategy", "LoggingTensorHook", "MonitoredSession",
            "MonitoredTrainingSession", "NanLossDuringTrainingError", "NanTensorHook",
            "QueueRunner", "Scaffold", "SecondOrStepTimer", "SessionManager", "SessionRunArgs",
            "SessionRunContext", "SessionRunHook", "SessionRunValues",
            "SingularMonitoredSession", "StepCounterHook", "StopAtStepHook", "Supervisor",
            "SyncReplicasOptimizer", "WorkerSessionCreator", "add_queue_runner",
            "byte_size_load_fn", "input_producer", "limit_epochs", "range_input_producer",
            "replica_device_setter", "slice_input_producer", "start_queue_runners",
            "string_input_producer", "batch", "batch_join", "shuffle_batch",
            "shuffle_batch_join"]


def __getattr__(name):
    """``ClusterSpec``/``Server``: provided by tfteach.distributed through ``tfteach._late``."""
    from tfteach import _late
    if name in _late.TRAIN:
        value = _late.TRAIN[name]()
        globals()[name] = value
        return value
    from tfteach.errors import missing_attribute
    raise missing_attribute("tfteach.train", f"tf.train.{name}", name)

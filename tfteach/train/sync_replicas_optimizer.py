"""``tf.train.SyncReplicasOptimizer``: synchronous data-parallel training, TF's design.

Every worker runs the same graph (between-graph replication). Its train op:
1. computes gradients and hands each one to the variable's ``ConditionalAccumulator``
   (on the variable's ps, ``shared_name=<var>/grad_accum``) tagged with the worker's
   ``sync_rep_local_step`` (a local variable on the worker); an ``IndexedSlices`` gradient
   (an embedding's) goes to a ``SparseConditionalAccumulator`` instead (``shape=()``, as
   TF), whose average is an IndexedSlices again, applied sparsely;
2. the accumulator silently drops a gradient whose local step is older than its own step
   (a *stale* gradient, computed from parameters that have since changed);
3. then waits for a token from ``sync_token_q`` (on the global step's device) and copies
   the token (a global step value) into its local step: this is the barrier.

The chief also runs a queue runner whose one op (``sync_op``) takes the average of
``replicas_to_aggregate`` gradients from every accumulator, applies it with the wrapped
optimizer (one global step), and puts ``tokens_per_step`` new tokens in the queue. With
``total_num_replicas > replicas_to_aggregate`` the extra workers are backups: each step
uses the first gradients to arrive and the rest come too late and are dropped.

State (Python side): the accumulators and devices, the token queue, the chief queue runner,
``chief_init_op``/``local_step_init_op``/``ready_for_local_init_op``. tfteach addition:
``gradients_accepted`` lists one bool tensor per variable: whether this worker's gradient
was accepted (True) or dropped as stale (False) in the step that fetches it.
"""
from __future__ import annotations

import logging
from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import GraphKeys, Operation, get_default_graph
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.ops import array_ops, state_ops
from tfteach.ops.accumulator_ops import ConditionalAccumulator, SparseConditionalAccumulator
from tfteach.ops.control_ops import group, no_op
from tfteach.ops.data_flow_ops import FIFOQueue
from tfteach.ops.state_ops import Variable
from tfteach.train.hooks import SessionRunHook
from tfteach.train.optimizer import Optimizer
from tfteach.train.queue_runner import QueueRunner

_log = logging.getLogger("tfteach.train")


class SyncReplicasOptimizer(Optimizer):
    """Aggregates gradients from ``replicas_to_aggregate`` workers per step (TF 1.x)."""

    def __init__(self, opt: Optimizer, replicas_to_aggregate: int,
                 total_num_replicas: int | None = None, variable_averages: Any = None,
                 variables_to_average: Any = None, use_locking: bool = False,
                 name: str = "sync_replicas") -> None:
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        super().__init__(use_locking, name)
        _log.info("SyncReplicasV2: replicas_to_aggregate=%s; total_num_replicas=%s",
                  replicas_to_aggregate, total_num_replicas)
        self._opt = opt
        self._replicas_to_aggregate = replicas_to_aggregate
        self._gradients_applied = False
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._total_num_replicas = total_num_replicas
        self._tokens_per_step = max(total_num_replicas, replicas_to_aggregate)
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list: list = []
        self.gradients_accepted: list = []

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list:
        """The wrapped optimizer's gradients (aggregation happens in apply_gradients)."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Operation:
        """Build the accumulators, the token queue and the chief's sync op; returns train op."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        g = get_default_graph()
        self._make_local_step(g, global_step)
        with g.name_scope(self._name):
            train_ops, aggregated = self._accumulate(g, grads_and_vars)
        with g.device(global_step.device), g.name_scope(""):
            update_op = self._opt.apply_gradients(aggregated, global_step)
            train_op, sync_op = self._token_barrier(g, train_ops, update_op, global_step)
        self._chief_queue_runner = QueueRunner(self._dummy_queue, [sync_op],
                                               cancel_op=self._cancel_op(g))
        with g.control_dependencies(None):
            chief_init = [self.local_step_init_op]
            for accum, device in self._accumulator_list:
                with g.device(device):
                    chief_init.append(accum.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = group(*chief_init)
        self._gradients_applied = True
        return train_op

    def _make_local_step(self, g: Any, global_step: Any) -> None:
        """``sync_rep_local_step``: a local variable kept on this worker's device."""
        local_anchor = no_op()
        with g.colocate_with(local_anchor):
            self._local_step = Variable(0, trainable=False, dtype=global_step.dtype,
                                        collections=[GraphKeys.LOCAL_VARIABLES],
                                        name="sync_rep_local_step")
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        from tfteach.train.monitored_session import report_uninitialized_variables
        self.ready_for_local_init_op = report_uninitialized_variables(
            g.get_collection(GraphKeys.GLOBAL_VARIABLES))

    def _accumulate(self, g: Any, grads_and_vars: list) -> tuple[list, list]:
        train_ops, aggregated = [], []
        for grad, var in grads_and_vars:
            with g.device(var.device):
                if grad is None:
                    aggregated.append((None, var))
                    continue
                accum, apply, taken = self._accumulator(grad, var)
                train_ops.append(apply)
                self.gradients_accepted.append(apply.outputs[0])
                aggregated.append((taken, var))
                self._accumulator_list.append((accum, var.device))
        return train_ops, aggregated

    def _accumulator(self, grad: Any, var: Variable) -> tuple:
        """(accumulator, its apply op, the average it takes) for ``var``'s gradient."""
        if isinstance(grad, IndexedSlices):
            accum = SparseConditionalAccumulator(grad.dtype, shape=(),
                                                 shared_name=var.name + "/grad_accum")
            apply = accum.apply_indexed_slices_grad(grad, local_step=self._local_step)
            return accum, apply, accum.take_indexed_slices_grad(self._replicas_to_aggregate)
        accum = ConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                       shared_name=var.name + "/grad_accum")
        apply = accum.apply_grad(grad, local_step=self._local_step)
        return accum, apply, accum.take_grad(self._replicas_to_aggregate)

    def _token_barrier(self, g: Any, train_ops: list, update_op: Any,
                       global_step: Any) -> tuple[Any, Any]:
        """The token queue: workers wait for a token; the sync op hands out new ones."""
        self._sync_token_queue = FIFOQueue(-1, global_step.dtype, shapes=(),
                                           name="sync_token_q", shared_name="sync_token_q")
        self._dummy_queue = FIFOQueue(1, dtypes.int32, shapes=(), name="dummy_queue",
                                      shared_name="dummy_queue")
        with g.control_dependencies(train_ops):
            token = self._sync_token_queue.dequeue()
        train_op = state_ops.assign(self._local_step, token)
        with g.control_dependencies([update_op]):
            # TF fills from the variable's read, which may run before the update and
            # shows the new step only because it aliases the buffer; the step is read
            # here explicitly, after the update, beside the variable.
            with g.colocate_with(global_step.op):
                new_step = global_step.read_value()
            tokens = array_ops.fill([self._tokens_per_step], new_step)
            sync_op = self._sync_token_queue.enqueue_many((tokens,))
        return train_op, sync_op

    def _cancel_op(self, g: Any) -> Operation:
        """Close the dummy queue (TF) and wake a sync op waiting for gradients (tfteach)."""
        with g.control_dependencies(None):
            wakes = [self._dummy_queue.close(cancel_pending_enqueues=True)]
            for accum, device in self._accumulator_list:
                with g.device(device):
                    wakes.append(accum.cancel_waiting_takes())
            return group(*wakes, name="sync_replicas_cancel")

    # ---- what the chief and the workers run ------------------------------------------------
    def get_chief_queue_runner(self) -> QueueRunner:
        if self._gradients_applied is False:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens: int = -1) -> Operation:
        """Tokens for the first step: ``replicas_to_aggregate`` of them by default."""
        if self._gradients_applied is False:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) vs "
                             f"{tokens_needed} (needed)")
        g = get_default_graph()
        with g.device(self._global_step.device), g.name_scope(""):
            if num_tokens > 0:
                tokens = array_ops.fill([num_tokens], self._global_step)
                return self._sync_token_queue.enqueue_many((tokens,))
            return no_op(name="no_init_tokens")

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        """The hook that initializes sync training in a MonitoredSession."""
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    # ---- delegation to the wrapped optimizer -----------------------------------------------
    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> list:
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list:
        return self._opt.variables()


class _SyncReplicasOptimizerHook(SessionRunHook):
    """Chief: init local step, accumulators and tokens, start the sync thread. Others: local step."""

    def __init__(self, sync_optimizer: SyncReplicasOptimizer, is_chief: bool,
                 num_tokens: int) -> None:
        self._sync_optimizer = sync_optimizer
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self) -> None:
        opt = self._sync_optimizer
        if opt._gradients_applied is False:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before "
                             "using the hook.")
        self._ready_for_local_init_op = opt.ready_for_local_init_op
        if self._is_chief:
            self._local_init_op = opt.chief_init_op
            self._q_runner = opt.get_chief_queue_runner()
            self._init_tokens_op = opt.get_init_tokens_op(self._num_tokens)
        else:
            self._local_init_op = opt.local_step_init_op
            self._q_runner = None
            self._init_tokens_op = None

    def after_create_session(self, session: Any, coord: Any) -> None:
        from tfteach.train.monitored_session import _ready
        ok, msg = _ready(self._ready_for_local_init_op, session,
                         "Model is not ready for SyncReplicasOptimizer local init.")
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready for "
                               f"SyncReplicasOptimizer local_init. Init op: "
                               f"{self._local_init_op.name}, error: {msg}")
        session.run(self._local_init_op)
        if self._init_tokens_op is not None:
            session.run(self._init_tokens_op)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)

"""The TF 1.x optimizers: GradientDescent, Momentum, Adagrad, Adam and RMSProp.

Each one names its hyperparameter tensors and slots as TF does (``w/Momentum``,
``w/Adam`` + ``w/Adam_1``, ``w/RMSProp`` + ``w/RMSProp_1``, Adam's ``beta1_power`` and
``beta2_power`` beside the first variable by name) and updates through TF's training ops
(``ApplyMomentum`` ...), whose kernels live in ``tfteach.ops.state_ops``. The update rules:

- GradientDescent: ``var -= lr * g``
- Momentum: ``accum = momentum * accum + g; var -= lr * accum``
  (Nesterov: ``var -= lr * g + lr * momentum * accum``)
- Adagrad: ``accum += g * g; var -= lr * g / sqrt(accum)`` (accum starts at 0.1)
- Adam: ``m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
  var -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)``
- RMSProp: ``ms = rho ms + (1 - rho) g^2; mom = momentum mom + lr g / sqrt(ms + eps);
  var -= mom`` (ms starts at 1; ``centered`` also tracks the mean gradient ``mg`` and
  divides by ``sqrt(ms - mg^2 + eps)``)

An ``IndexedSlices`` gradient updates only its rows, with TF's ops: GradientDescent
``ScatterSub`` of ``lr * values``; Momentum, Adagrad and RMSProp ``SparseApply*`` after
summing repeated indices; Adam decays all of ``m`` and ``v`` (``Assign``), adds the rows'
part with ``ScatterAdd``, and updates the whole variable from them (``AssignSub``).
"""
from __future__ import annotations

from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.ops import math_ops, state_ops
from tfteach.ops.control_ops import group
from tfteach.ops.init_ops import Constant, Ones
from tfteach.ops.scatter_ops import apply_sparse_update, scatter_add, scatter_sub
from tfteach.ops.state_ops import Variable
from tfteach.ops.training_ops import apply_update
from tfteach.train.optimizer import Optimizer


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent: ``var -= learning_rate * grad``."""

    def __init__(self, learning_rate: Any, use_locking: bool = False,
                 name: str = "GradientDescent") -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return apply_update("ApplyGradientDescent", [var], [self._cast(self._lr_t, var), grad],
                            use_locking=self._use_locking)

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Tensor:
        """``var[indices] -= lr * values``: ScatterSub adds repeated indices up itself."""
        delta = grad.values * self._cast(self._lr_t, var)
        return scatter_sub(var, grad.indices, delta, use_locking=self._use_locking)


class MomentumOptimizer(Optimizer):
    """Gradient descent with a running ``momentum`` slot (optionally Nesterov's)."""

    def __init__(self, learning_rate: Any, momentum: Any, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False) -> None:
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list: list) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._momentum_t = self._hyper(self._momentum, "momentum")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return apply_update("ApplyMomentum", [var, self.get_slot(var, "momentum")],
                            [self._cast(self._lr_t, var), grad,
                             self._cast(self._momentum_t, var)],
                            use_locking=self._use_locking, use_nesterov=self._use_nesterov)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        return apply_sparse_update("SparseApplyMomentum", [var, self.get_slot(var, "momentum")],
                                   [self._cast(self._lr_t, var), grad.values,
                                    self._cast(self._momentum_t, var)], grad.indices,
                                   use_locking=self._use_locking,
                                   use_nesterov=self._use_nesterov)


class AdagradOptimizer(Optimizer):
    """Per-coordinate steps shrinking with the summed squared gradients (``accumulator``)."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 use_locking: bool = False, name: str = "Adagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list: list) -> None:
        for v in var_list:
            init = Constant(self._initial_accumulator_value, dtype=v.dtype)
            self._get_or_make_slot_with_initializer(v, init, v.shape, v.dtype, "accumulator",
                                                    self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        return apply_update("ApplyAdagrad", [var, self.get_slot(var, "accumulator")],
                            [self._cast(self._lr_t, var), grad], use_locking=self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        return apply_sparse_update("SparseApplyAdagrad", [var, self.get_slot(var, "accumulator")],
                                   [self._cast(self._lr_t, var), grad.values], grad.indices,
                                   use_locking=self._use_locking)


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba): bias-corrected first and second moment estimates ``m``, ``v``."""

    def __init__(self, learning_rate: Any = 0.001, beta1: Any = 0.9, beta2: Any = 0.999,
                 epsilon: Any = 1e-8, use_locking: bool = False, name: str = "Adam") -> None:
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _beta_powers(self) -> tuple:
        return (self._get_non_slot_variable("beta1_power"),
                self._get_non_slot_variable("beta2_power"))

    def _create_slots(self, var_list: list) -> None:
        first = min(var_list, key=lambda v: v.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first)
        self._create_non_slot_variable(self._beta2, "beta2_power", first)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._lr, "learning_rate")
        self._beta1_t = self._hyper(self._beta1, "beta1")
        self._beta2_t = self._hyper(self._beta2, "beta2")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        b1p, b2p = self._beta_powers()
        c = self._cast
        return apply_update("ApplyAdam", [var, self.get_slot(var, "m"), self.get_slot(var, "v")],
                            [c(b1p, var), c(b2p, var), c(self._lr_t, var), c(self._beta1_t, var),
                             c(self._beta2_t, var), c(self._epsilon_t, var), grad],
                            use_locking=self._use_locking, use_nesterov=False)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Any:
        """TF's _apply_sparse_shared: decay m and v, add the rows' part, update all of var."""
        c, lock = self._cast, self._use_locking
        b1p, b2p = (c(b, var) for b in self._beta_powers())
        beta1, beta2 = c(self._beta1_t, var), c(self._beta2_t, var)
        lr = c(self._lr_t, var) * math_ops.sqrt(1 - b2p) / (1 - b1p)
        m_t = self._decay_and_add(self.get_slot(var, "m"), beta1, grad.indices,
                                  grad.values * (1 - beta1))
        v_t = self._decay_and_add(self.get_slot(var, "v"), beta2, grad.indices,
                                  (grad.values * grad.values) * (1 - beta2))
        step = lr * m_t / (math_ops.sqrt(v_t) + c(self._epsilon_t, var))
        return group(state_ops.assign_sub(var, step, use_locking=lock), m_t, v_t)

    def _decay_and_add(self, slot: Variable, decay: Tensor, indices: Tensor,
                       rows: Tensor) -> Tensor:
        g = slot.graph
        decayed = state_ops.assign(slot, slot * decay, use_locking=self._use_locking)
        with g.control_dependencies([decayed]):
            return scatter_add(slot, indices, rows, use_locking=self._use_locking)

    def _finish(self, update_ops: list, name_scope: str) -> Any:
        """After every update, advance beta1^t and beta2^t (on the first variable's device)."""
        b1p, b2p = self._beta_powers()
        g = b1p.graph
        with g.control_dependencies(update_ops), g.colocate_with(b1p.op):
            update_b1 = b1p.assign(math_ops.multiply(b1p, self._beta1_t),
                                   use_locking=self._use_locking)
            update_b2 = b2p.assign(math_ops.multiply(b2p, self._beta2_t),
                                   use_locking=self._use_locking)
        return group(*update_ops, update_b1, update_b2, name=name_scope)


class RMSPropOptimizer(Optimizer):
    """RMSProp (Hinton): divide by a running RMS of the gradients (``rms``, ``momentum``)."""

    def __init__(self, learning_rate: Any, decay: Any = 0.9, momentum: Any = 0.0,
                 epsilon: Any = 1e-10, use_locking: bool = False, centered: bool = False,
                 name: str = "RMSProp") -> None:
        super().__init__(use_locking, name)
        self._learning_rate, self._decay = learning_rate, decay
        self._momentum, self._epsilon, self._centered = momentum, epsilon, centered

    def _create_slots(self, var_list: list) -> None:
        for v in var_list:
            self._get_or_make_slot_with_initializer(v, Ones(dtype=v.dtype), v.shape, v.dtype,
                                                    "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._lr_t = self._hyper(self._learning_rate, "learning_rate")
        self._decay_t = self._hyper(self._decay, "decay")
        self._momentum_t = self._hyper(self._momentum, "momentum")
        self._epsilon_t = self._hyper(self._epsilon, "epsilon")

    def _apply_dense(self, grad: Tensor, var: Variable) -> Tensor:
        op_type, refs, hyper = self._inputs(grad, var)
        return apply_update("Apply" + op_type, refs, hyper, use_locking=self._use_locking)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Tensor:
        op_type, refs, hyper = self._inputs(grad.values, var)
        return apply_sparse_update("SparseApply" + op_type, refs, hyper, grad.indices,
                                   use_locking=self._use_locking)

    def _inputs(self, grad: Tensor, var: Variable) -> tuple[str, list, list]:
        """(op type without Apply/SparseApply, the refs, the other inputs in TF's order)."""
        c = self._cast
        hyper = [c(self._lr_t, var), c(self._decay_t, var), c(self._momentum_t, var),
                 c(self._epsilon_t, var), grad]
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return "CenteredRMSProp", [var, self.get_slot(var, "mg"), rms, mom], hyper
        return "RMSProp", [var, rms, mom], hyper

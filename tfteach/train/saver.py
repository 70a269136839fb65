"""``tf.train.Saver``: save variables to checkpoints and restore them.

A ``Saver`` is built for a fixed list of variables (default: all global variables), each
saved under a name (default: its op name, e.g. ``layer1/w``). At construction it adds the
restore ops to the graph, under ``save/``: one placeholder and one ``Assign`` per variable
(``save/Assign``, ``save/Assign_1``, ...) and ``save/restore_all``.

- ``save(sess, path, global_step=N)`` fetches the values through ``sess`` (so it works for
  variables on any device or task) and writes checkpoint ``path-N`` with
  ``tfteach.train.checkpoint_format`` (TF's V2 format, ``path-N.index`` and
  ``path-N.data-00000-of-00001``, written atomically; real TF restores it), then records
  it in the directory's ``checkpoint`` state file (also atomically) and only then deletes
  the oldest checkpoints beyond ``max_to_keep``, as TF does: a save killed at any point
  leaves the state file naming a complete checkpoint.
- ``restore(sess, path)`` reads the checkpoint (TF's V2 format, whoever wrote it, or
  tfteach's first ``.npz`` + JSON format; none at ``path``: ``ValueError``, as TF),
  checks every variable against it first (missing: ``NotFoundError``; other shape or
  dtype: ``InvalidArgumentError``, both naming the variable), and only then assigns them
  all in one run.

A partitioned variable (``get_variable(..., partitioner=...)``) is saved under its full name
in slices, one per part, as TF saves it (``tfteach.train.checkpoint_slices``); a restore
cuts each part out of the saved whole, so the number of parts may change between save and
restore, as in TF.

State: ``_last_checkpoints`` ([(prefix, time saved)], oldest first) and the time of the
last checkpoint kept by ``keep_checkpoint_every_n_hours``.
"""
from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from tfteach.errors import InvalidArgumentError, NotFoundError, with_hint
from tfteach.framework.graph import GraphKeys, Tensor, get_default_graph
from tfteach.i18n import tr
from tfteach.ops import array_ops, state_ops
from tfteach.ops.control_ops import group
from tfteach.ops.partitioned_variables import PartitionedVariable, save_slice_info
from tfteach.ops.state_ops import Variable
from tfteach.train import checkpoint_format as ckpt
from tfteach.train.checkpoint_slices import extents_of, index_of


class Saver:
    """Saves and restores variables (TF 1.x ``tf.train.Saver``)."""

    def __init__(self, var_list: Any = None, reshape: bool = False, sharded: bool = False,
                 max_to_keep: int | None = 5, keep_checkpoint_every_n_hours: float = 10000.0,
                 name: str | None = None, restore_sequentially: bool = False,
                 saver_def: Any = None, builder: Any = None, defer_build: bool = False,
                 allow_empty: bool = False, write_version: int = 2,
                 pad_step_number: bool = False, save_relative_paths: bool = False,
                 filename: str | None = None) -> None:
        self._graph = get_default_graph()
        self._vars, self._parts = _named_variables(var_list, self._graph)
        if not self._vars and not self._parts and not allow_empty:
            raise ValueError("No variables to save")
        self._max_to_keep = max_to_keep
        self._keep_every_s = keep_checkpoint_every_n_hours * 3600.0
        self._next_keep_time = time.time() + self._keep_every_s
        self._pad_step_number = pad_step_number
        self._last_checkpoints: list[tuple[str, float]] = []
        self._placeholders: dict[Variable, Tensor] = {}
        self._restore_op = self._build_restore(name or "save") \
            if self._vars or self._parts else None

    def _build_restore(self, name: str) -> Any:
        g = self._graph
        assigns = []
        with g.as_default(), g.name_scope(name):
            for _, var in self._slots():
                value = array_ops.placeholder(var.dtype, var.shape, name="restore_value")
                self._placeholders[var] = value
                assigns.append(state_ops.assign(var, value))
            return group(*assigns, name="restore_all")

    def _slots(self) -> list[tuple[str, Variable]]:
        """(checkpoint name, variable) of every whole variable, then of every part."""
        return list(self._vars.items()) + \
            [(key, part) for key, parts in self._parts.items() for part in parts]

    # ---- saving -------------------------------------------------------------------------
    def save(self, sess: Any, save_path: str, global_step: Any = None,
             latest_filename: str | None = None, meta_graph_suffix: str = "meta",
             write_meta_graph: bool = True, write_state: bool = True, **unused: Any) -> str:
        """Write a checkpoint of the variables' current values; returns its prefix."""
        prefix = os.fspath(save_path)
        if global_step is not None:
            step = global_step if isinstance(global_step, (int, np.integer)) else \
                int(sess.run(global_step))
            prefix = f"{prefix}-{step:08d}" if self._pad_step_number else f"{prefix}-{step}"
        slots = self._slots()
        values = sess.run([var._ref() for _, var in slots]) if slots else []
        whole, sliced = {}, {}
        for (key, var), value in zip(slots, values, strict=True):
            if key not in self._parts:
                whole[key] = value
                continue
            info = save_slice_info(var)
            sliced.setdefault(key, (info.full_shape, []))[1].append(
                (extents_of(info.var_offset, info.var_shape), value))
        new = not ckpt.checkpoint_exists(prefix)
        ckpt.write_checkpoint(prefix, whole, sliced)
        kept = list(self._last_checkpoints)
        doomed = self._remember(prefix)
        if write_state:
            try:
                ckpt.update_checkpoint_state(os.path.dirname(prefix) or ".", prefix,
                                             [p for p, _ in self._last_checkpoints],
                                             latest_filename or ckpt.STATE_FILENAME)
            except Exception:   # (a full disk) a new checkpoint no state file names: gone
                self._last_checkpoints = kept
                if new:
                    ckpt.delete_checkpoint(prefix)
                raise
        for old in doomed:  # only now that the state file no longer names them
            ckpt.delete_checkpoint(old)
        return prefix

    def _remember(self, prefix: str) -> list[str]:
        """Add ``prefix`` as newest; returns the oldest beyond ``max_to_keep``, to delete."""
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != prefix]
        self._last_checkpoints.append((prefix, time.time()))
        doomed: list[str] = []
        while self._max_to_keep and len(self._last_checkpoints) > self._max_to_keep:
            old, saved_at = self._last_checkpoints.pop(0)
            if saved_at >= self._next_keep_time:
                self._next_keep_time += self._keep_every_s
                continue
            doomed.append(old)
        return doomed

    @property
    def last_checkpoints(self) -> list[str]:
        """Prefixes of the checkpoints this saver still keeps, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        self._last_checkpoints = [(p, time.time()) for p in last_checkpoints]

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Adopt existing checkpoints (e.g. after a restart) so max_to_keep counts them."""
        self.set_last_checkpoints([p for p in checkpoint_paths if ckpt.checkpoint_exists(p)])

    # ---- restoring ----------------------------------------------------------------------
    def restore(self, sess: Any, save_path: str | None) -> None:
        """Set every variable to its value in checkpoint ``save_path`` (all or nothing)."""
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if not ckpt.checkpoint_exists(save_path):
            raise ValueError(with_hint(
                f"The passed save_path is not a valid checkpoint: {save_path}",
                tr("pass a checkpoint prefix as Saver.save returned it (e.g. "
                   "'train/model.ckpt-100', without a suffix); "
                   "tf.train.latest_checkpoint(directory) finds the newest one.")))
        stored = ckpt.read_checkpoint(save_path)
        feeds = {self._placeholders[var]: _checked(key, var, stored, save_path,
                                                   key in self._parts)
                 for key, var in self._slots()}
        if self._restore_op is not None:
            sess.run(self._restore_op, feed_dict=feeds)

    def as_saver_def(self) -> dict:
        return {"restore_op_name": getattr(self._restore_op, "name", None),
                "max_to_keep": self._max_to_keep, "version": 2}


def _checked(key: str, var: Variable, stored: dict, path: str, part: bool = False) -> np.ndarray:
    """The checkpoint's value for ``var`` (a part: its slice of the saved whole), or a
    learner-readable error naming it."""
    if key not in stored:
        near = ", ".join(sorted(stored)[:10]) or tr("(none)")
        raise NotFoundError(
            f"Key {key} not found in checkpoint {path}: the graph's variable '{key}' was never "
            f"saved there.", hint=tr(
                "the checkpoint holds: {names}. Restore with a Saver whose var_list maps "
                "checkpoint names to variables, e.g. Saver({{'old_name': v}}), or build the "
                "same model (same variable names) that wrote the checkpoint.", names=near))
    value = stored[key]
    if part:
        value = _slice_of(key, save_slice_info(var), value, path)
    want = var.shape.as_list() if var.shape.dims is not None else None
    if want is not None and not var.shape.is_compatible_with(value.shape):
        raise InvalidArgumentError(
            f"Assign requires shapes of both tensors to match. lhs shape= {want} rhs shape= "
            f"{list(value.shape)}: variable '{key}' has shape {want} in the graph but "
            f"{list(value.shape)} in checkpoint {path}.",
            hint=tr("the model changed since the checkpoint was written; rebuild it with the "
                    "same layer sizes, or restore only the unchanged variables "
                    "(var_list=...)."))
    if value.dtype != var.dtype.np:
        raise InvalidArgumentError(
            f"tensor_name = {key}; expected dtype {var.dtype.name} does not equal original "
            f"dtype {value.dtype.name} in checkpoint {path}.",
            hint=tr("create variable '{name}' with dtype={dtype}, as when it was saved.",
                    name=key, dtype=value.dtype.name))
    return value


def _slice_of(key: str, info: Any, value: np.ndarray, path: str) -> np.ndarray:
    """A part's slice of the saved whole tensor ``key`` (its full shape checked first)."""
    if list(value.shape) != list(info.full_shape):
        raise InvalidArgumentError(
            f"tensor_name = {key}; shape in shape_and_slice spec {list(info.full_shape)} does "
            f"not match the shape stored in checkpoint: {list(value.shape)} ({path})",
            hint=tr("the partitioned variable '{name}' has another full shape than when it was "
                    "saved; build it with the saved shape.", name=key))
    return value[index_of(extents_of(info.var_offset, info.var_shape))]


def _named_variables(var_list: Any, g: Any) -> tuple[dict, dict]:
    """(name -> Variable saved whole, name -> [parts saved as slices]), from None (all
    globals), a list or a dict. In a list, a part of a partitioned variable (or the
    PartitionedVariable) goes under the full name; in a dict, a PartitionedVariable or a
    list of parts does."""
    if var_list is None:
        var_list = g.get_collection(GraphKeys.GLOBAL_VARIABLES) + \
            g.get_collection("saveable_objects")
    if isinstance(var_list, dict):
        items = [(key, list(v) if isinstance(v, (list, tuple, PartitionedVariable)) else v)
                 for key, v in var_list.items()]
    else:
        items = [(_op_name(v), list(v) if isinstance(v, PartitionedVariable) else
                  [v] if save_slice_info(v) else v) for v in var_list]
    whole: dict[str, Variable] = {}
    parts: dict[str, list[Variable]] = {}
    for key, v in items:
        for var in v if isinstance(v, list) else [v]:
            _check_savable(var, isinstance(v, list))
        if key in whole or key in parts and not isinstance(v, list):
            raise ValueError(f"At least two variables have the same name: {key}")
        if isinstance(v, list):
            parts.setdefault(key, []).extend(v)
        else:
            whole[key] = v
    return whole, parts


def _check_savable(var: Any, part: bool) -> None:
    if not isinstance(var, Variable):
        raise TypeError(with_hint(f"Variable to save is not a Variable: {var!r}", tr(
            "pass tf.Variable objects (or a dict of name -> tf.Variable).")))
    if part and save_slice_info(var) is None:
        raise ValueError(with_hint(
            f"Slices must all be from the same partitioned variable: {var.name} is not a part "
            "of one.", tr("list the parts of one partitioned variable under one name, or pass "
                          "the PartitionedVariable itself.")))


def _op_name(v: Any) -> str:
    if isinstance(v, PartitionedVariable):
        return v.name
    info = save_slice_info(v)
    if info is not None:
        return info.full_name
    return v.op.name if hasattr(v, "op") else str(v)


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The prefix of the newest checkpoint in ``checkpoint_dir`` (None when there is none)."""
    return ckpt.latest_checkpoint(checkpoint_dir, latest_filename or ckpt.STATE_FILENAME)


def get_checkpoint_state(checkpoint_dir: str, latest_filename: str | None = None) -> Any:
    return ckpt.get_checkpoint_state(checkpoint_dir, latest_filename or ckpt.STATE_FILENAME)


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    return ckpt.checkpoint_exists(checkpoint_prefix)


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """[(name, shape)] of the variables in a checkpoint (or a directory's newest one)."""
    prefix = _resolve(ckpt_dir_or_file)
    return [(e.name, list(e.shape)) for e in sorted(ckpt.read_index(prefix).values())]


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """One variable's saved value."""
    stored = ckpt.read_checkpoint(_resolve(ckpt_dir_or_file))
    if name not in stored:
        raise NotFoundError(f"Key {name} not found in checkpoint {ckpt_dir_or_file}",
                            hint=tr("saved names: {names}.",
                                    names=", ".join(sorted(stored)) or tr("(none)")))
    return stored[name]


def _resolve(ckpt_dir_or_file: str) -> str:
    if os.path.isdir(ckpt_dir_or_file):
        found = latest_checkpoint(ckpt_dir_or_file)
        if found is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {ckpt_dir_or_file}")
        return found
    return ckpt_dir_or_file

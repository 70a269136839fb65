"""``tf.map_fn``, ``tf.scan``, ``tf.foldl``, ``tf.foldr``: TF 1.x's higher-order functions,
built as TF's Python builds them, on ``tf.while_loop`` and ``tf.TensorArray``.

Each unstacks ``elems`` (a tensor or a nested structure of tensors, sliced along their first
dimension) into TensorArrays, runs a ``while_loop`` whose body reads element ``i`` and calls
``fn``; ``map_fn`` and ``scan`` write each result into a TensorArray and stack it, the folds
carry the accumulator as a loop variable. Gradients come from the loop's and the
TensorArrays' gradients. Names as TF's: ``map/while/...``, ``scan/...``, ``foldl/...``.
"""
from __future__ import annotations

from typing import Any, Callable

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.nest import flatten, pack
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import convert_to_tensor, graph_of
from tfteach.ops.cond_ops import same_structure
from tfteach.ops.tensor_array import TensorArray
from tfteach.ops.while_ops import while_loop

__all__ = ["map_fn", "scan", "foldl", "foldr"]


def _callable(fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")


def _elements(elems: Any) -> tuple[list[Tensor], Any, Any]:
    """The flat element tensors, their count ``n`` (int or tensor) and the static count."""
    flat = [convert_to_tensor(e, name="elem") for e in flatten(elems)]
    if not flat:
        raise ValueError("elems must not be empty")
    for e in flat:
        if e.shape.rank == 0:
            raise ValueError(with_hint(
                "Elements in elems must be 1+ dimensional Tensors, not scalars",
                tr("map_fn, scan and the folds slice elems along its first dimension; "
                   "give them a tensor of rank 1 or more.")))
    static = flat[0].shape.dims[0] if flat[0].shape.rank else None
    for e in flat[1:]:
        if e.shape.rank and static is None:
            static = e.shape.dims[0]
    n = static if static is not None else array_ops.shape(flat[0])[0]
    return flat, n, static


def _unstacked(flat: list[Tensor], n: Any) -> list[TensorArray]:
    return [TensorArray(e.dtype, size=n, dynamic_size=False, infer_shape=True,
                        element_shape=TensorShape(list(e.shape.dims[1:])) if e.shape.rank
                        else None).unstack(e)
            for e in flat]


def _stacked(tas: list[TensorArray], static: Any) -> list[Tensor]:
    out = []
    for ta in tas:
        r = ta.stack()
        if r.shape.rank is not None:
            r.set_shape(TensorShape([static] + list(r.shape.dims[1:])))
        out.append(r)
    return out


def map_fn(fn: Callable, elems: Any, dtype: Any = None, parallel_iterations: int | None = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: str | None = None) -> Any:
    """``fn`` applied to each element of ``elems`` (sliced along dimension 0), stacked."""
    _callable(fn)
    g = graph_of(flatten(elems))
    with g.as_default(), g.name_scope(name or "map"):
        flat, n, static = _elements(elems)
        out_structure = elems if dtype is None else dtype
        out_dtypes = [e.dtype for e in flat] if dtype is None else \
            [dtypes.as_dtype(d) for d in flatten(dtype)]
        elems_ta = _unstacked(flat, n)
        accs = [TensorArray(dt, size=n, dynamic_size=False, infer_shape=infer_shape)
                for dt in out_dtypes]

        def compute(i: Tensor, tas: list) -> tuple:
            packed = pack(elems, [ta.read(i) for ta in elems_ta])
            values = fn(packed)
            _same(out_structure, values)
            flat_values = flatten(values)
            return i + 1, [ta.write(i, v) for ta, v in zip(tas, flat_values, strict=True)]

        _, r_a = while_loop(lambda i, _: i < n, compute, (array_ops.constant(0), accs),
                            parallel_iterations=parallel_iterations or 10,
                            back_prop=back_prop, swap_memory=swap_memory, maximum_iterations=n)
        return pack(out_structure, _stacked(r_a, static))


def _same(expected: Any, got: Any) -> None:
    if not same_structure(expected, got):
        raise ValueError(with_hint(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {expected}\n\nSecond structure: {got}",
            tr("fn must return the same nesting as elems (or as dtype / initializer).")))


def scan(fn: Callable, elems: Any, initializer: Any = None,
         parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
         infer_shape: bool = True, reverse: bool = False, name: str | None = None) -> Any:
    """The running results of ``a = fn(a, x)`` over the elements of ``elems``, stacked."""
    _callable(fn)
    g = graph_of(flatten(elems))
    with g.as_default(), g.name_scope(name or "scan"):
        flat, n, static = _elements(elems)
        elems_ta = _unstacked(flat, n)
        last = n - 1
        if initializer is None:
            structure, start = elems, 1
            a_flat = [ta.read(last if reverse else 0) for ta in elems_ta]
        else:
            structure, start = initializer, 0
            a_flat = [convert_to_tensor(v) for v in flatten(initializer)]
        accs = [TensorArray(a.dtype, size=n, dynamic_size=False, infer_shape=infer_shape,
                            element_shape=a.shape if infer_shape else None) for a in a_flat]
        if initializer is None:
            accs = [ta.write(last if reverse else 0, a) for ta, a in zip(accs, a_flat, strict=True)]

        def compute(i: Tensor, a: list, tas: list) -> tuple:
            packed = pack(elems, [ta.read(i) for ta in elems_ta])
            out = fn(pack(structure, a), packed)
            _same(structure, out)
            flat_out = [convert_to_tensor(v) for v in flatten(out)]
            tas = [ta.write(i, v) for ta, v in zip(tas, flat_out, strict=True)]
            return (i - 1 if reverse else i + 1), flat_out, tas

        first = (n - 1 - start) if reverse else start
        cond = (lambda i, _a, _t: i >= 0) if reverse else (lambda i, _a, _t: i < n)
        _, _, r_a = while_loop(cond, compute, (convert_to_tensor(first, dtype=dtypes.int32),
                                               a_flat, accs),
                               parallel_iterations=parallel_iterations, back_prop=back_prop,
                               swap_memory=swap_memory, maximum_iterations=n)
        return pack(structure, _stacked(r_a, static))


def _fold(fn: Callable, elems: Any, initializer: Any, parallel_iterations: int,
          back_prop: bool, swap_memory: bool, name: str, right: bool) -> Any:
    _callable(fn)
    g = graph_of(flatten(elems))
    with g.as_default(), g.name_scope(name):
        flat, n, _ = _elements(elems)
        elems_ta = _unstacked(flat, n)
        last = n - 1
        if initializer is None:
            a = pack(elems, [ta.read(last if right else 0) for ta in elems_ta])
            i = (n - 2) if right else 1
        else:
            a, i = initializer, (last if right else 0)

        def compute(i: Tensor, a: Any) -> list:
            elem = pack(elems, [ta.read(i) for ta in elems_ta])
            return [i - 1 if right else i + 1, fn(a, elem)]

        cond = (lambda i, a: i >= 0) if right else (lambda i, a: i < n)
        _, r_a = while_loop(cond, compute, [convert_to_tensor(i, dtype=dtypes.int32), a],
                            parallel_iterations=parallel_iterations, back_prop=back_prop,
                            swap_memory=swap_memory, maximum_iterations=n)
        return r_a


def foldl(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """``fn(...fn(fn(initializer, e0), e1)..., e_last)``, left to right."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory,
                 name or "foldl", right=False)


def foldr(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """``fn(...fn(fn(initializer, e_last), ...), e0)``, right to left."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory,
                 name or "foldr", right=True)

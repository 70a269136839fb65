"""Nested structures of values, as TF's ``nest``: flatten them to their leaves and pack leaves
back into the same nesting.

Dicts (any Mapping) give their values by sorted key; ``sequences`` names the types that nest
(lists and tuples for fetches and ``tf.cond``; tuples only for ``tf.data``, where a list is
one tensor). Packing rebuilds each sequence in its own type, namedtuples included.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["flatten", "pack"]

NESTING = (list, tuple)


def flatten(structure: Any, sequences: tuple[type, ...] = NESTING) -> list:
    """The leaves of ``structure``, depth first (dict values by sorted key)."""
    if isinstance(structure, Mapping):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k], sequences)]
    if isinstance(structure, sequences):
        return [leaf for item in structure for leaf in flatten(item, sequences)]
    return [structure]


def pack(template: Any, flat: Sequence[Any], sequences: tuple[type, ...] = NESTING) -> Any:
    """``flat``'s values nested as ``template`` is (the inverse of ``flatten``)."""
    items = iter(flat)

    def build(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: build(node[k]) for k in sorted(node)}
        if isinstance(node, sequences):
            built = [build(x) for x in node]
            return type(node)(*built) if hasattr(node, "_fields") else type(node)(built)
        return next(items)
    return build(template)

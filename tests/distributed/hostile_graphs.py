"""Hostile graph defs for the fuzz tests: a small valid graph (``base_graph``) and many
malformed variants of it (``hostile_graphs``), each labelled by what it breaks."""
from __future__ import annotations

import copy
import json
import random
from typing import Any, Callable, Iterator

import tfteach as tf
from tfteach.framework.graph_io import graph_to_dict


def base_graph(device: str = "") -> dict:
    """x (float32 [?, 1]) -> y = x @ v, a variable v with its initializer, a constant c;
    every node on ``device`` if given (a partition for RegisterGraph)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 1], name="x")
        v = tf.Variable([[2.0]], name="v")
        tf.matmul(x, v, name="y")
        tf.constant([1, 2, 3], name="c")
    ops = g.get_operations()
    return graph_to_dict(ops, {op.name: device for op in ops} if device else None)


def _node(gdef: dict, name: str) -> dict:
    return next(n for n in gdef["node"] if n["name"] == name)


def _set(name: str, key: str, value: Any) -> Callable[[dict], None]:
    def edit(gdef: dict) -> None:
        _node(gdef, name)[key] = value
    return edit


def _attr(name: str, key: str, value: Any) -> Callable[[dict], None]:
    def edit(gdef: dict) -> None:
        _node(gdef, name)["attr"][key] = value
    return edit


def _drop(name: str, key: str) -> Callable[[dict], None]:
    def edit(gdef: dict) -> None:
        del _node(gdef, name)[key]
    return edit


def _dup(gdef: dict) -> None:
    gdef["node"].append(copy.deepcopy(gdef["node"][0]))


def _cycle(gdef: dict) -> None:
    _node(gdef, "v/read")["input"] = ["y:0"]        # y reads v/read, which reads y


def _wrong_dtype(gdef: dict) -> None:
    c = _node(gdef, "c")                            # int32, moved before y
    gdef["node"].remove(c)
    gdef["node"].insert(0, c)
    _node(gdef, "y")["input"] = ["x:0", "c:0"]


def _array(**fields: Any) -> dict:
    return {"array": "AQAAAAIAAAADAAAA", "dtype": "<i4", "shape": [3], **fields}


EDITS: dict[str, Callable[[dict], None]] = {
    "unknown op type": _set("y", "op", "NoSuchOp"),
    "op type not a string": _set("y", "op", 123),
    "missing name": _drop("y", "name"),
    "empty name": _set("y", "name", ""),
    "name not a string": _set("y", "name", ["y"]),
    "duplicate name": _dup,
    "input names a missing node": _set("y", "input", ["nope:0", "v/read:0"]),
    "input output index too large": _set("y", "input", ["x:7", "v/read:0"]),
    "input output index negative": _set("y", "input", ["x:-1", "v/read:0"]),
    "input output index not a number": _set("y", "input", ["x:abc", "v/read:0"]),
    "control input names a missing node": _set("y", "input", ["x:0", "v/read:0", "^nope"]),
    "input not a string": _set("y", "input", [5, "v/read:0"]),
    "inputs not a list": _set("y", "input", "x:0"),
    "too few inputs": _set("y", "input", ["x:0"]),
    "input of the wrong dtype": _wrong_dtype,
    "attrs not a dict": _set("y", "attr", ["T"]),
    "unknown attr encoding": _attr("y", "T", {"foo": 1}),
    "bad dtype name": _attr("x", "dtype", {"dtype": "float33"}),
    "dtype attr a number": _attr("x", "dtype", 5),
    "missing dtype attr": lambda g: _node(g, "x")["attr"].pop("dtype"),
    "negative dim": _attr("x", "shape", {"shape": [-2, 1]}),
    "absurd shape": _attr("v", "shape", {"shape": [1 << 40, 1 << 40]}),
    "absurd zero-size shape": _attr("v", "shape", {"shape": [0, 1 << 62]}),
    "dim too large for int64": _attr("x", "shape", {"shape": [1 << 70]}),
    "dim a float": _attr("x", "shape", {"shape": [1e308]}),
    "shape not a list": _attr("x", "shape", {"shape": "abc"}),
    "array bad base64": _attr("c", "value", _array(array="!!!")),
    "array object dtype": _attr("c", "value", _array(dtype="|O")),
    "array shape mismatch": _attr("c", "value", _array(shape=[7])),
    "array negative shape": _attr("c", "value", _array(shape=[-3])),
    "array bad dtype": _attr("c", "value", _array(dtype="nonsense")),
    "strings shape mismatch": _attr("c", "value", {"strings": ["a"], "shape": [4]}),
    "const value and dtype differ": _attr("c", "dtype", {"dtype": "float32"}),
    "cycle": _cycle,
    "self loop": _set("y", "input", ["y:0", "v/read:0"]),
    "node not a dict": lambda g: g["node"].append("y"),
    "device not a string": _set("y", "device", 7),
    "device malformed": _set("y", "device", "/job:a:b:c/what"),
    "colocation not a list": _set("v/read", "colocation", 3),
    "colocation with a missing node": _set("v/read", "colocation", ["nope"]),
    "version missing": lambda g: g.pop("version"),
    "nodes not a list": lambda g: g.__setitem__("node", {"x": 1}),
}

RAW: dict[str, bytes] = {
    "not json": b"\x00\xffnot json",
    "json list": b"[]",
    "deeply nested": b"[" * 100_000,
    "huge number": b'{"version": 1, "node": [{"name": "x", "op": "Placeholder", '
                   b'"attr": {"dtype": {"dtype": "float32"}, "shape": {"shape": [1e999]}}}]}',
}


def hostile_graphs() -> Iterator[tuple[str, bytes]]:
    """Every hostile graph def as ``(label, JSON bytes)``."""
    for label, edit in EDITS.items():
        gdef = base_graph()
        edit(gdef)
        yield label, json.dumps(gdef).encode()
    yield from RAW.items()


def random_graph(rng: random.Random) -> bytes:
    """A hostile graph def, or the valid one with one random field replaced."""
    if rng.random() < 0.5:
        return rng.choice(list(hostile_graphs()))[1]
    gdef = base_graph()
    node = rng.choice(gdef["node"])
    key = rng.choice(sorted(node))
    node[key] = rng.choice([None, -1, 1 << 63, "", "\u2603", [None], {"a": []}, 1.5, True])
    return json.dumps(gdef).encode()

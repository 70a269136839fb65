"""Every ``tf.*`` name the corpus of learners' programs (``wild/``) uses exists in tfteach.

The names are read from the programs' syntax trees: every attribute chain off ``tf``
(``tf.train.Saver``, ``tf.nn.conv2d``, ``tf.GraphKeys.UPDATE_OPS``), up to a call or a
subscript; ``tf.app.flags.FLAGS.<flag>`` stops at ``FLAGS`` (its flags are the program's
own). A name tfteach lacks fails the test unless ``PENDING`` lists it with the reason;
``PENDING`` may only shrink: a listed name that tfteach has, or that no program uses,
fails too, so it is taken off the list when it lands."""
from __future__ import annotations

import ast
from pathlib import Path

import tfteach

WILD = Path(__file__).resolve().parent / "wild"
SHIM = "wild_tf.py"

PENDING: dict[str, str] = {}


def _chain(node: ast.Attribute) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not (isinstance(node, ast.Name) and node.id == "tf"):
        return None
    parts.reverse()
    if "FLAGS" in parts:
        parts = parts[:parts.index("FLAGS") + 1]
    return "tf." + ".".join(parts)


def used_names() -> dict[str, set[str]]:
    """``tf.*`` name -> the corpus programs that use it."""
    names: dict[str, set[str]] = {}
    for path in sorted(WILD.glob("*.py")):
        if path.name == SHIM or path.name in ("corpus.py", "runner.py", "record.py"):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and (name := _chain(node)):
                names.setdefault(name, set()).add(path.name)
    return _outermost(names)


def _outermost(names: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop a chain's prefixes that the walk met as their own nodes (``tf.train`` of
    ``tf.train.Saver`` is checked by checking the whole chain)."""
    return {n: files for n, files in names.items()
            if not any(other.startswith(n + ".") for other in names)}


def has(name: str) -> bool:
    obj = tfteach
    for part in name.split(".")[1:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            return False
    return True


def test_the_corpus_uses_many_names():
    assert len(used_names()) >= 80


def test_tfteach_has_every_name_the_corpus_uses():
    missing = {name: sorted(files) for name, files in used_names().items()
               if name not in PENDING and not has(name)}
    assert missing == {}, "tfteach lacks these names that learners' programs use"


def test_the_pending_list_only_shrinks():
    used = used_names()
    landed = [name for name in PENDING if has(name)]
    unused = [name for name in PENDING if name not in used]
    assert landed == [], f"tfteach has these now: take them off PENDING: {landed}"
    assert unused == [], f"no program uses these: take them off PENDING: {unused}"

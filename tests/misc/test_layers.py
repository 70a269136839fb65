"""No module under tfteach/ imports a module of a higher layer, and no modules import each
other (directly or through others).

The layers, lowest first (a module may import its own layer and any lower one):

====  ============  ==========================================================================
rank  layer         modules
====  ============  ==========================================================================
0     framework     tfteach.framework.*, tfteach.errors, tfteach.i18n (the learner's
                    language and message catalogs), tfteach._late (loaders a lower layer
                    shows but a higher one registers), tfteach.platform.* (tf.app, tf.flags,
                    tf.gfile, tf.python_io)
1     ops           tfteach.ops.*, tfteach.layers, tfteach.nn, tfteach.io (the tf.layers /
                    tf.nn / tf.io re-exports of ops), tfteach.data.* (NumPy loaders, and tf.data's
                    Dataset and Iterator from the ops)
2     devices       tfteach.devices.*, tfteach.config (virtual GPUs: a front to devices)
3     runtime       tfteach.runtime.*, tfteach.timeline (re-export of runtime.timeline)
4     train         tfteach.train.*, tfteach.summary (event files for TensorBoard)
5     hardware      tfteach.hardware.* (modelled hardware: profiles, calibration, predict;
                    it places and partitions with the runtime, and its validation graphs
                    train models, so it sits above train)
6     distributed   tfteach.distributed.*, tfteach.cluster, tfteach.server (re-exports)
7     notebook      tfteach.notebook.*, tfteach.lessons (a lesson's checks: notebook-facing),
                    tfteach (the package itself: the public ``import tfteach as tf`` API,
                    which loads train, distributed and the notebook magics on first use),
                    tfteach.compat (``tf.compat``, whose ``v1`` is the package)
8     apps          tfteach.cli, tfteach.experiments, tfteach.examples.* (programs that use
                    the public API)
====  ============  ==========================================================================

Imports are read with ``ast``: module-level and function-level imports count; imports under
``if TYPE_CHECKING:`` do not (they never run). ``from tfteach import errors`` counts as an
import of ``tfteach.errors``; ``import tfteach`` as an import of the package itself. Imports
through ``importlib`` are not seen.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tfteach"

LAYERS = ["framework", "ops", "devices", "runtime", "train", "hardware", "distributed", "notebook",
          "apps"]

# Top-level modules and the layer each belongs to (subpackages take their own name's layer).
PLACES = {
    "tfteach.errors": "framework", "tfteach.i18n": "framework", "tfteach._late": "framework", "tfteach.data": "ops",
    "tfteach.platform": "framework",
    "tfteach.layers": "ops", "tfteach.nn": "ops", "tfteach.io": "ops",
    "tfteach.math": "ops", "tfteach.random": "ops", "tfteach.linalg": "ops",
    "tfteach.contrib": "ops",
    "tfteach.debugging": "ops",
    "tfteach.config": "devices", "tfteach.timeline": "runtime", "tfteach.summary": "train",
    "tfteach.cluster": "distributed", "tfteach.server": "distributed",
    "tfteach.lessons": "notebook", "tfteach": "notebook", "tfteach.compat": "notebook",
    "tfteach.cli": "apps", "tfteach.experiments": "apps", "tfteach.examples": "apps",
}

# Imports that break the layering today, each with why it is still there. The test fails
# when one of these goes away (remove it here) as well as when a new one appears.
KNOWN_VIOLATIONS: dict[str, str] = {}

# Imports that close an import cycle today, each with why it is still there. The test fails
# when one of these no longer closes a cycle (remove it here) as well as when a new cycle appears.
KNOWN_CYCLE_IMPORTS: dict[str, str] = {
    "tfteach -> tfteach.notebook.magics":
        "%load_ext tfteach needs load_ipython_extension on the package, and notebook modules "
        "run user code with the public API (import tfteach as tf)",
    "tfteach.runtime.program -> tfteach.runtime.executor":
        "straight_line binds the executor's _keep into the code it compiles",
}


def layer_of(module: str) -> str | None:
    """The layer of a tfteach module name (``None`` for modules outside tfteach)."""
    parts = module.split(".")
    if parts[0] != "tfteach":
        return None
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    for n in (2, 1):
        if ".".join(parts[:n]) in PLACES:
            return PLACES[".".join(parts[:n])]
    raise AssertionError(f"{module} has no layer: add it to PLACES in {__file__}")


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imported_modules(path: Path, type_checking: bool = False) -> set[str]:
    """The tfteach modules a file imports (``from pkg import sub`` names ``pkg.sub``); imports
    under ``if TYPE_CHECKING:`` count only when ``type_checking`` is true."""
    here, tree = module_name(path), ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    skip = set() if type_checking else {
        id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
        and _is_type_checking(node) for b in node.body for n in ast.walk(b)}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, here, path.name == "__init__.py")
            for a in node.names:
                sub = f"{base}.{a.name}"
                is_module = (PACKAGE.parent / (sub.replace(".", "/") + ".py")).exists() or \
                    (PACKAGE.parent / sub.replace(".", "/") / "__init__.py").exists()
                found.add(sub if is_module else base)
    return {m for m in found if m.split(".")[0] == "tfteach"}


def violations() -> set[str]:
    """``module -> imported module`` for each import of a higher layer."""
    out = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        rank = LAYERS.index(layer_of(here))
        for imported in imported_modules(path):
            if LAYERS.index(layer_of(imported)) > rank:
                out.add(f"{here} -> {imported}")
    return out


def import_graph(root: Path = PACKAGE, type_checking: bool = False) -> dict[str, set[str]]:
    """Each tfteach module under ``root`` and the other tfteach modules it imports."""
    graph = {}
    for path in sorted(root.rglob("*.py")):
        here = module_name(path)
        graph[here] = imported_modules(path, type_checking) - {here}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules that ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other (directly or through others)."""
    reach = {m: reachable(graph, m) for m in graph}
    groups = {frozenset({m} | {o for o in reach[m] if m in reach.get(o, ())})
              for m in graph if m in reach[m]}
    return sorted(sorted(g) for g in groups)


def _split(edge: str) -> tuple[str, str]:
    importer, imported = edge.split(" -> ")
    return importer, imported


def test_no_import_cycles_among_tfteach_modules():
    graph = import_graph()
    for edge in KNOWN_CYCLE_IMPORTS:
        importer, imported = _split(edge)
        graph.get(importer, set()).discard(imported)
    cycles = import_cycles(graph)
    assert not cycles, ("modules that import each other, directly or through others (an "
                        "import inside a function counts):\n  "
                        + "\n  ".join(", ".join(c) for c in cycles))


def test_known_cycle_imports_still_close_a_cycle():
    graph = import_graph()
    gone = [edge for edge in KNOWN_CYCLE_IMPORTS
            if _split(edge)[1] not in graph.get(_split(edge)[0], set())
            or _split(edge)[0] not in reachable(graph, _split(edge)[1])]
    assert not gone, ("no longer a cycle, so remove from KNOWN_CYCLE_IMPORTS in this test:\n  "
                      + "\n  ".join(gone))


def test_no_module_imports_a_higher_layer():
    new = sorted(violations() - set(KNOWN_VIOLATIONS))
    assert not new, ("imports of a higher layer (" + " < ".join(LAYERS) + "):\n  "
                     + "\n  ".join(new))


def test_known_violations_are_still_there():
    gone = sorted(set(KNOWN_VIOLATIONS) - violations())
    assert not gone, ("fixed, so remove from KNOWN_VIOLATIONS in this test:\n  "
                      + "\n  ".join(gone))


def test_every_module_has_a_layer():
    for path in PACKAGE.rglob("*.py"):
        assert layer_of(module_name(path)) in LAYERS, path

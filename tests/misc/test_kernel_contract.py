"""The kernel contract (``tfteach/framework/kernel.py``): a kernel uses only what its context
lists and never reaches the cluster engine. Checked on the source: no module that defines a
registered kernel reads ``.engine`` off a kernel context, its resources, or a name bound from
them (``res = ctx.resources; res.engine``), nor asks ``getattr(..., "engine")`` of one."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import tfteach  # noqa: F401 - registers every op and its kernel
from tfteach.distributed.contract import transport_ops  # noqa: F401 - _Send and _Recv
from tfteach.framework import registry

PACKAGE = Path(tfteach.__file__).parent
CONTEXT_NAMES = {"ctx", "context", "resources", "res"}   # how kernels name what they are given
FORBIDDEN = "engine"


def _kernel_modules() -> dict[Path, set[str]]:
    """Each module under tfteach/ defining a registered kernel -> its kernels' names."""
    out: dict[Path, set[str]] = {}
    for op_type in registry.registered_types():
        kernel = registry.get(op_type).kernel
        kernel = getattr(kernel, "func", kernel)          # a functools.partial
        if kernel is None or not inspect.isfunction(kernel):
            continue
        path = Path(inspect.getsourcefile(kernel)).resolve()
        if PACKAGE in path.parents:
            out.setdefault(path, set()).add(kernel.__name__)
    return out


def _root(node: ast.AST) -> str | None:
    """The name at the start of an attribute chain (``a`` of ``a.b.c``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _context_names(fn: ast.FunctionDef | ast.AsyncFunctionDef, kernels: set[str]) -> set[str]:
    """The names in ``fn`` that hold a kernel context or what was read from one."""
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    names = set(params) & CONTEXT_NAMES
    if fn.name in kernels and params:
        names.add(params[0])                               # a kernel's first argument
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and _root(node.value) in names:
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def engine_reads(source: str, kernels: set[str] = frozenset()) -> list[int]:
    """The lines of ``source`` where a kernel context's ``.engine`` is read."""
    lines = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = _context_names(fn, kernels)
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and node.attr == FORBIDDEN and \
                    _root(node.value) in names:
                lines.append(node.lineno)
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "getattr" \
                    and len(node.args) >= 2 and _root(node.args[0]) in names \
                    and getattr(node.args[1], "value", None) == FORBIDDEN:
                lines.append(node.lineno)
    return lines


def test_the_check_finds_a_kernel_that_reaches_the_engine():
    reached = '''
def _recv_kernel(ctx):
    res = ctx.resources
    res.engine.pull(res.step_id)

def helper(resources):
    return getattr(resources, "engine")

def _other_kernel(c, x):
    return c.resources.engine.task
'''
    assert engine_reads(reached, {"_recv_kernel", "_other_kernel"}) == [4, 7, 10]
    assert engine_reads("def f(ctx):\n    return ctx.resources.rendezvous\n") == []


def test_transfer_kernels_are_registered_where_the_check_looks():
    modules = _kernel_modules()
    assert {"_send_kernel", "_recv_kernel"} <= modules[Path(transport_ops.__file__).resolve()]
    assert len(modules) > 20        # every op family's kernels are read


def test_no_kernel_reads_the_engine_from_its_context():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}"
             for path, kernels in sorted(_kernel_modules().items())
             for line in engine_reads(path.read_text(), kernels)]
    assert not found, ("kernels reach the engine (use ctx.resources.rendezvous, the "
                       "contract of tfteach/framework/kernel.py): " + ", ".join(found))

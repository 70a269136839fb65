"""Conformance: every lesson's TF1 code cells, run on tfteach and on TensorFlow's compat.v1.

For each lesson, the cells that TF can run are executed in order (state carries over, as in
the notebook) in two fresh processes, one per runtime (``lesson_runner.py``): on TF with
``import tensorflow.compat.v1 as tf`` in graph mode for ``import tfteach as tf``, three CPUs
standing in for the lessons' two virtual GPUs (``/gpu:i`` asks for ``CPU:i+1``, translated
back in what is compared). Then, cell by cell, we compare:

- errors: a cell that raises on one runtime raises the same error class on the other;
- placements: the device of every node both runtimes ran in the cell's traced steps; a node
  that nobody placed and that TF put on CPU:0 while tfteach put it on a GPU is not compared
  (TF here has no GPU, so its default device is the CPU);
- values: what the cell printed (after the lessons' nbval sanitizers, which hide timings,
  ports and addresses; numbers within a tolerance) and the numbers and numeric arrays it
  bound to names.

A cell says how it is compared in its metadata, ``{"tfteach": {"tf_compat": ..., "why": ...}}``:

- no ``tf_compat`` (or ``true``): all of the above;
- ``"runs"``: it runs on both and errors and placements are compared, not what it printed or
  bound (random initial values, the devices TF lists instead of GPUs);
- ``"helpers"``: it also uses tfteach helpers that are not TF's API (``tfteach.data``'s
  digits); both runtimes import them from tfteach, and everything is compared;
- ``"body"``: a ``%%placement`` cell; its body runs on both as the magic runs it (a fresh
  graph, ``--soft``, ``--config``, ``--run``), and errors, the device of every node (from the
  placement log) and the fetched values are compared;
- a solution cell's first line, ``%%solution N.M`` (it runs only when asked for), is left out
  and the rest is compared as marked;
- ``false``: tfteach only (magics, ``tfteach.notebook``, ``LocalCluster``, ``tfteach.config``,
  the lesson checks, or a cell that uses what such a cell made); run on neither here.

Every mark needs a ``why``. A cell that is neither comparable nor marked fails its test, as
does an unmarked cell with a magic or a use of tfteach (an import from it, or a name such an
import bound anywhere in the lesson). ``KNOWN_DIFFERENCES`` lists the
cells where tfteach and TF still differ and should not: their tests are strict xfails.
"""
from __future__ import annotations

import ast
import configparser
import functools
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import numpy as np
import pytest

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

pytest.importorskip("tensorflow", reason="TensorFlow is not installed "
                    "(pip install -e '.[conformance]')")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lessons"))
from lesson_tools import LESSONS, SANITIZE, lesson_env  # noqa: E402

RUNNER = Path(__file__).with_name("lesson_runner.py")
MARKS = (True, "runs", "helpers", "body", False)
RTOL, ATOL = 1e-4, 1e-6
SETUP_LINES = re.compile(r"^(%load_ext tfteach|import tfteach as tf)$", re.MULTILINE)
SOLUTION_LINE = re.compile(r"\A%%solution [\d.]+\n")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
MISSING = ("NameError", "ImportError", "ModuleNotFoundError", "SyntaxError")

# "lesson number:cell id" -> why tfteach and TF differ there, though they should not.
KNOWN_DIFFERENCES: dict[str, str] = {}


def mark(cell) -> object:
    return cell.metadata.get("tfteach", {}).get("tf_compat", True)


def lesson_cells() -> list[tuple[Path, object]]:
    return [(path, cell) for path in sorted(LESSONS.glob("*.ipynb"))
            for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]


def cell_name(path: Path, cell) -> str:
    return f"{path.name[:2]}:{cell.id}"


def compared_cells() -> list:
    params = []
    for path, cell in lesson_cells():
        if mark(cell) is False:
            continue
        name = cell_name(path, cell)
        marks = [pytest.mark.xfail(reason=KNOWN_DIFFERENCES[name], strict=True)] \
            if name in KNOWN_DIFFERENCES else []
        params.append(pytest.param(path, cell, id=name.replace(":", "-"), marks=marks))
    return params


@functools.cache
def run_lesson(path: Path) -> tuple[dict, dict]:
    """Run the lesson's TF-runnable cells on tfteach and on TF: {cell id: record} for each."""
    return run_cells([{"key": c.id, "source": SOLUTION_LINE.sub("", c.source), "how": mark(c)}
                      for c in nbformat.read(path, as_version=4).cells
                      if c.cell_type == "code" and mark(c) is not False], path.parent)


def run_cells(cells: list[dict], cwd: Path) -> tuple[dict, dict]:
    """``cells`` run in order in a fresh process per runtime, side by side."""
    env = {**lesson_env(), "MPLBACKEND": "Agg", "TF_CPP_MIN_LOG_LEVEL": "2"}
    with tempfile.TemporaryDirectory(prefix="lesson-on-tf-") as tmp:
        work = Path(tmp)
        (work / "cells.json").write_text(json.dumps(cells))
        runs = [start_runner(rt, work, cwd, env) for rt in ("tfteach", "tf")]
        for proc in runs:
            try:
                proc.wait(timeout=240)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return read_records(work, "tfteach"), read_records(work, "tf")


def start_runner(runtime: str, work: Path, cwd: Path, env: dict) -> subprocess.Popen:
    with (work / f"{runtime}.err").open("w") as err:
        return subprocess.Popen([sys.executable, str(RUNNER), runtime, str(work / "cells.json"),
                                 str(work / f"{runtime}.jsonl")],
                                cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)


def read_records(work: Path, runtime: str) -> dict:
    """{cell key: record} of what the runner wrote, and the end of its stderr as "_stderr"."""
    out = work / f"{runtime}.jsonl"
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    stderr = (work / f"{runtime}.err").read_text()[-3000:]
    return {r["key"]: r for r in records} | {"_stderr": stderr}


def read_sanitizers() -> list[tuple[re.Pattern, str]]:
    """The lessons' nbval sanitizers (timings, ports, addresses), in order."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(SANITIZE)
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


SANITIZERS = read_sanitizers()


def sanitized(text: str) -> str:
    for pattern, replacement in SANITIZERS:
        text = pattern.sub(replacement, text)
    return text


def same_text(ours: str, theirs: str) -> bool:
    """Equal once sanitized, apart from numbers, and the numbers equal within the tolerance."""
    ours, theirs = sanitized(ours), sanitized(theirs)
    if NUMBER.split(ours) != NUMBER.split(theirs):
        return False
    a, b = NUMBER.findall(ours), NUMBER.findall(theirs)
    return len(a) == len(b) and all(
        np.isclose(float(x), float(y), rtol=RTOL, atol=ATOL) for x, y in zip(a, b))


def same_value(ours: dict, theirs: dict) -> bool:
    if "items" in ours or "items" in theirs:
        return len(ours.get("items", [])) == len(theirs.get("items", [])) and all(
            same_value(a, b) for a, b in zip(ours["items"], theirs["items"]))
    a, b = np.asarray(ours["value"]), np.asarray(theirs["value"])
    return ours["dtype"] == theirs["dtype"] and a.shape == b.shape and \
        np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)


def default_device_difference(ours: list, theirs: list) -> bool:
    """An op nobody placed: TF (no GPU here) puts it on CPU:0, tfteach on a GPU."""
    requested_type = re.search(r"device:\w+|/[cg]pu:", theirs[1], re.IGNORECASE)
    return theirs[0].endswith("CPU:0") and "GPU" in ours[0] and requested_type is None


def placement_problems(ours: dict, theirs: dict) -> list[str]:
    return [f"{node} ran on {ours[node][0]} (tfteach), {theirs[node][0]} (TF)"
            for node in sorted(ours.keys() & theirs.keys())
            if ours[node][0] != theirs[node][0]
            and not default_device_difference(ours[node], theirs[node])]


def problems(how: object, ours: dict, theirs: dict) -> list[str]:
    """What differs between the two runtimes' records of one cell."""
    if ours["error"] != theirs["error"]:
        return [(f"tfteach: {ours['error']} {ours['message']}; "
                 f"TF: {theirs['error']} {theirs['message']}")]
    if ours["error"] in MISSING:
        return [(f"both raised {ours['error']} {ours['message']}: the cell uses tfteach or "
                 "what a tfteach-only cell made; mark it tf_compat false")]
    found = placement_problems(ours["placements"], theirs["placements"])
    if how == "runs":
        return found
    if how != "body" and not same_text(ours["output"], theirs["output"]):
        found.append(f"printed:\n--- tfteach\n{ours['output']}--- TF\n{theirs['output']}")
    for name in sorted(ours["values"].keys() | theirs["values"].keys()):
        a, b = ours["values"].get(name), theirs["values"].get(name)
        if a is None or b is None or not same_value(a, b):
            found.append(f"{name} = {str(a)[:300]} (tfteach), {str(b)[:300]} (TF)")
    return found


@pytest.mark.parametrize("path, cell", compared_cells())
def test_cell_behaves_as_on_tensorflow(path, cell):
    ours, theirs = run_lesson(path)
    assert cell.id in ours and cell.id in theirs, \
        f"the cell did not finish\ntfteach: {ours['_stderr']}\nTF: {theirs['_stderr']}"
    found = problems(mark(cell), ours[cell.id], theirs[cell.id])
    assert not found, "\n".join(found)


@pytest.mark.parametrize("path", sorted(LESSONS.glob("*.ipynb")), ids=lambda p: p.name[:2])
def test_every_cell_is_compared_or_marked_with_a_reason(path):
    cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    names = imported_from_tfteach(cells)
    wrong = []
    for cell in cells:
        how, why = mark(cell), cell.metadata.get("tfteach", {}).get("why")
        if how not in MARKS:
            wrong.append(f"{cell.id}: tf_compat must be one of {MARKS}, not {how!r}")
        elif how is not True and not why:
            wrong.append(f"{cell.id}: tf_compat {how!r} needs a 'why'")
        elif how in (True, "runs", "body") and uses_tfteach(cell.source, how, names):
            wrong.append(f"{cell.id}: uses a magic or tfteach; mark it tf_compat false "
                         "(or 'helpers', or 'body' for a plain %%placement cell)")
    assert not wrong, "\n".join(wrong)


def code_of(source: str) -> str:
    """The Python of a cell: without IPython's magic lines and the lesson's setup lines."""
    return "\n".join(line for line in SETUP_LINES.sub("", source).splitlines()
                     if not line.lstrip().startswith(("%", "!")))


def imported_from_tfteach(cells) -> set[str]:
    """Names that ``from tfteach... import`` or ``import tfteach... as`` bind in a lesson."""
    names = set()
    for cell in cells:
        if SOLUTION_LINE.sub("", cell.source).startswith("%%writefile"):   # a program's file
            continue
        for node in ast.walk(ast.parse(code_of(cell.source))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tfteach"):
                names |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.asname for a in node.names
                          if a.name.startswith("tfteach") and a.asname}
    return names


def uses_tfteach(source: str, how: object, names: set[str]) -> bool:
    """A magic (other than a "body" cell's %%placement line) or anything from tfteach."""
    lines = SETUP_LINES.sub("", SOLUTION_LINE.sub("", source)).splitlines()
    if how == "body":
        if not lines or not re.match(r"%%placement\b", lines[0]) or \
                re.search(r"--(target|virtual-gpus)", lines[0]):
            return True
        lines = lines[1:]
    code = "\n".join(lines)
    if "tfteach" in code or code != code_of(code):
        return True
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(ast.parse(code)))


def test_known_differences_name_cells_that_are_compared():
    compared = {cell_name(p, c) for p, c in lesson_cells() if mark(c) is not False}
    assert set(KNOWN_DIFFERENCES) <= compared


DIFFERING_CELLS = {
    "printed": "print(hasattr(tf.config, 'set_virtual_gpus'))",
    "raised": "tf.config.set_virtual_gpus(2)",
    "placed": "with tf.device('/cpu:0' if hasattr(tf.config, 'set_virtual_gpus') else '/cpu:1'):\n"
              "    a = tf.constant(1.0, name='a')\n"
              "with tf.Session() as sess:\n"
              "    sess.run(a)",
}


@functools.cache
def run_differing_cells() -> tuple[dict, dict]:
    cells = [{"key": "setup", "source": "import tfteach as tf", "how": True}]
    cells += [{"key": k, "source": v, "how": True} for k, v in DIFFERING_CELLS.items()]
    return run_cells(cells, LESSONS)


@pytest.mark.parametrize("key, problem", [
    ("printed", "printed:\n--- tfteach\nTrue\n--- TF\nFalse"),
    ("raised", "tfteach: None None; TF: AttributeError"),
    ("placed", "0:a ran on CPU:0 (tfteach), GPU:0 (TF)"),
])
def test_a_cell_that_behaves_differently_on_tf_is_reported(key, problem):
    ours, theirs = run_differing_cells()
    assert any(p.startswith(problem) for p in problems(True, ours[key], theirs[key]))

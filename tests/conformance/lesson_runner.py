"""Run a lesson's cells in order on one runtime and record what each cell did, as JSON lines.

    python tests/conformance/lesson_runner.py {tfteach|tf} CELLS.json OUT.jsonl

``CELLS.json`` is a list of ``{"key": ..., "source": ..., "how": ...}``; the cells share one
namespace, as in a notebook. A line ``%load_ext tfteach`` is dropped (it only adds the
magics); on ``tf``, ``import tfteach as tf`` becomes ``import tensorflow.compat.v1 as tf`` in
graph mode. A cell whose ``how`` is ``"body"`` is a ``%%placement`` cell: its body runs as the
magic runs it (a fresh graph; ``--soft``, ``--config``; ``--run`` and ``--trace`` initialise
the variables and fetch the last expression), and every node's device is read from the
placement log (``log_device_placement``), which both runtimes print.

On ``tf`` the process stands in for the lesson's two virtual GPUs with CPUs: every session
gets ``device_count={'CPU': 3}`` (and no graph rewrites, so step stats show every node), and a
device scope that names ``GPU:i`` asks for ``CPU:i+1``; what the cell prints and where nodes
ran are translated back (``CPU:i+1`` -> ``GPU:i``) before they are recorded.

Per cell, one JSON line: ``error`` (the class name of what it raised, or null), ``message``,
``output`` (what it printed, at the file-descriptor level, plus the repr of a last expression),
``values`` (the numbers and numeric arrays it bound to names, and a ``%%placement --run``
cell's fetched values as ``(fetched)``) and ``placements`` (``"graph#:node" -> [device,
requested device]``, from the placement log and from the first ``Session.run`` of each
distinct fetch in the cell, traced with FULL_TRACE). The process ends with ``os._exit``:
servers and sessions a lesson left open need not shut down.
"""
from __future__ import annotations

import ast
import ctypes
import json
import os
import re
import sys
import tempfile
import traceback
from typing import Any

import numpy as np

IMPORT_TFTEACH = re.compile(r"^import tfteach as tf$", re.MULTILINE)
LOAD_EXT = re.compile(r"^%load_ext tfteach\n?", re.MULTILINE)
LOCAL = "/job:localhost/replica:0/task:0/device:"
TF_CPUS = 3


class Recorder:
    """What the current cell's traced steps placed where."""

    def __init__(self, gpu_names) -> None:
        self.gpu_names = gpu_names
        self.reset()

    def reset(self) -> None:
        self.placements: dict[str, list] = {}
        self.seen: set = set()
        self.graphs: list = []
        self.log_graph = None

    def graph_number(self, graph) -> int:
        for i, g in enumerate(self.graphs):
            if g is graph:
                return i
        self.graphs.append(graph)
        return len(self.graphs) - 1

    def record(self, graph, step_stats) -> None:
        number = self.graph_number(graph)
        for dev in step_stats.dev_stats:
            for node in dev.node_stats:
                try:
                    requested = graph.get_operation_by_name(node.node_name).device
                except (KeyError, ValueError):
                    continue              # the runtime's own nodes (_SOURCE, _Send, ...)
                self.placements[f"{number}:{node.node_name}"] = [
                    self.gpu_names(short_device(dev.device)), self.gpu_names(requested)]


def short_device(name: str) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:0' -> 'CPU:0'; other tasks keep job:task."""
    if name.startswith(LOCAL):
        return name[len(LOCAL):]
    m = re.match(r"/job:(\w+)/replica:\d+/task:(\d+)/device:(\w+:\d+)", name)
    return f"{m.group(1)}:{m.group(2)}/{m.group(3)}" if m else name


def fetch_key(fetches: Any) -> Any:
    """A hashable picture of a fetch structure, by names."""
    if isinstance(fetches, dict):
        return tuple((repr(k), fetch_key(v)) for k, v in fetches.items())
    if isinstance(fetches, (list, tuple)):
        return tuple(fetch_key(f) for f in fetches)
    return getattr(fetches, "name", repr(fetches))


def trace_runs(base_session, options_class, metadata_class, recorder: Recorder) -> None:
    """Wrap ``base_session.run``: the first run of each fetch in a cell is traced."""
    original = base_session.run

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        key = (recorder.graph_number(self.graph), fetch_key(fetches))
        if options is None and run_metadata is None and key not in recorder.seen:
            recorder.seen.add(key)
            options = options_class(trace_level=options_class.FULL_TRACE)
            run_metadata = metadata_class()
        result = original(self, fetches, feed_dict, options, run_metadata)
        if run_metadata is not None and run_metadata.step_stats.dev_stats:
            recorder.record(self.graph, run_metadata.step_stats)
        return result

    base_session.run = run


def setup_tfteach() -> tuple[Recorder, Any]:
    """tfteach, with the first run of each fetch traced."""
    import tfteach
    from tfteach.runtime import session
    recorder = Recorder(lambda s: s)
    trace_runs(session.BaseSession, tfteach.RunOptions, tfteach.RunMetadata, recorder)
    return recorder, tfteach


def cpus_as_gpus(text: str) -> str:
    """TF's stand-in CPUs back to the GPUs they stand for: CPU:1 -> GPU:0, cpu:2 -> gpu:1."""
    text = re.sub(r"CPU:([1-9]\d*)", lambda m: f"GPU:{int(m.group(1)) - 1}", text)
    return re.sub(r"cpu:([1-9]\d*)", lambda m: f"gpu:{int(m.group(1)) - 1}", text)


def setup_tf() -> tuple[Recorder, Any]:
    """TF's compat.v1 in graph mode, with CPUs standing in for GPUs; runs traced."""
    import tensorflow.compat.v1 as tf1
    from tensorflow.python.client import session
    from tensorflow.python.framework import ops
    tf1.disable_v2_behavior()

    def gpu_as_cpu(spec):
        if spec is None:
            return None
        if callable(spec) and not isinstance(spec, (str, tf1.DeviceSpec)):
            return lambda op: gpu_as_cpu(spec(op))
        parsed = tf1.DeviceSpec.from_string(spec if isinstance(spec, str) else spec.to_string())
        if (parsed.device_type or "").upper() != "GPU":
            return spec
        index = 1 if parsed.device_index is None else parsed.device_index + 1
        return parsed.replace(device_type="CPU", device_index=index).to_string()

    device = ops.Graph.device
    ops.Graph.device = lambda self, spec: device(self, gpu_as_cpu(spec))
    init = session.Session.__init__

    def session_init(self, target="", graph=None, config=None):
        cfg = tf1.ConfigProto()
        if config is not None:
            cfg.CopyFrom(config)
        cfg.device_count["CPU"] = cfg.device_count.get("CPU", TF_CPUS)
        cfg.graph_options.rewrite_options.disable_meta_optimizer = True
        cfg.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
        cfg.graph_options.optimizer_options.do_constant_folding = False
        init(self, target, graph, cfg)

    session.Session.__init__ = session_init
    recorder = Recorder(cpus_as_gpus)
    trace_runs(session.BaseSession, tf1.RunOptions, tf1.RunMetadata, recorder)
    return recorder, tf1


def program_source(source: str, runtime: str) -> str:
    """The cell as ``runtime`` runs it (no magics to load; TF imported instead of tfteach)."""
    source = LOAD_EXT.sub("", source)
    if runtime == "tf":
        source = IMPORT_TFTEACH.sub("import tensorflow.compat.v1 as tf", source)
    return source


def numeric(value: Any) -> Any:
    """A JSON picture of a number, a numeric array or a list of them; None otherwise."""
    if isinstance(value, (bool, int, float, np.generic, np.ndarray)) and \
            np.asarray(value).dtype.kind in "biufc":
        array = np.asarray(value)
        if array.dtype.kind == "c":
            return None
        return {"dtype": str(array.dtype), "value": array.tolist()}
    if isinstance(value, (list, tuple)) and value and len(value) <= 1000:
        items = [numeric(v) for v in value]
        return {"items": items} if all(i is not None for i in items) else None
    return None


def run_cell(source: str, namespace: dict) -> Any:
    """Execute a cell as Jupyter does: a last expression is evaluated and returned."""
    tree = ast.parse(source)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), namespace)  # noqa: S102 (running the lesson is the point)
    if last is not None:
        return eval(compile(last, "<cell>", "eval"), namespace)
    return None


class FdCapture:
    """What this process writes to file descriptor 1 (Python's prints and C's printf)."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 (open for the whole run)
        os.dup2(self.file.fileno(), 1)
        self.libc = ctypes.CDLL(None)

    def take(self) -> str:
        sys.stdout.flush()
        self.libc.fflush(None)
        self.file.seek(0)
        text = self.file.read().decode(errors="replace")
        self.file.seek(0)
        self.file.truncate()
        return text


def display(*objects: Any) -> None:
    """IPython's ``display`` outside IPython: each object's repr."""
    for obj in objects:
        print(repr(obj))


PLACEMENT_FLAGS = re.compile(r"--(soft|log|run|trace)|--config\s+(\S+)")
LOG_LINE = re.compile(r"^([^\s:]+): \((\w+)\): (/job:\S+)$", re.MULTILINE)


def run_placement_body(source: str, namespace: dict, tf: Any, recorder: Recorder) -> dict:
    """A ``%%placement`` cell, as the magic runs it; returns the fetched values (if --run)."""
    first, _, body = source.partition("\n")
    flags = {m.group(1) or "config": m.group(2) for m in PLACEMENT_FLAGS.finditer(first)}
    graph = tf.Graph()
    with graph.as_default():
        last = run_cell(body, namespace)
        probe = tf.no_op(name="placement_probe")
        initializers = [v.initializer for v in tf.global_variables()]
    config = tf.ConfigProto()
    if flags.get("config"):
        config.CopyFrom(eval(flags["config"], namespace))
    config.allow_soft_placement = "soft" in flags
    config.log_device_placement = True
    sess = tf.Session(graph=graph, config=config)
    recorder.log_graph = graph
    if not ("run" in flags or "trace" in flags):
        sess.run(probe)
        return {}
    if initializers:
        sess.run(initializers)
    fetchable = hasattr(last, "graph") or isinstance(last, (list, tuple, dict))
    fetched = sess.run(last if fetchable else probe)
    return {"(fetched)": fetched} if "run" in flags else {}


def record_log(recorder: Recorder, text: str) -> None:
    """Placements from the ``name: (Type): device`` lines of a placement log."""
    graph = recorder.log_graph
    for name, _, device in LOG_LINE.findall(text):
        try:
            requested = graph.get_operation_by_name(name).device
        except (KeyError, ValueError):
            continue
        recorder.placements[f"{recorder.graph_number(graph)}:{name}"] = [
            recorder.gpu_names(short_device(device)), recorder.gpu_names(requested)]


def run_recorded(cell: dict, namespace: dict, runtime: str, tf: Any, recorder: Recorder,
                 capture: FdCapture) -> dict:
    """Run one cell; what it raised, printed, bound and placed."""
    before = {k: id(v) for k, v in namespace.items()}
    recorder.reset()
    error = message = result = None
    fetched: dict = {}
    source = program_source(cell["source"], runtime)
    try:
        if cell.get("how") == "body":
            fetched = run_placement_body(source, namespace, tf, recorder)
        else:
            result = run_cell(source, namespace)
    except BaseException as e:  # noqa: BLE001 (a cell's error is what we record)
        error, message = type(e).__name__, str(e).splitlines()[:1]
        if isinstance(e, (NameError, SyntaxError, ImportError, AttributeError)):
            message = traceback.format_exc().splitlines()[-3:]
    text = capture.take()
    if recorder.log_graph is not None:
        record_log(recorder, text)
    if result is not None:
        text += repr(result) + "\n"
    values = {k: numeric(v) for k, v in namespace.items()
              if not k.startswith("_") and before.get(k) != id(v)}
    values.update({k: numeric(v) for k, v in fetched.items()})
    return {"key": cell["key"], "error": error, "message": message,
            "output": recorder.gpu_names(text),
            "values": {k: v for k, v in values.items() if v is not None},
            "placements": recorder.placements}


def main(runtime: str, cells_path: str, out_path: str) -> None:
    """Run the cells of ``cells_path`` on ``runtime``, one JSON line per cell to ``out_path``."""
    recorder, tf = setup_tf() if runtime == "tf" else setup_tfteach()
    with open(cells_path) as f:
        cells = json.load(f)
    namespace: dict = {"__name__": "__main__", "display": display}
    capture = FdCapture()
    with open(out_path, "w") as out:
        for cell in cells:
            record = run_recorded(cell, namespace, runtime, tf, recorder, capture)
            out.write(json.dumps(record) + "\n")
            out.flush()
    os._exit(0)


if __name__ == "__main__":
    main(*sys.argv[1:4])

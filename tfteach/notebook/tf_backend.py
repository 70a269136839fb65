"""``%%placement --backend tensorflow``: the same cell on real TensorFlow, read into tfteach's views.

``run_tf_cell(source, options, namespace)`` is ``placement_cell.run_placement_cell`` on
``tensorflow.compat.v1`` in graph mode:

1. ``import_tf`` imports TensorFlow on first use (never at import time); without it a
   ``FailedPreconditionError`` says how to install it (``pip install "tfteach[conformance]"``).
2. The cell runs in a *copy* of the notebook's namespace in which ``tf`` is TensorFlow (a line
   ``import tfteach as tf`` in the cell imports TensorFlow instead), inside a fresh
   ``tf.Graph``; so the names it binds never shadow the notebook's tfteach objects.
3. The session turns TF's graph rewrites off (no constant folding or Grappler), so every node
   the cell built is placed and traced as written. ``--config`` is evaluated with ``tf`` =
   TensorFlow; ``--soft`` and ``--log`` set the same fields as on tfteach.
4. Placement: a probe ``NoOp`` is run once with ``log_device_placement``; TF then places the
   whole graph and prints one ``name: (Type): device`` line per node (C ``printf``, read from
   file descriptor 1). Those lines fill the same ``application/vnd.tfteach.placement+json``
   payload as tfteach's placer; ``--log`` also prints them.
   With ``--target grpc://...`` (a TensorFlow server, e.g. a ``LocalCluster(backend=
   "tensorflow")`` task) the server places the graph when it first runs it and prints its log
   there, so the placement is read from the run's partition graphs instead (``--run``).
5. ``--run``/``--trace``: variables are initialised and the fetches run (``--warmup``: once
   untraced, then) with FULL_TRACE and ``output_partition_graphs``. ``RunMetadata.step_stats`` become tfteach ``StepStats`` (op
   types from the graph; TF's own ``_SOURCE``/``_Retval`` nodes left out), TF's partition graphs
   are read into tfteach's ``GraphDef`` (``partition_graphs_of``), and each ``_Send``/``_Recv``
   pair in them becomes a transfer. TF records no time for
   in-process Send/Recv, so a transfer spans from its producer's end to its first consumer's
   start.

Devices TF lacks on this machine (tfteach's GPUs are virtual; TF needs real ones) are named in
a note that says what to do: ``--soft``, or ``--gpus-as-cpus``, which maps tfteach's virtual
``GPU:i`` onto a TF CPU device ``CPU:i+1`` (``device_count={'CPU': n + 1}``); those CPUs are
labelled as stand-ins in the device list and notes. TF's errors become the tfteach error class
of the same name with TF's message (less the Python traceback TF appends) and a hint.
"""
from __future__ import annotations

import contextlib
import ctypes
import io
import os
import re
import sys
import tempfile
from typing import Any, Iterator

from tfteach.distributed.local.tf_task import tensorflow_missing
from tfteach.errors import OpError, exception_type_from_name
from tfteach.framework.node_def import GraphDef
from tfteach.i18n import N_, clauses, join, tr
from tfteach.notebook.placement_cell import (
    PlacementOptions,
    PlacementResult,
    execute_cell,
    flatten_fetchable,
)
from tfteach.notebook.placement_view import PlacementView, placement_data
from tfteach.notebook.timeline_view import TimelineView
from tfteach.runtime.session_config import NodeExecStats, StepStats, TransferStats

PROBE = "tfteach_placement_probe"
LOG_LINE = re.compile(r"^([^\s:]+): \((\w+)\): (/job:\S+)$", re.MULTILINE)
_IMPORT_TFTEACH = re.compile(r"^(\s*)import tfteach as tf\s*$", re.MULTILINE)
_TF_RUNTIME_NODES = ("_SOURCE", "_SINK")


# ---- TensorFlow, imported lazily -----------------------------------------------------------------
def import_tf() -> Any:
    """``tensorflow.compat.v1`` in graph mode, or FailedPreconditionError saying how to get it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        with captured_fd(2):        # TF's C++ start-up lines, logged before its log level
            import tensorflow.compat.v1 as tf1
    except ImportError:
        raise tensorflow_missing("%%placement --backend tensorflow") from None
    if tf1.executing_eagerly_outside_functions():
        level = tf1.logging.get_verbosity()
        tf1.logging.set_verbosity(tf1.logging.ERROR)
        tf1.disable_v2_behavior()
        tf1.logging.set_verbosity(level)
    return tf1


@contextlib.contextmanager
def captured_fd(fd: int = 1) -> Iterator[list[str]]:
    """What C code writes to file descriptor ``fd`` inside the block (appended to the list
    when the block ends)."""
    out: list[str] = []
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(fd)
    python = io.StringIO()          # TF's log listener writes some lines through Python
    redirect = contextlib.redirect_stdout if fd == 1 else contextlib.redirect_stderr
    with tempfile.TemporaryFile() as f, redirect(python):
        os.dup2(f.fileno(), fd)
        try:
            yield out
        finally:
            ctypes.CDLL(None).fflush(None)
            os.dup2(saved, fd)
            os.close(saved)
            f.seek(0)
            out.append(python.getvalue() + f.read().decode(errors="replace"))


# ---- GPUs TF lacks -------------------------------------------------------------------------------
def stand_in(device: str, gpus: int) -> str:
    """A requested device with ``GPU:i`` (i < gpus) mapped onto TF's ``CPU:i+1``."""
    match = re.search(r"(?i)(device:)?gpu:(\d+)", device or "")
    if match is None or int(match.group(2)) >= gpus:
        return device
    return device[:match.start()] + f"device:CPU:{int(match.group(2)) + 1}" + device[match.end():]


def as_tfteach_device(device: str, gpus: int) -> str:
    """TF's stand-in ``CPU:i+1`` named back as the ``GPU:i`` it stands for."""
    if not gpus:
        return device
    return re.sub(r"CPU:(\d+)$", lambda m: (f"GPU:{int(m.group(1)) - 1}"
                                           if 0 < int(m.group(1)) <= gpus else m.group(0)),
                  device)


def _map_graph_devices(graph: Any, gpus: int) -> None:
    """Make ``tf.device('/gpu:i')`` inside ``graph`` ask for TF's ``CPU:i+1``."""
    original = type(graph).device

    def device(spec: Any) -> Any:
        if isinstance(spec, str) or spec is None:
            return original(graph, stand_in(spec, gpus) if spec else spec)
        if callable(spec) and not hasattr(spec, "to_string"):
            return original(graph, lambda op: stand_in(_spec_text(spec(op)), gpus))
        return original(graph, stand_in(_spec_text(spec), gpus))

    graph.device = device


def _spec_text(spec: Any) -> str:
    return spec.to_string() if hasattr(spec, "to_string") else (spec or "")


def missing_devices(graph: Any, devices: list[Any]) -> list[str]:
    """Requested devices (short names, sorted) that no device of the session matches."""
    have = {_short(d.name) for d in devices}
    types = {h.split(":")[0] for h in have}
    missing = set()
    for op in graph.get_operations():
        match = re.search(r"(?i)(?:device:)?(cpu|gpu|tpu)(?::(\d+|\*))?$", op.device or "")
        if match is None:
            continue
        kind, index = match.group(1).upper(), match.group(2)
        wanted = f"{kind}:{index}" if index not in (None, "*") else kind
        if (wanted not in have) if ":" in wanted else (kind not in types):
            missing.add(wanted)
    return sorted(missing)


def _short(name: str) -> str:
    return name.rsplit("device:", 1)[-1] if "device:" in name else name


def device_notes(graph: Any, devices: list[Any], options: PlacementOptions) -> list[str]:
    """Plain sentences about devices TF lacks here and stand-in CPUs."""
    notes = []
    gpus = options.gpus_as_cpus
    if gpus:
        pairs = clauses(tr("GPU:{gpu} on CPU:{cpu}", gpu=i, cpu=i + 1) for i in range(gpus))
        notes.append(tr("--gpus-as-cpus: tfteach's virtual GPUs run on TensorFlow CPU devices "
                        "standing in for them ({pairs}; {count}). They are CPUs, not GPUs: "
                        "placement is TF's, speed is not a GPU's.", pairs=pairs,
                        count=f"device_count={{'CPU': {gpus + 1}}}"))
    missing = missing_devices(graph, devices)
    if missing:
        have = join(sorted(_short(d.name) for d in devices))
        head = tr("TensorFlow on this machine has no {missing} (it has {have}). tfteach's GPUs "
                  "are virtual; TensorFlow needs real ones.", missing=join(missing),
                  have=have)
        todo = (tr("With --soft, TF put those ops on a device it has (see below).")
                if options.soft else
                tr("Add --soft to let TF place those ops on a device it has, or --gpus-as-cpus "
                   "to map tfteach's virtual GPUs onto TF CPU devices (GPU:i on CPU:i+1)."))
        notes.append(tr("{sentence} {next}", sentence=head, next=todo))
    return notes


# ---- errors ----------------------------------------------------------------------------------------
def as_tfteach_error(error: Any, stage: str) -> OpError:
    """A TF ``OpError`` as the tfteach error class of the same name, with a hint."""
    lines = [line for line in error.message.splitlines()
             if line.strip() and not line.startswith(("Graph execution error", "Detected at",
                                                      "  ", "Node: '"))]
    message = "\n".join(lines) or error.message
    if "Cannot assign a device" in message:
        hint = tr("TensorFlow has no such device here (tfteach's GPUs are virtual): add --soft "
                  "to let TF choose, or --gpus-as-cpus to map tfteach's GPUs onto TF CPUs.")
    else:
        hint = tr("this is real TensorFlow's error while {stage}; run %%placement --backend "
                  "compare to see what tfteach does with the same cell.", stage=tr(stage))  # i18n: dynamic
    return exception_type_from_name(type(error).__name__)(message, hint=hint)


# ---- the whole cell --------------------------------------------------------------------------------
def tf_config(tf1: Any, options: PlacementOptions, namespace: dict) -> Any:
    """TF's ConfigProto: ``--config`` (``tf`` = TensorFlow), ``--soft``, stand-in CPUs, and
    graph rewrites off so every node is placed and traced as written."""
    config = tf1.ConfigProto()
    if options.config:
        given = eval(options.config, namespace)  # the learner's own expression
        config.CopyFrom(given)
    config.allow_soft_placement = config.allow_soft_placement or options.soft
    config.log_device_placement = True
    if options.gpus_as_cpus:
        config.device_count["CPU"] = options.gpus_as_cpus + 1
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_constant_folding = False
    return config


def run_tf_cell(source: str, options: PlacementOptions, namespace: dict,
                graphviz_backend: str | None = None) -> PlacementResult:
    """Build, place and (optionally) run a cell's graph on TensorFlow; see the module docstring."""
    tf1 = import_tf()
    scope = {**namespace, "tf": tf1}
    graph = tf1.Graph()
    if options.gpus_as_cpus:
        _map_graph_devices(graph, options.gpus_as_cpus)
    result = PlacementResult(graph=graph, backend="tensorflow", namespace=scope)
    source = _IMPORT_TFTEACH.sub(r"\1import tensorflow.compat.v1 as tf", source)
    with graph.as_default():
        result.last_value = execute_cell(source, scope)
    if not graph.get_operations():
        return result
    try:
        if options.target:
            _open_remote(result, tf1, options)
        else:
            _open_and_place(result, tf1, options, graphviz_backend)
        if options.run or options.trace:
            result.stage = N_("running the graph")
            _run(result, tf1, options)
            if result.view is None:
                _view_from_partitions(result, options, graphviz_backend)
    except tf1.errors.OpError as err:
        result.error = as_tfteach_error(err, result.stage)
    return result


def _open_and_place(result: PlacementResult, tf1: Any, options: PlacementOptions,
                    graphviz_backend: str | None) -> None:
    """Open the session and run the probe, reading TF's placement log into the view."""
    graph = result.graph
    with graph.as_default():
        probe = tf1.no_op(name=PROBE)
    with captured_fd(1) as printed:
        result.stage = N_("creating the session")
        result.session = tf1.Session(graph=graph, config=tf_config(tf1, options,
                                                                   result.namespace))
        devices = result.session.list_devices()
        result.notes = device_notes(graph, devices, options)
        result.stage = N_("placing the graph")
        result.session.run(probe)
    _read_log(result, printed[-1], devices, options, graphviz_backend)


def _open_remote(result: PlacementResult, tf1: Any, options: PlacementOptions) -> None:
    """A session on a TensorFlow server: it places the graph when it first runs it (and
    prints its placement log there), so the view comes from the run's partition graphs."""
    result.stage = N_("creating the session")
    config = tf_config(tf1, options, result.namespace)
    config.log_device_placement = options.log
    result.session = tf1.Session(options.target, graph=result.graph, config=config)
    result.notes = device_notes(result.graph, result.session.list_devices(), options)


def _view_from_partitions(result: PlacementResult, options: PlacementOptions,
                          graphviz_backend: str | None) -> None:
    ops = {op.name for op in result.graph.get_operations()}
    assigned = {n.name: n.device for pg in partition_graphs_of(result.run_metadata)
                for n in pg.node if n.name in ops}
    ordered = [op for op in result.graph.get_operations() if op.name in assigned]
    data = placement_data(ordered, assigned,
                          _labelled(result.session.list_devices(), options.gpus_as_cpus))
    result.view = PlacementView(data, graphviz_backend)


def _read_log(result: PlacementResult, log: str, devices: list, options: PlacementOptions,
              graphviz_backend: str | None) -> None:
    result.log = "\n".join(line for line in log.splitlines() if not line.startswith(PROBE))
    if options.log:
        print(result.log)
    assigned = {name: device for name, _, device in LOG_LINE.findall(log) if name != PROBE}
    ops = [op for op in result.graph.get_operations() if op.name != PROBE]
    data = placement_data(ops, assigned, _labelled(devices, options.gpus_as_cpus))
    result.view = PlacementView(data, graphviz_backend)


def _labelled(devices: list, gpus: int) -> list[dict]:
    """TF's devices for the payload; stand-in CPUs say which GPU they stand for."""
    out = []
    for d in devices:
        stands = as_tfteach_device(d.name, gpus)
        note = (tr("TensorFlow CPU standing in for tfteach's {device}", device=_short(stands))
                if stands != d.name else f"TensorFlow {d.device_type}")
        out.append(_Device(d.name, d.device_type, note))
    return out


class _Device:
    def __init__(self, name: str, device_type: str, description: str) -> None:
        self.name, self.device_type, self.description = name, device_type, description


def _run(result: PlacementResult, tf1: Any, options: PlacementOptions) -> None:
    sess, graph = result.session, result.graph
    with graph.as_default():
        variables = tf1.global_variables()
    if variables:
        sess.run([v.initializer for v in variables])
    fetches = (flatten_fetchable(result.last_value) if is_tf_fetchable(tf1, result.last_value)
               else tf_sink_fetches(graph, variables))
    result.fetched = fetches
    if options.warmup:
        sess.run(fetches)
    metadata = tf1.RunMetadata()
    values = sess.run(fetches, options=tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE,
                                                      output_partition_graphs=True),
                      run_metadata=metadata)
    result.run_metadata = metadata
    if options.run:
        result.values = {f.name: v for f, v in zip(fetches, values, strict=True)}
    result.step_stats = step_stats_from_tf(metadata, graph)
    result.timeline = TimelineView.from_step_stats(result.step_stats)


def is_tf_fetchable(tf1: Any, value: Any) -> bool:
    """Whether ``value`` is a TF tensor, op or variable, or a list/tuple/dict of them."""
    if isinstance(value, (list, tuple, dict)):
        items = list(value.values()) if isinstance(value, dict) else list(value)
        return bool(items) and all(is_tf_fetchable(tf1, v) for v in items)
    return isinstance(value, (tf1.Tensor, tf1.Operation, tf1.Variable))


def tf_sink_fetches(graph: Any, variables: list) -> list:
    """The TF graph's last ops (nothing uses them; initialisers and the probe excluded)."""
    skip = {v.initializer.name for v in variables} | {PROBE}
    used = {t.op.name for op in graph.get_operations() for t in op.inputs}
    used |= {c.name for op in graph.get_operations() for c in op.control_inputs}
    sinks = [op for op in graph.get_operations() if op.name not in used | skip]
    return [op.outputs[0] if op.outputs else op for op in sinks]


# ---- step stats ----------------------------------------------------------------------------------
def step_stats_from_tf(metadata: Any, graph: Any) -> StepStats:
    """TF's ``RunMetadata`` as tfteach ``StepStats``: the graph's nodes, plus one transfer per
    ``_Send``/``_Recv`` pair of the partition graphs."""
    types = {op.name: op.type for op in graph.get_operations()}
    stats = StepStats()
    for ds in metadata.step_stats.dev_stats:
        for n in ds.node_stats:
            if n.node_name in types and n.node_name not in _TF_RUNTIME_NODES:
                nbytes = sum(o.tensor_description.allocation_description.requested_bytes
                             for o in n.output)
                stats.device_stats(ds.device).node_stats.append(NodeExecStats(
                    n.node_name, types[n.node_name], n.all_start_micros,
                    max(1, n.all_end_rel_micros), nbytes, n.thread_id, n.timeline_label,
                    n.op_end_rel_micros))
    stats.transfers = transfers_from_partitions(partition_graphs_of(metadata), stats)
    return stats


def partition_graphs_of(metadata: Any) -> list[GraphDef]:
    """TF's ``RunMetadata.partition_graphs`` as tfteach's ``GraphDef``s (the one IR that
    tfteach's own partition graphs use)."""
    return [GraphDef.from_proto(pg) for pg in metadata.partition_graphs]


def transfers_from_partitions(partition_graphs: list[GraphDef],
                              stats: StepStats) -> list[TransferStats]:
    """One transfer per ``_Recv`` whose ``_Send`` is in the partition graphs: from the
    producer's end to the first consumer's start (bytes: the producer's output)."""
    nodes = [n for pg in partition_graphs for n in pg.node]
    sends = {n.attr["tensor_name"]: n for n in nodes if n.op == "_Send"}
    timed = {n.node_name: n for ds in stats.dev_stats for n in ds.node_stats}
    out = []
    for recv in (n for n in nodes if n.op == "_Recv"):
        send = sends.get(recv.attr["tensor_name"])
        if send is None:
            continue
        tensor = send.input[0] if ":" in send.input[0] else send.input[0] + ":0"
        producer = timed.get(tensor.split(":")[0])
        consumers = [timed[n.name].all_start_micros for n in nodes
                     if n.name in timed and any(i.split(":")[0] == recv.name for i in n.input)]
        start = (producer.all_start_micros + producer.all_end_rel_micros if producer
                 else min(consumers, default=0))
        end = min(consumers, default=start + 1)
        out.append(TransferStats(tensor, send.attr["send_device"],
                                 recv.attr["recv_device"], tensor.split(":")[0],
                                 recv.name, start, max(1, end - start),
                                 producer.output_bytes if producer else 0))
    return out

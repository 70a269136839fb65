"""What ``%%placement`` does, without IPython: build a cell's graph, place it, maybe run it.

``run_placement_cell(source, options, namespace)``:

1. executes ``source`` in ``namespace`` inside a fresh ``tf.Graph().as_default()``, keeping
   the value of a final expression statement;
2. creates a Session as the options say (``--config`` expression, ``--soft``, ``--log``,
   ``--virtual-gpus N`` for this session only, ``--target grpc://...``) and places the whole
   graph (``--log`` makes the session print TF's ``Device mapping:`` and placement lines);
3. with ``--run`` or ``--trace``, initialises the graph's variables, then runs the final
   expression's tensors/ops (or, without one, the graph's sink ops) with FULL_TRACE;
   ``--warmup`` runs them once untraced first, so the timeline shows a warm step (the first
   step of a session also pays for starting its devices' workers); a step on a LocalCluster
   with a modelled network (``network``) has its timeline captioned so: ops measured,
   transfers slowed to the modelled link;
4. with ``--model PROFILE``, models the same step on a hardware profile
   (``tfteach.hardware.predict``: no kernel runs) and adds its timeline, captioned and
   marked as modelled.

It returns a ``PlacementResult`` (graph, session, views, values, error) and never raises a
tfteach ``OpError``: placement and run errors end up in ``result.error``. Errors in the
learner's own Python code propagate unchanged. The session stays open for inspection;
the caller closes the previous result's session (see ``magics``).
"""
from __future__ import annotations

import ast
import contextlib
import copy
from dataclasses import dataclass, field
from typing import Any, Iterator

from tfteach.errors import OpError, with_hint
from tfteach.i18n import N_, tr
from tfteach.notebook.displays import Note, RunValues
from tfteach.notebook.placement_view import PlacementView, placement_data
from tfteach.notebook.timeline_view import TimelineView, modelled_caption
from tfteach.timeline import short_device


@dataclass
class PlacementOptions:
    """The flags of ``%%placement``."""

    soft: bool = False
    log: bool = False
    run: bool = False
    trace: bool = False
    virtual_gpus: int | None = None
    target: str = ""
    config: str | None = None
    backend: str = "tfteach"
    gpus_as_cpus: int = 0
    warmup: bool = False
    model: str | None = None


@dataclass
class PlacementResult:
    """Everything a ``%%placement`` cell produced (``_placement`` in the notebook).

    ``backend`` is ``"tfteach"`` or ``"tensorflow"`` (then ``graph`` and ``session`` are
    TensorFlow's, ``namespace`` the copy the cell ran in, ``log`` TF's placement lines,
    ``step_stats`` TF's step read as tfteach's ``StepStats``, ``notes`` what TF lacks here)."""

    graph: Any
    session: Any = None
    view: PlacementView | None = None
    timeline: TimelineView | None = None
    values: dict[str, Any] | None = None
    error: OpError | None = None
    stage: str = ""
    last_value: Any = None
    run_metadata: Any = None
    fetched: list = field(default_factory=list)
    backend: str = "tfteach"
    notes: list = field(default_factory=list)
    namespace: dict | None = None
    log: str = ""
    step_stats: Any = None
    estimate: Any = None            # --model: the hardware.Estimate of the step
    network: str | None = None      # the modelled link of the LocalCluster the step ran on
    modelled: TimelineView | None = None

    @property
    def devices(self) -> dict[str, str]:
        """op name -> short assigned device (``GPU:0``, ``worker:1/CPU:0``)."""
        if self.view is None:
            return {}
        return {name: short_device(dev) for name, dev in self.view.devices.items()}

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


# ---- running the learner's code ----------------------------------------------------------------
def execute_cell(source: str, namespace: dict, filename: str = "<placement cell>") -> Any:
    """Run ``source`` in ``namespace``; the value of its last statement if that is an
    expression, else None."""
    tree = ast.parse(source, filename=filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, filename, "exec"), namespace)  # the learner's own cell
    if last is None:
        return None
    return eval(compile(last, filename, "eval"), namespace)


@contextlib.contextmanager
def virtual_gpus(n: int | None) -> Iterator[None]:
    """Use ``n`` virtual GPUs for sessions created inside; the previous setting after."""
    if n is None:
        yield
        return
    from tfteach.devices import discovery

    saved = copy.deepcopy(discovery._settings)
    discovery.set_virtual_gpus(n)
    try:
        yield
    finally:
        discovery._settings = saved


def make_config(options: PlacementOptions, namespace: dict) -> Any:
    """The ConfigProto: ``--config`` evaluated in the notebook, then ``--soft``/``--log``."""
    import tfteach as tf

    config = tf.ConfigProto()
    if options.config:
        given = eval(options.config, namespace)  # the learner's own expression
        if not isinstance(given, tf.ConfigProto):
            raise TypeError(with_hint(
                tr("--config must evaluate to a tf.ConfigProto, got {type}.",
                   type=type(given).__name__),
                "--config \"tf.ConfigProto(allow_soft_placement=True)\""))
        config = copy.deepcopy(given)
    if options.soft:
        config.allow_soft_placement = True
    if options.log:
        config.log_device_placement = True
    return config


# ---- fetches ------------------------------------------------------------------------------------
def is_fetchable(value: Any) -> bool:
    """Whether ``value`` is a tensor, op or variable, or a list/tuple/dict of them."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all(is_fetchable(v) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(is_fetchable(v) for v in value.values())
    from tfteach.framework.graph import Operation, Tensor

    return isinstance(value, (Tensor, Operation)) or hasattr(value, "_as_graph_element")


def flatten_fetchable(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flatten_fetchable(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in flatten_fetchable(v)]
    return [value]


def sink_fetches(graph: Any) -> list:
    """The graph's last ops: those whose results nothing else uses (variable initialisers,
    a cond's pivots and ops inside a cond or loop excluded); a tensor for ops with outputs,
    the op itself otherwise."""
    initializers = {v.initializer.name for v in _variables(graph)}
    used = {t.op.name for op in graph.get_operations() for t in op.inputs}
    used |= {c.name for op in graph.get_operations() for c in op.control_inputs}
    sinks = [op for op in graph.get_operations()
             if op.name not in used and op.name not in initializers and _fetchable(graph, op)]
    return [op.outputs[0] if op.outputs else op for op in sinks]


def _fetchable(graph: Any, op: Any) -> bool:
    """Not a cond's pivot (TF's ``is_fetchable``), nor an op inside a branch or loop."""
    from tfteach.ops.control_flow_ops import output_context

    if not graph.is_fetchable(op):
        return False
    return getattr(op, "_flow_context", None) is None or output_context(op) is None


def _variables(graph: Any) -> list:
    from tfteach.framework.graph import GraphKeys

    return list(graph.get_collection(GraphKeys.GLOBAL_VARIABLES))


def _fetch_name(fetch: Any) -> str:
    element = fetch._as_graph_element() if hasattr(fetch, "_as_graph_element") else fetch
    return element.name


# ---- the whole cell -----------------------------------------------------------------------------
def run_placement_cell(source: str, options: PlacementOptions, namespace: dict,
                       graphviz_backend: str | None = None) -> PlacementResult:
    """Build, place and (optionally) run a cell's graph; see the module docstring."""
    import tfteach as tf

    graph = tf.Graph()
    result = PlacementResult(graph=graph)
    with graph.as_default():
        result.last_value = execute_cell(source, namespace)
    if graph.version == 0:
        return result
    config = make_config(options, namespace)
    try:
        result.stage = N_("creating the session")
        with virtual_gpus(options.virtual_gpus):
            result.session = tf.Session(options.target, graph=graph, config=config)
        result.stage = N_("placing the graph")
        if hasattr(result.session, "placement"):
            _show_placement(result, result.session.placement().devices, graphviz_backend)
        if options.run or options.trace:
            result.stage = N_("running the graph")
            _run(result, options)
            if result.view is None:
                _show_placement(result, result.run_metadata.placement, graphviz_backend)
        if options.model:
            result.stage = N_("modelling the step")
            _model(result, options.model, config.allow_soft_placement)
    except OpError as err:
        result.error = err
    return result


def _show_placement(result: PlacementResult, assigned: dict, graphviz_backend: str | None
                    ) -> None:
    """The view of ``assigned`` (op name -> Device or device name)."""
    data = placement_data(result.graph.get_operations(), assigned,
                          result.session.list_devices())
    result.view = PlacementView(data, graphviz_backend)



def _run(result: PlacementResult, options: PlacementOptions) -> None:
    import tfteach as tf

    sess, graph = result.session, result.graph
    variables = _variables(graph)
    if variables:
        sess.run([v.initializer for v in variables])
    fetches = (flatten_fetchable(result.last_value) if is_fetchable(result.last_value)
               else sink_fetches(graph))
    result.fetched = fetches
    if options.warmup:
        sess.run(fetches)
    metadata = tf.RunMetadata()
    values = sess.run(fetches, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                      run_metadata=metadata)
    result.run_metadata = metadata
    if options.run:
        result.values = {_fetch_name(f): v for f, v in zip(fetches, values, strict=True)}
    result.timeline = TimelineView.from_step_stats(
        metadata.step_stats, [d.name for d in sess.list_devices()])
    result.network = modelled_network(options.target)


def modelled_network(target: str) -> str | None:
    """The modelled link between the tasks of the LocalCluster that ``target`` names
    (``LocalCluster(network=...)``), or None."""
    if not target.startswith("grpc://"):
        return None
    from tfteach.distributed.local import task_registry as registry

    address = target[len("grpc://"):]
    for entry in registry.list_clusters():
        if entry.get("network") and any(t.get("address") == address
                                        for t in entry.get("tasks", [])):
            return str(entry["network"])
    return None


def network_caption(link: str) -> str:
    """What a timeline of a cluster on a modelled network says about itself."""
    return tr("Ops measured here; transfers between tasks also took the modelled {link}'s "
              "time (LocalCluster(network=...)).", link=link)


def _model(result: PlacementResult, profile: str, soft: bool) -> None:
    """``--model PROFILE``: the step (the last expression, or the graph's sinks) modelled on a
    hardware profile, drawn as a timeline labelled as modelled. Placeholders are not fed,
    so their unknown dimensions count as 1."""
    from tfteach.hardware import predict

    fetches = result.fetched or (flatten_fetchable(result.last_value)
                                 if is_fetchable(result.last_value)
                                 else sink_fetches(result.graph))
    est = predict(fetches, profile=profile, graph=result.graph, allow_soft_placement=soft)
    result.estimate = est
    devices = sorted(set(est.run_metadata.placement.values()))
    result.modelled = TimelineView.from_step_stats(est.run_metadata.step_stats, devices,
                                                   modelled_on=est.profile)


def result_displays(result: PlacementResult) -> list[Any]:
    """What a cell shows, in order: placement view, values, timeline, modelled timeline with
    its caption (views are shown live)."""
    out: list[Any] = []
    if result.view is not None:
        out.append(result.view)
    if result.values is not None:
        out.append(RunValues(result.values))
    if result.timeline is not None:
        if result.network:
            out.append(Note(network_caption(result.network)))
        out.append(result.timeline)
    if result.modelled is not None:
        out += [Note(modelled_caption(result.estimate.profile)), result.modelled]
    return out

"""``Session``: place a graph on this process's devices, then run steps of it.

A local session owns its devices (from ``tfteach.devices.discovery``), a resource container
(variables are per session, as in TF's DirectSession), an executor (one thread per device)
and two caches: the placement of the whole graph (redone when the graph grows, keeping
stateful ops where they were) and one plan per (fetches, feeds, targets).

``Session("grpc://...")`` hands over to a factory that ``tfteach.distributed`` registers, so
this layer never imports the cluster runtime; a target no factory takes is TF's NotFoundError.

``run`` takes nested lists/tuples/dicts of tensors, ops and names as fetches and returns the
same structure of NumPy values (an ``IndexedSlices`` gives an ``IndexedSlicesValue`` of its
three tensors); feed keys may be any tensor of the graph, or a tuple of them
fed from a value of the same number of leaves (TF's ``nest.flatten_dict_items``).
``make_callable`` binds fetches (and a feed list) once and returns a function that runs them.
With ``RunOptions(output_partition_graphs=True)`` the run metadata holds one graph per device.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from typing import Any, Callable, Iterator

import numpy as np

from tfteach.devices import discovery
from tfteach.errors import CancelledError, NotFoundError, with_hint
from tfteach.framework import graph as graph_mod
from tfteach.framework.device_spec import DeviceSpec
from tfteach.framework.graph import Graph, Operation, Tensor
from tfteach.framework.indexed_slices import IndexedSlices, IndexedSlicesValue
from tfteach.framework.nest import flatten
from tfteach.i18n import tr
from tfteach.runtime import placer
from tfteach.runtime.executor import Executor, to_fetch_value
from tfteach.runtime.partition_graphs import partition_graphs
from tfteach.runtime.plan import build_plan
from tfteach.runtime.resources import ResourceMgr
from tfteach.runtime.session_config import ConfigProto, RunMetadata, RunOptions

_remote_factories: dict[str, Callable] = {}
_remote_resets: dict[str, Callable] = {}
_NO_OPTIONS = RunOptions()


def register_target_factory(prefix: str, factory: Callable, reset: Callable | None = None) -> None:
    """Let ``Session(target)`` for targets starting with ``prefix`` be built by ``factory``
    (and ``Session.reset(target)`` be done by ``reset``)."""
    _remote_factories[prefix] = factory
    if reset is not None:
        _remote_resets[prefix] = reset


# ---- default session stack ----------------------------------------------------------------
_local = threading.local()


def _session_stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def get_default_session() -> Any:
    stack = _session_stack()
    return stack[-1] if stack else None


graph_mod._default_session_lookup[:] = [get_default_session]


class BaseSession:
    """What local and remote sessions share: fetch/feed handling and the session protocol."""

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None) -> None:
        self.graph = graph or graph_mod.get_default_graph()
        self.sess_str = _as_target(target)
        self.config = config or ConfigProto()
        self._closed = False
        self._default_cm: Any = None

    # -- protocol ----------------------------------------------------------------------
    def run(self, fetches: Any, feed_dict: dict | None = None, options: RunOptions | None = None,
            run_metadata: RunMetadata | None = None) -> Any:
        """Run the ops and evaluate the tensors in ``fetches``; returns the same structure."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if self.graph.version == 0:
            raise RuntimeError("The Session graph is empty.  Add operations to the graph "
                               "before calling run().")
        flat, rebuild = _flatten_fetches(fetches, self.graph)
        feeds = _resolve_feeds(feed_dict or {}, self.graph)
        return self._run_fetches(flat, rebuild, feeds, options, run_metadata)

    def _run_fetches(self, flat: list, rebuild: Callable[[list], Any], feeds: dict,
                     options: RunOptions | None, run_metadata: RunMetadata | None) -> Any:
        tensors = [f if isinstance(f, Tensor) else None for f in flat]
        targets = [f for f in flat if isinstance(f, Operation)]
        if run_metadata is not None and hasattr(run_metadata, "Clear"):
            run_metadata.Clear()        # as TF, each run's metadata replaces the last's
        values = self._run_flat(tensors, targets, feeds, options or _NO_OPTIONS, run_metadata)
        return rebuild(values)

    def make_callable(self, fetches: Any, feed_list: list | tuple | None = None,
                      accept_options: bool = False) -> Callable[..., Any]:
        """A function that runs ``fetches``: it takes the values for ``feed_list`` in order
        and returns what ``run(fetches)`` would; ``accept_options`` adds the keywords
        ``options`` and ``run_metadata`` (with a feed list, ``run``'s keywords always work)."""
        if feed_list is not None:
            if not isinstance(feed_list, (list, tuple)):
                raise TypeError(f"Argument `feed_list` must be a list or tuple. Received: "
                                f"feed_list={feed_list}")

            def run_with_feeds(*feed_args: Any, **kwargs: Any) -> Any:
                # strict=False: too few args leave a placeholder unfed, and the run fails
                # with TF's InvalidArgumentError for it.
                feeds = dict(zip(feed_list, feed_args, strict=False))
                return self.run(fetches, feed_dict=feeds, **kwargs)
            return run_with_feeds
        flat, rebuild = _flatten_fetches(fetches, self.graph)

        def run_step(options: RunOptions | None = None,
                     run_metadata: RunMetadata | None = None) -> Any:
            if self._closed:
                raise CancelledError("Session has been closed.", hint=tr(
                    "this function belongs to a closed session; call make_callable on an "
                    "open one."))
            return self._run_fetches(flat, rebuild, {}, options, run_metadata)
        return run_step if accept_options else lambda: run_step()

    def _run_flat(self, tensors: list, targets: list, feeds: dict, options: RunOptions,
                  run_metadata: RunMetadata | None) -> list:
        raise NotImplementedError

    def close(self) -> None:
        self._closed = True

    def as_default(self) -> contextlib.AbstractContextManager:
        return _as_default(self)

    def __enter__(self) -> "BaseSession":
        self._default_cm = _as_default(self)
        self._default_cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._default_cm is not None:
            self._default_cm.__exit__(*exc)
            self._default_cm = None
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


@contextlib.contextmanager
def _as_default(sess: BaseSession) -> Iterator[BaseSession]:
    stack = _session_stack()
    stack.append(sess)
    try:
        with sess.graph.as_default():
            yield sess
    finally:
        stack.remove(sess)


class DeviceAttributes:
    """What ``Session.list_devices()`` returns per device."""

    def __init__(self, device: Any) -> None:
        self.name = device.name
        self.device_type = device.device_type
        self.memory_limit_bytes = device.memory_limit
        self.description = device.description
        self.incarnation = abs(hash(device.name)) % (1 << 62)

    def __repr__(self) -> str:
        return (f"_DeviceAttributes({self.name}, {self.device_type}, "
                f"{self.memory_limit_bytes}, {self.incarnation})")


_LOCAL_SESSIONS: "weakref.WeakSet[Session]" = weakref.WeakSet()


def local_sessions_of(graph: Graph) -> list["Session"]:
    """The open local sessions that run ``graph`` (e.g. to show where they placed it)."""
    return [s for s in list(_LOCAL_SESSIONS)
            if s.graph is graph and not getattr(s, "_closed", True)]


class Session(BaseSession):
    """A TF 1.x session. ``Session()`` runs here; ``Session('grpc://...')`` on a cluster."""

    def __new__(cls, target: str = "", graph: Graph | None = None, config: Any = None):
        target = _as_target(target)
        _check_config(config)
        for prefix, factory in _remote_factories.items():
            if target and target.startswith(prefix):
                return factory(target, graph, config)
        if target:
            raise _no_factory(target)
        return super().__new__(cls)

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None) -> None:
        super().__init__(target, graph, config)
        self.devices = discovery.local_devices("localhost", 0, self.config.device_count,
                                               self.config.gpu_options)
        self.resources = ResourceMgr()
        self._executor = Executor()
        self._placement: placer.Placement | None = None
        self._placed_version = -1
        self._pinned: dict[str, str] = {}
        self._plans: dict[tuple, Any] = {}
        self._lock = threading.RLock()
        _LOCAL_SESSIONS.add(self)
        if self.config.log_device_placement:
            print(device_mapping_text(self.devices), file=sys.stdout)

    def list_devices(self) -> list[DeviceAttributes]:
        return [DeviceAttributes(d) for d in sorted(self.devices, key=lambda d: d.name)]

    @staticmethod
    def reset(target: str, containers: list | None = None, config: Any = None) -> None:
        """Clear the resource containers (variables) of a cluster's tasks, closing sessions."""
        for prefix, reset in _remote_resets.items():
            if target.startswith(prefix):
                return reset(target, containers, config)
        raise _no_factory(_as_target(target), reset=True)

    def close(self) -> None:
        if not getattr(self, "_closed", True):
            self._executor.close()
            self.resources.clear()
        super().close()

    # -- placement and plans ----------------------------------------------------------
    def placement(self) -> placer.Placement:
        """Place the whole graph (again, if it grew), printing the log if asked."""
        with self._lock:
            if self._placed_version != self.graph.version:
                ops = self.graph.get_operations()
                self._placement = placer.place(ops, self.devices,
                                               self.config.allow_soft_placement, self._pinned,
                                               DeviceSpec("localhost", 0, 0))
                self._remember_stateful(ops)
                self._placed_version = self.graph.version
                self._plans.clear()
                if self.config.log_device_placement:
                    print("\n".join(self._placement.log_lines()), file=sys.stdout)
            return self._placement

    def _remember_stateful(self, ops: list[Operation]) -> None:
        for op in ops:
            if op.op_def.stateful and op.name not in self._pinned:
                self._pinned[op.name] = self._placement.devices[op.name].name

    def _plan(self, tensors: list, targets: list, feeds: dict) -> Any:
        placement = self.placement()
        key = (tuple(t.name if t is not None else None for t in tensors),
               tuple(op.name for op in targets), tuple(sorted(t.name for t in feeds)))
        plan = self._plans.get(key)
        if plan is None:
            plan = build_plan(self.graph._ops, placement.devices, tensors, targets, list(feeds),
                              self.resources)
            self._plans[key] = plan
        return plan

    def _run_flat(self, tensors: list, targets: list, feeds: dict, options: RunOptions,
                  run_metadata: RunMetadata | None) -> list:
        plan = self._plan(tensors, targets, feeds)
        placement = self._placement.devices
        feed_values = {plan.feed_slots[t]: placement[t.op.name].from_host(v)
                       for t, v in feeds.items()}
        trace = options.trace_level >= RunOptions.FULL_TRACE and run_metadata is not None
        timeout = (options.timeout_in_ms or self.config.operation_timeout_in_ms or 0) / 1000
        raw, stats = self._executor.run(plan, feed_values, self.resources, trace, timeout or None)
        self.resources.last_step += 1
        if run_metadata is not None:
            if stats is not None:
                run_metadata.step_stats = stats
            if options.output_partition_graphs:
                run_metadata.partition_graphs = partition_graphs(plan)
            run_metadata.placement = {n: d.name for n, d in placement.items()}
        return [None if t is None else to_fetch_value(v, placement[t.op.name], t.is_ref, t.op)
                for t, v in zip(tensors, raw, strict=True)]


class InteractiveSession(Session):
    """A Session that makes itself the default on creation (for shells and notebooks)."""

    def __init__(self, target: str = "", graph: Graph | None = None,
                 config: ConfigProto | None = None) -> None:
        super().__init__(target, graph, config)
        self._default_cm = _as_default(self)
        self._default_cm.__enter__()

    def close(self) -> None:
        cm, self._default_cm = getattr(self, "_default_cm", None), None
        if cm is not None:
            try:
                cm.__exit__(None, None, None)
            except ValueError:
                pass
        super().close()


def _as_target(target: Any) -> str:
    """A session target as ``str`` (None: '', bytes decoded), or TF's TypeError."""
    if target is None or isinstance(target, str):
        return target or ""
    if isinstance(target, bytes):
        return target.decode("utf-8")
    message = f'Argument `target` must be a string, but got "{type(target).__name__}"'
    if isinstance(target, ConfigProto):
        raise TypeError(f'{message}. Did you do "Session(config)" instead of '
                        '"Session(config=config)"?')
    raise TypeError(with_hint(message, tr("pass '' (or nothing) for a session in this process, "
                                          "or a server's target such as "
                                          "'grpc://localhost:2222'.")))


def _check_config(config: Any) -> None:
    """TF's TypeError for a ``config`` that is not a ConfigProto."""
    if config is not None and not isinstance(config, ConfigProto):
        raise TypeError(f'Argument `config` must be a tf.ConfigProto, but got '
                        f'"{type(config).__name__}"')


def _no_factory(target: str, reset: bool = False) -> NotFoundError:
    """TF's error for a target that no registered session factory accepts (``reset``: for
    ``Session.reset``, which only a cluster target can do)."""
    names = [p.split(":", 1)[0].upper() + "_SESSION" for p in _remote_factories]
    hint = tr("use '' (or no target) for a session in this process, or 'grpc://host:port' "
              "for a cluster task.")
    if reset:
        hint = tr("Session.reset clears the containers of a cluster's tasks: give it a "
                  "server's target such as 'grpc://localhost:2222' (a local session's "
                  "variables end with the session).")
    elif target.startswith("grpc://"):
        hint = tr("grpc:// targets need the cluster runtime: `import tfteach` registers it.")
    return NotFoundError(f'No session factory registered for the given session options: '
                         f'{{target: "{target}"}} Registered factories are '
                         f'{{{", ".join(names + ["DIRECT_SESSION"])}}}.', hint=hint)


def device_mapping_text(devices: list) -> str:
    """TF's ``Device mapping:`` header (devices with a description only)."""
    described = [d for d in sorted(devices, key=lambda d: d.name) if d.description]
    if not described:
        return "Device mapping: no known devices."
    return "Device mapping:\n" + "\n".join(f"{d.name} -> {d.description}" for d in described)


# ---- fetches and feeds ------------------------------------------------------------------------
def _flatten_fetches(fetches: Any, graph: Graph) -> tuple[list, Callable[[list], Any]]:
    """Flatten nested fetches into graph elements, and a function that rebuilds the shape."""
    flat: list = []

    def walk(f: Any) -> Callable[[list], Any]:
        if isinstance(f, (list, tuple)) and not hasattr(f, "_as_graph_element"):
            subs = [walk(x) for x in f]
            make = type(f)._make if hasattr(type(f), "_make") else type(f)
            return lambda vals: make([s(vals) for s in subs])
        if isinstance(f, dict):
            subs = {k: walk(v) for k, v in f.items()}
            return lambda vals: type(f)((k, s(vals)) for k, s in subs.items())
        if isinstance(f, IndexedSlices):     # three tensors (dense_shape may be None)
            subs = [walk(t) if t is not None else (lambda vals: None)
                    for t in (f.values, f.indices, f.dense_shape)]
            return lambda vals: IndexedSlicesValue(*(s(vals) for s in subs))
        i = len(flat)
        flat.append(_as_fetch(f, graph))
        return lambda vals: vals[i]

    return flat, walk(fetches)


def _as_fetch(f: Any, graph: Graph) -> Any:
    if f is None:
        raise TypeError(f"Fetch argument None has invalid type {type(None)}")
    try:
        return graph.as_graph_element(f, allow_tensor=True, allow_operation=True)
    except (ValueError, KeyError) as e:      # TF: ValueError for both
        raise ValueError(with_hint(
            f"Fetch argument {f!r} cannot be interpreted as a Tensor. ({e})",
            tr("fetch only tensors and ops of the session's graph; a program built after "
               "tf.reset_default_graph() needs a new Session."))) from None
    except TypeError as e:
        raise TypeError(f"Fetch argument {f!r} has invalid type {type(f)}, must be a string "
                        f"or Tensor. ({e})") from None


def _resolve_feeds(feed_dict: dict, graph: Graph) -> dict:
    out: dict[Tensor, np.ndarray] = {}
    for key, value in _flatten_feed_dict(feed_dict).items():
        try:
            t = graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
        except Exception as e:
            raise TypeError(f"Cannot interpret feed_dict key as Tensor: {e}") from None
        out[t] = _feed_value(t, value)
    return out


def _flatten_feed_dict(feed_dict: dict) -> dict:
    """TF's ``nest.flatten_dict_items``: a nested key (tuple) feeds its leaves in order from
    the leaves of its value; every flattened key must be unique."""
    if not any(isinstance(key, tuple) for key in feed_dict):
        return feed_dict
    out: dict = {}
    for key, value in feed_dict.items():
        pairs: Any = [(key, value)]
        if isinstance(key, tuple):
            keys, values = flatten(key), flatten(value)
            if len(keys) != len(values):
                raise ValueError(with_hint(
                    f"Could not flatten dictionary. Key had {len(keys)} elements, but value had "
                    f"{len(values)} elements. Key: {keys}, value: {values}.",
                    tr("a tuple key takes one value per tensor, e.g. {(a, b): (1.0, 2.0)}; "
                       "lists inside the value are flattened too, so give array values as "
                       "NumPy arrays.")))
            pairs = zip(keys, values, strict=True)
        for k, v in pairs:
            if k in out:
                raise ValueError(f"Cannot flatten dict because this key is not unique: {k}")
            out[k] = v
    return out


def _fits(dims: list | None, shape: tuple) -> bool:
    """Whether an array of ``shape`` may be fed to a tensor with static ``dims``."""
    if dims is None:
        return True
    if len(dims) != len(shape):
        return False
    for d, n in zip(dims, shape, strict=True):
        if d is not None and d != n:
            return False
    return True


def _feed_value(t: Tensor, value: Any) -> np.ndarray:
    dt = t.dtype
    if isinstance(value, Tensor):
        raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed "
                        "values include Python scalars, strings, lists, numpy ndarrays, or "
                        "TensorHandles.")
    try:
        arr = np.asarray(value, dtype=dt.np)
        fits = not (isinstance(value, int) and dt.is_integer and arr.item() != value)
    except OverflowError:
        fits = False
    if not fits:
        raise TypeError(f"Type of feed value {value} with type {type(value)} is not compatible "
                        f"with Tensor type {dt!r}. Try explicitly setting the type of the feed "
                        "tensor to a larger type (e.g. int64).")
    if not _fits(t.shape.dims, arr.shape):
        raise ValueError(with_hint(
            f"Cannot feed value of shape {arr.shape} for Tensor '{t.name}', which has shape "
            f"'{t.shape}'", tr("reshape the value to {shape} (? means any size), e.g. "
                               "x.reshape(-1, ...).", shape=t.shape)))
    return arr

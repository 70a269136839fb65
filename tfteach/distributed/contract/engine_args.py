"""What callers send an engine besides a step's tensors, decoded and checked.

RunStep and RunGraph ``options`` (JSON, parsed once per distinct bytes), CreateSession's
config (a ConfigProto as JSON) and TF's ``MergeFrom`` of the server's default config into
it, graph defs (``graph_io`` JSON, every node checked) and a task's own config. A malformed
one is InvalidArgumentError naming what is wrong, never a traceback.
"""
from __future__ import annotations

import functools
import json
from types import MappingProxyType
from typing import Any, Mapping

from tfteach import errors
from tfteach.framework.graph import Graph
from tfteach.framework.graph_io import graph_from_json
from tfteach.i18n import tr
from tfteach.runtime.session_config import ConfigProto


@functools.lru_cache(maxsize=256)
def parse_options(options: bytes) -> Mapping[str, Any]:
    """RunStep or RunGraph options (JSON; the same bytes step after step), parsed once.
    The mapping is shared: read it, never change it."""
    opts = json_object(options, "RunOptions")
    for key in ("timeout_s", "timeout_in_ms"):
        value = opts.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not 0 <= value < 1e12:
            raise errors.InvalidArgumentError(
                f"RunOptions {key} must be a number of at least 0, not {value!r}")
    return MappingProxyType(opts)


def json_object(data: bytes, what: str) -> dict:
    """``data`` (JSON; empty: ``{}``) as a dict; InvalidArgumentError if it is not one."""
    try:
        value = json.loads(data or b"{}")
    except (ValueError, RecursionError) as e:
        value = e
    if not isinstance(value, dict):
        raise errors.InvalidArgumentError(
            f"Malformed {what}: expected a JSON object, got {str(value)[:80]!r}",
            hint=tr("tfteach's clients send it; a client of your own must send the same "
                    "format."))
    return value


def load_graph(data: bytes, where: str, into: Graph | None = None) -> Graph:
    """The graph def ``data`` received by ``where`` (added to ``into`` if given), every
    node checked (``graph_io``); InvalidArgumentError naming the node and field."""
    try:
        return graph_from_json(data, into)
    except ValueError as e:
        raise errors.InvalidArgumentError(
            f"{where}: invalid graph: {e}",
            hint=tr("build graphs with tfteach (tf.Session sends them); a graph def of your "
                    "own must follow tfteach.framework.graph_io's format.")) from None


def session_config(config: bytes) -> ConfigProto:
    """CreateSession's ConfigProto (JSON); InvalidArgumentError if malformed."""
    spec = json_object(config, "CreateSession config")
    try:
        return ConfigProto.from_dict(spec)
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise errors.InvalidArgumentError(f"Malformed CreateSession config: {e}") from None


def merge_config(session: ConfigProto, server: ConfigProto) -> ConfigProto:
    """TF's ``MergeFrom`` of the server's default session config into a session's: the
    server's fields that differ from their default win (lists are appended)."""
    return ConfigProto.from_dict(_merged(session.to_dict(), server.to_dict(),
                                         ConfigProto().to_dict()))


def _merged(into: dict, source: dict, default: dict) -> dict:
    out = dict(into)
    for key, value in source.items():
        if isinstance(value, dict):
            out[key] = _merged(out.get(key) or {}, value, default.get(key) or {})
        elif isinstance(value, list):
            out[key] = list(out.get(key) or []) + [v for v in value if v not in out.get(key, [])]
        elif value != default.get(key):
            out[key] = value
    return out


def task_config(value: Any) -> ConfigProto:
    """A task's default session config (``TaskInfo.config``: a ConfigProto, its dict or
    JSON, or nothing) as a ConfigProto."""
    if isinstance(value, ConfigProto):
        return value
    if isinstance(value, (bytes, str)) and value:
        return ConfigProto.from_dict(json.loads(value))
    if isinstance(value, dict):
        return ConfigProto.from_dict(value)
    return ConfigProto()

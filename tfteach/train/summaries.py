"""``tf.summary`` ops: ``scalar``, ``histogram``, ``image``, ``text``, ``merge``, ``merge_all``.

Each builds one summary op (``tfteach.ops.summary_ops``) inside a name scope named after the
summary (``train/loss``: the op's name and the tag it writes, uniquified as TF does;
``family=`` prefixes both) and adds it to ``collections`` (``GraphKeys.SUMMARIES`` by
default). Running it gives a serialized ``Summary``, which ``FileWriter.add_summary`` takes.
"""
from __future__ import annotations

import contextlib
import re
from typing import Any, Iterator

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import GraphKeys, Tensor, get_default_graph
from tfteach.framework.protos import tfteach_tf_formats_pb2 as pb
from tfteach.i18n import tr
from tfteach.ops import summary_ops
from tfteach.ops.common import convert_to_tensor, graph_of

__all__ = ["histogram", "image", "merge", "merge_all", "scalar", "text"]

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")


def clean_tag(name: str | None) -> str | None:
    """A tag with TF's illegal characters replaced by ``_`` and no leading ``/``."""
    if name is None:
        return None
    return _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")


@contextlib.contextmanager
def summary_scope(name: str, family: str | None = None, values: Any = ()) -> Iterator[tuple]:
    """``(tag, scope)`` for a summary named ``name`` (TF's ``summary_op_util``)."""
    name, family = clean_tag(name), clean_tag(family)
    base = name if family is None else f"{family}/{name}"
    g = graph_of(list(values))
    with g.as_default(), g.name_scope(base) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        yield tag, scope


def _collect(value: Tensor, collections: Any) -> Tensor:
    g = value.graph
    for key in (GraphKeys.SUMMARIES,) if collections is None else collections:
        g.add_to_collection(key, value)
    return value


def scalar(name: str, tensor: Any, collections: Any = None, family: str | None = None) -> Tensor:
    """A ``Summary`` with one ``simple_value`` (TensorBoard's Scalars tab)."""
    with summary_scope(name, family, [tensor]) as (tag, scope):
        return _collect(summary_ops.scalar_summary(tag, tensor, scope), collections)


def histogram(name: str, values: Any, collections: Any = None,
              family: str | None = None) -> Tensor:
    """A ``Summary`` with a histogram of ``values`` (Histograms and Distributions tabs)."""
    with summary_scope(name, family, [values]) as (tag, scope):
        return _collect(summary_ops.histogram_summary(tag, values, scope), collections)


def image(name: str, tensor: Any, max_outputs: int = 3, collections: Any = None,
          family: str | None = None) -> Tensor:
    """A ``Summary`` with up to ``max_outputs`` PNG images of ``[batch, h, w, c]``."""
    with summary_scope(name, family, [tensor]) as (tag, scope):
        return _collect(summary_ops.image_summary(tag, tensor, max_outputs, scope), collections)


def text(name: str, tensor: Any, collections: Any = None) -> Tensor:
    """A ``Summary`` with a string tensor for TensorBoard's Text tab."""
    t = convert_to_tensor(tensor)
    if t.dtype is not dtypes.string:
        raise ValueError(with_hint(
            f"Expected tensor {t.name} to have dtype string, got {t.dtype.name}",
            tr("tf.summary.text shows strings; use tf.summary.scalar or "
               "tf.summary.histogram for numbers.")))
    metadata = pb.SummaryMetadata(plugin_data=pb.SummaryMetadata.PluginData(plugin_name="text"))
    with summary_scope(name, None, [t]) as (tag, scope):
        op = summary_ops.tensor_summary_v2(tag, t, metadata.SerializeToString(), scope)
        return _collect(op, collections)


def merge(inputs: list, collections: Any = None, name: str | None = None) -> Tensor:
    """One ``Summary`` with the values of all ``inputs`` (a repeated tag fails at run time)."""
    g = graph_of(list(inputs))
    with g.as_default(), g.name_scope(name or "Merge"):
        value = summary_ops.merge_summary(list(inputs), name="MergeSummary" if name is None
                                          else name)
    for key in collections or ():
        g.add_to_collection(key, value)
    return value


def merge_all(key: str = GraphKeys.SUMMARIES, scope: str | None = None,
              name: str | None = None) -> Tensor | None:
    """``merge`` of every summary in collection ``key`` (None when there is none)."""
    summaries = get_default_graph().get_collection(key, scope)
    return merge(summaries, name=name) if summaries else None

"""Summary ops: ``ScalarSummary``, ``HistogramSummary``, ``ImageSummary``, ``TensorSummaryV2``
and ``MergeSummary``, whose outputs are serialized ``Summary`` protobufs (string scalars).

As in TF each kernel builds TF's ``Summary`` message (``tfteach.framework.protos``):
- scalar: one ``Value{tag, simple_value}`` per element of ``tags``/``values``;
- histogram: TF's default buckets (limits growing by 10% from 1e-12 to 1e20, mirrored for
  negatives, around 0, ending at +-DBL_MAX), runs of empty buckets collapsed into their last
  limit, as ``Histogram::EncodeToProto`` does;
- image: up to ``max_images`` PNGs tagged ``tag/image`` (one) or ``tag/image/<i>``; float
  images are scaled per image as TF does (all >= 0: by 255/max; else by 127/max|v| around
  128), non-finite pixels get ``bad_color``;
- merge: the values of all inputs, a repeated tag is InvalidArgumentError.
The PNGs are encoded here (zlib, no filter), so their bytes differ from TF's; the pixels
do not. Kernels run on the CPU only (TF has no GPU kernel for them either).
"""
from __future__ import annotations

import struct
import sys
import zlib
from typing import Any

import numpy as np

from tfteach.errors import InvalidArgumentError
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.protos import tfteach_tf_formats_pb2 as pb
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_proto import make_tensor_proto
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.common import convert_to_tensor, graph_of

__all__ = ["histogram_summary", "image_summary", "merge_summary", "scalar_summary",
           "tensor_summary_v2"]

_NO_GPU = frozenset()


def _string_scalar(op):
    return [(dtypes.string, TensorShape([]))]


def _serialized(summary: pb.Summary) -> np.ndarray:
    return np.array(summary.SerializeToString(), dtype=object)


def _text(value: Any) -> str:
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.decode() if isinstance(value, bytes) else str(value)


# ---- scalar --------------------------------------------------------------------------------
def _scalar_kernel(ctx, tags, values):
    tags, values = np.asarray(tags, dtype=object), ctx.device.to_host(values)
    if tags.shape != np.shape(values):
        raise InvalidArgumentError(
            f"tags and values are not the same shape: {list(tags.shape)} != "
            f"{list(np.shape(values))}"
            + (f" (tag '{_text(tags.ravel()[0])}')" if tags.size == 1 else ""), op=ctx.op,
            hint=tr("give one tag per value, e.g. a scalar tag for a scalar value."))
    summary = pb.Summary()
    for tag, value in zip(tags.ravel(), np.ravel(values), strict=True):
        summary.value.add(tag=_text(tag), simple_value=float(value))
    return _serialized(summary)


# ---- histogram -----------------------------------------------------------------------------
def _default_limits() -> list[float]:
    positive, v = [], 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(sys.float_info.max)
    return [-x for x in reversed(positive)] + [0.0] + positive


_LIMITS = _default_limits()


def _running_sum(flat: np.ndarray) -> float:
    """Sum in order, one addition after another, as TF's ``Histogram::Add`` (so the last
    bits match; NumPy's ``sum`` adds pairwise)."""
    return float(np.cumsum(flat)[-1]) if flat.size else 0.0


def histogram_proto(values: Any) -> pb.HistogramProto:
    """TF's ``HistogramProto`` of ``values`` (default buckets, empty runs collapsed)."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(flat)):
        raise ValueError("Nan in summary histogram")
    counts = np.bincount(np.searchsorted(_LIMITS, flat, side="right"),
                         minlength=len(_LIMITS)).astype(np.float64)
    proto = pb.HistogramProto(min=float(flat.min()) if flat.size else sys.float_info.max,
                              max=float(flat.max()) if flat.size else -sys.float_info.max,
                              num=float(flat.size), sum=_running_sum(flat),
                              sum_squares=_running_sum(flat * flat))
    i = 0
    while i < len(_LIMITS):
        end, count = _LIMITS[i], counts[i]
        i += 1
        while count <= 0 and i < len(_LIMITS) and counts[i] <= 0:
            end, count = _LIMITS[i], counts[i]
            i += 1
        proto.bucket_limit.append(end)
        proto.bucket.append(count)
    return proto


def _histogram_kernel(ctx, tag, values):
    try:
        histo = histogram_proto(ctx.device.to_host(values))
    except ValueError:
        raise InvalidArgumentError(
            "Nan in summary histogram for: " + _text(tag), op=ctx.op,
            hint=tr("the values are not finite: look for a diverging loss or a too large "
                    "learning rate.")) from None
    summary = pb.Summary()
    summary.value.add(tag=_text(tag), histo=histo)
    return _serialized(summary)


# ---- image ---------------------------------------------------------------------------------
def encode_png(pixels: np.ndarray) -> bytes:
    """A PNG of a uint8 ``[height, width, channels]`` array (1 grey, 3 RGB, 4 RGBA)."""
    height, width, channels = pixels.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = np.concatenate([np.zeros((height, 1), np.uint8),
                           pixels.reshape(height, width * channels)], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes())) + chunk(b"IEND", b""))


def _to_uint8(image: np.ndarray, bad_color: np.ndarray) -> np.ndarray:
    """TF's ``NormalizeFloatImage``: one affine map into [0, 255] per image."""
    values = image.astype(np.float32)
    finite = np.all(np.isfinite(values), axis=-1)
    good = values[finite]
    lo = float(good.min()) if good.size else np.inf
    hi = float(good.max()) if good.size else -np.inf
    if lo < 0:
        top = max(abs(lo), abs(hi))
        scale, offset = (0.0 if top < 1e-6 else 127.0 / top), 128.0
    else:
        scale, offset = (0.0 if hi < 1e-6 else 255.0 / hi), 0.0
    out = np.empty(values.shape, np.uint8)
    with np.errstate(invalid="ignore"):
        out[finite] = (values[finite] * np.float32(scale) + np.float32(offset)).astype(np.uint8)
    out[~finite] = bad_color[:values.shape[-1]]
    return out


def _image_kernel(ctx, tag, images):
    images = np.asarray(ctx.device.to_host(images))
    if images.ndim != 4 or images.shape[-1] not in (1, 3, 4):
        raise InvalidArgumentError(
            f"Tensor must be 4-D with last dim 1, 3, or 4, not {list(images.shape)}",
            op=ctx.op, hint=tr("pass images as [batch, height, width, channels] with 1, 3 "
                               "or 4 channels."))
    max_images = ctx.attrs["max_images"]
    bad_color = np.asarray(ctx.attrs.get("bad_color", [255, 0, 0, 255]), np.uint8)
    base, summary = _text(tag), pb.Summary()
    for i in range(min(images.shape[0], max_images)):
        pixels = images[i] if images.dtype == np.uint8 else _to_uint8(images[i], bad_color)
        h, w, c = pixels.shape
        value = summary.value.add(tag=f"{base}/image/{i}" if max_images > 1 else f"{base}/image")
        value.image.height, value.image.width, value.image.colorspace = h, w, c
        value.image.encoded_image_string = encode_png(pixels)
    return _serialized(summary)


# ---- tensor (text) and merge ---------------------------------------------------------------
def _tensor_summary_kernel(ctx, tag, tensor, metadata):
    summary = pb.Summary()
    value = summary.value.add(tag=_text(tag))
    value.metadata.ParseFromString(np.asarray(metadata, dtype=object).item())
    value.tensor.CopyFrom(make_tensor_proto(np.asarray(ctx.device.to_host(tensor))))
    return _serialized(summary)


def _merge_kernel(ctx, *inputs):
    merged, seen = pb.Summary(), set()
    for serialized in inputs:
        for item in np.asarray(serialized, dtype=object).ravel():
            for value in pb.Summary.FromString(item).value:
                if value.tag and value.tag in seen:
                    raise InvalidArgumentError(
                        f"Duplicate tag {value.tag} found in summary inputs ", op=ctx.op,
                        hint=tr("give each summary its own name, or merge each summary once."))
                seen.add(value.tag)
                merged.value.add().CopyFrom(value)
    return _serialized(merged)


for _type, _kernel in (("ScalarSummary", _scalar_kernel),
                       ("HistogramSummary", _histogram_kernel),
                       ("ImageSummary", _image_kernel),
                       ("TensorSummaryV2", _tensor_summary_kernel),
                       ("MergeSummary", _merge_kernel)):
    register_op(_type, _string_scalar, _kernel, gpu_types=_NO_GPU, cheap=False)
not_differentiable("ScalarSummary", "HistogramSummary", "ImageSummary", "TensorSummaryV2",
                   "MergeSummary")


# ---- constructors (TF's gen_logging_ops; the tag const is built inside the op's scope) ------
def _summary_op(op_type: str, tag_name: str, tag: str, tensor: Any, scope: str,
                attrs: dict, extra: list = ()) -> Tensor:
    g = graph_of([tensor])
    with g.as_default(), g.name_scope(scope) as op_scope:
        tag_t = convert_to_tensor(tag, dtype=dtypes.string, name=tag_name)
        t = convert_to_tensor(tensor)
        inputs = [tag_t, t] + [convert_to_tensor(e, dtype=dtypes.string, name=n)
                               for n, e in extra]
        return g.create_op(op_type, inputs, {"T": t.dtype, **attrs}, name=op_scope).outputs[0]


def scalar_summary(tags: Any, values: Any, name: str) -> Tensor:
    return _summary_op("ScalarSummary", "tags", tags, values, name, {})


def histogram_summary(tag: Any, values: Any, name: str) -> Tensor:
    return _summary_op("HistogramSummary", "tag", tag, values, name, {})


def image_summary(tag: Any, tensor: Any, max_images: int, name: str) -> Tensor:
    attrs = {"max_images": int(max_images), "bad_color": [255, 0, 0, 255]}
    return _summary_op("ImageSummary", "tag", tag, tensor, name, attrs)


def tensor_summary_v2(tag: Any, tensor: Any, serialized_metadata: bytes, name: str) -> Tensor:
    return _summary_op("TensorSummaryV2", "tag", tag, tensor, name, {},
                       [("serialized_summary_metadata", serialized_metadata)])


def merge_summary(inputs: list, name: str) -> Tensor:
    ts = [convert_to_tensor(i) for i in inputs]
    g = graph_of(ts)
    return g.create_op("MergeSummary", ts, {"N": len(ts)}, name=name).outputs[0]



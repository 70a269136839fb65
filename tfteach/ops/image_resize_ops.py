"""Resizing images: ``tf.image.resize_images`` (ResizeBilinear, ResizeNearestNeighbor).

Both kernels take a batch ``[n, height, width, channels]`` and the new ``[height, width]`` and
map each output pixel to source coordinates as TF 1.x does (``half_pixel_centers=False``):
``src = dst * in / out``, or ``dst * (in - 1) / (out - 1)`` with ``align_corners``, in float32.
Bilinear mixes the four neighbours and gives float32; nearest takes the pixel at the floor
(rounded with ``align_corners``) and keeps the dtype. Neither has a gradient here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.registry import ALL_TYPES, not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.array_ops import expand_dims, squeeze
from tfteach.ops.common import const_value, convert_to_tensor, create_op


class ResizeMethod:
    """``tf.image.ResizeMethod`` (TF 1.x's numbers)."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _scale(in_size: int, out_size: int, align: bool) -> np.float32:
    if align and out_size > 1:
        return np.float32((in_size - 1) / np.float32(out_size - 1))
    return np.float32(in_size / np.float32(out_size))


def _source(in_size: int, out_size: int, align: bool) -> np.ndarray:
    return np.arange(out_size, dtype=np.float32) * _scale(in_size, out_size, align)


def _new_size(ctx: Any, images: Any, size: Any) -> tuple[int, int]:
    h, w = (int(v) for v in np.asarray(ctx.device.to_host(size)).reshape(-1))
    if images.ndim != 4:
        raise errors.InvalidArgumentError(f"input must be 4-dimensional{list(images.shape)}",
                                          op=ctx.op, hint=tr("resize a batch of images "
                                                             "[batch, height, width, channels]."))
    if h <= 0 or w <= 0:
        raise errors.InvalidArgumentError("output dimensions must be positive", op=ctx.op,
                                          hint=tr("give a new size of at least 1x1."))
    return h, w


def _bilinear_kernel(ctx: Any, images: Any, size: Any) -> np.ndarray:
    x = np.asarray(ctx.device.to_host(images)).astype(np.float32)
    h, w = _new_size(ctx, x, size)
    align = bool(ctx.attrs.get("align_corners", False))
    ys, xs = _source(x.shape[1], h, align), _source(x.shape[2], w, align)
    y0, x0 = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
    y1 = np.minimum(np.ceil(ys).astype(np.int64), x.shape[1] - 1)
    x1 = np.minimum(np.ceil(xs).astype(np.int64), x.shape[2] - 1)
    dy = (ys - y0).astype(np.float32)[None, :, None, None]
    dx = (xs - x0).astype(np.float32)[None, None, :, None]
    top_left, top_right = x[:, y0][:, :, x0], x[:, y0][:, :, x1]
    bottom_left, bottom_right = x[:, y1][:, :, x0], x[:, y1][:, :, x1]
    top = top_left + (top_right - top_left) * dx
    bottom = bottom_left + (bottom_right - bottom_left) * dx
    return ctx.device.from_host(top + (bottom - top) * dy)


def _nearest_kernel(ctx: Any, images: Any, size: Any) -> Any:
    x = np.asarray(ctx.device.to_host(images))
    h, w = _new_size(ctx, x, size)
    align = bool(ctx.attrs.get("align_corners", False))
    pick = np.round if align else np.floor
    ys = np.minimum(pick(_source(x.shape[1], h, align)).astype(np.int64), x.shape[1] - 1)
    xs = np.minimum(pick(_source(x.shape[2], w, align)).astype(np.int64), x.shape[2] - 1)
    return ctx.device.from_host(x[:, ys][:, :, xs])


def _resize_shape(dtype_of: Any) -> Any:
    def shape_fn(op: Operation) -> list:
        images, size = op.inputs
        hw = const_value(size)
        batch = images.shape.dims[0] if images.shape.dims else None
        channels = images.shape.dims[3] if images.shape.dims and len(images.shape.dims) == 4 \
            else None
        dims = [None, None] if hw is None else [int(v) for v in np.asarray(hw).reshape(-1)]
        return [(dtype_of(op), TensorShape([batch] + dims + [channels]))]
    return shape_fn


register_op("ResizeBilinear", _resize_shape(lambda op: dtypes.float32), _bilinear_kernel,
            gpu_types=frozenset())
register_op("ResizeNearestNeighbor", _resize_shape(lambda op: op.inputs[0].dtype),
            _nearest_kernel, gpu_types=ALL_TYPES)
not_differentiable("ResizeBilinear", "ResizeNearestNeighbor")

_OPS = {ResizeMethod.BILINEAR: "ResizeBilinear",
        ResizeMethod.NEAREST_NEIGHBOR: "ResizeNearestNeighbor"}


def resize_images(images: Any, size: Any, method: int = ResizeMethod.BILINEAR,
                  align_corners: bool = False, preserve_aspect_ratio: bool = False,
                  name: str | None = None) -> Tensor:
    """``tf.image.resize_images``: a 3-D image or 4-D batch resized to ``size`` =
    ``[new_height, new_width]`` (bilinear gives float32; the same size gives the images)."""
    if method not in _OPS:
        raise NotImplementedError(errors.with_hint(
            f"tfteach resizes with BILINEAR and NEAREST_NEIGHBOR only, not method {method}.",
            tr("use ResizeMethod.BILINEAR or ResizeMethod.NEAREST_NEIGHBOR.")))
    if preserve_aspect_ratio:
        raise NotImplementedError(errors.with_hint(
            "tfteach's resize_images has no preserve_aspect_ratio.",
            tr("compute the new size yourself, or crop first (central_crop).")))
    x = convert_to_tensor(images, name="images")
    rank = x.shape.ndims
    if rank not in (3, 4):
        raise ValueError(errors.with_hint(
            "'images' contains no shape." if rank is None else
            "'images' must have either 3 or 4 dimensions.",
            tr("resize one image [height, width, channels] or a batch "
               "[n, height, width, channels].")))
    with x.graph.as_default(), x.graph.name_scope(name or "resize_images"):
        hw = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        known = const_value(hw)
        if known is not None and list(x.shape.dims[-3:-1]) == [int(v) for v in known]:
            return x
        batch = x if rank == 4 else expand_dims(x, 0)
        out = create_op(_OPS[method], [batch, hw], {"T": x.dtype,
                                                    "align_corners": bool(align_corners),
                                                    "half_pixel_centers": False},
                        _OPS[method]).outputs[0]
        return out if rank == 4 else squeeze(out, [0])

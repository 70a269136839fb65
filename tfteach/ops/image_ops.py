"""``tf.image`` basics and ``tf.random_crop``: flips, crops, pads, brightness, contrast,
per-image standardisation, dtype conversion, resizing (``image_resize_ops``).

An image is ``[height, width, channels]``, a batch ``[n, height, width, channels]``. Most of
these are built from other ops, as TF builds them (ReverseV2, Slice, Pad, Add, Mean, ...);
``AdjustContrastv2`` is an op of its own: per channel, ``(x - mean) * factor + mean`` with the
mean over height and width. Random flips choose with a uniform draw per image and a Select
(TF 1.x uses a cond for a single image: the same values). Crops and pads need the image's
height and width known when the graph is built.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.i18n import tr
from tfteach.ops.array_ops import broadcast_to, cast, reshape, shape
from tfteach.ops.common import convert_to_tensor, create_op
from tfteach.ops.image_resize_ops import ResizeMethod, resize_images
from tfteach.ops.manip_ops import pad, slice_
from tfteach.ops.math_ops import (add, clip_by_value, divide, floor, less, maximum, multiply,
                                  reduce_mean, reduce_prod, rsqrt, sqrt, square, subtract, where)
from tfteach.ops.random_ops import random_uniform
from tfteach.ops.reverse_ops import reverse

__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop",
           "convert_image_dtype", "crop_to_bounding_box", "flip_left_right", "flip_up_down",
           "pad_to_bounding_box", "per_image_standardization", "random_brightness",
           "random_contrast", "random_crop", "random_flip_left_right", "random_flip_up_down",
           "resize_image_with_crop_or_pad", "resize_images"]


def _image(image: Any) -> Tensor:
    t = convert_to_tensor(image, name="image")
    if t.shape.ndims not in (3, 4):
        raise ValueError(with_hint(
            f"'image' (shape {t.shape}) must have either 3 or 4 dimensions.",
            tr("tf.image works on one image [height, width, channels] or a batch "
               "[n, height, width, channels].")))
    return t


# ---- dtypes ------------------------------------------------------------------------------------
def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False,
                        name: str | None = None) -> Tensor:
    """Integers are scaled to [0, 1) as floats (``x / dtype.max``), floats to integers by
    ``x * (max + 0.5)``; floats to floats are cast."""
    x = convert_to_tensor(image, name="image")
    dt = dtypes.as_dtype(dtype)
    with x.graph.as_default(), x.graph.name_scope(name or "convert_image"):
        if dt is x.dtype:
            return x
        if x.dtype.is_floating and dt.is_floating:
            return cast(x, dt)
        if not x.dtype.is_floating and dt.is_floating:
            return multiply(cast(x, dt), 1.0 / float(np.iinfo(x.dtype.np).max))
        if x.dtype.is_floating:
            info = np.iinfo(dt.np)
            scaled = multiply(x, float(info.max) + 0.5)
            if saturate:
                scaled = clip_by_value(scaled, float(info.min), float(info.max))
            return cast(scaled, dt)
    raise NotImplementedError("tfteach converts images between integer types only through a "
                              "float type.")


def _in_float(image: Tensor, fn: Any, name: str) -> Tensor:
    """``fn`` applied to ``image`` as float32 (float16/32 as they are), converted back."""
    with image.graph.as_default(), image.graph.name_scope(name):
        flt = image if image.dtype in (dtypes.float16, dtypes.float32) else \
            convert_image_dtype(image, dtypes.float32)
        return convert_image_dtype(fn(flt), image.dtype, saturate=True)


# ---- flips -------------------------------------------------------------------------------------
def _flip(image: Any, axis: int, name: str) -> Tensor:
    x = _image(image)
    with x.graph.as_default(), x.graph.name_scope(name):
        return reverse(x, [axis + (x.shape.ndims == 4)])


def flip_left_right(image: Any) -> Tensor:
    """The image mirrored: columns in reverse order."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image: Any) -> Tensor:
    """The image upside down: rows in reverse order."""
    return _flip(image, 0, "flip_up_down")


def _random_flip(image: Any, axis: int, seed: int | None, name: str) -> Tensor:
    x = _image(image)
    with x.graph.as_default(), x.graph.name_scope(name):
        batch = x.shape.ndims == 4
        draw = random_uniform(reshape(shape(x)[0], [1]) if batch else [], 0, 1.0, seed=seed)
        mirror = less(draw, 0.5)
        if batch:
            mirror = reshape(mirror, [-1, 1, 1, 1])
        return where(broadcast_to(mirror, shape(x)), reverse(x, [axis + batch]), x)


def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """Each image mirrored with probability 1/2."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """Each image turned upside down with probability 1/2."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


# ---- brightness, contrast, standardisation ----------------------------------------------------
def adjust_brightness(image: Any, delta: Any) -> Tensor:
    """``image + delta`` (on the [0, 1] scale for integer images, saturated back)."""
    x = _image(image)
    return _in_float(x, lambda f: add(f, cast(delta, f.dtype)), "adjust_brightness")


def random_brightness(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """adjust_brightness by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError(with_hint("max_delta must be non-negative.", _range_hint()))
    delta = random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def _contrast_kernel(ctx: Any, images: Any, factor: Any) -> Any:
    xp = ctx.xp
    mean = xp.mean(images, axis=(-3, -2), keepdims=True, dtype=xp.float32)
    return ((images - mean) * xp.asarray(factor, dtype=images.dtype) + mean).astype(images.dtype)


register_op("AdjustContrastv2", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)],
            _contrast_kernel)
not_differentiable("AdjustContrastv2")


def adjust_contrast(images: Any, contrast_factor: Any) -> Tensor:
    """Per channel: ``(x - mean) * contrast_factor + mean`` (mean over height and width)."""
    x = _image(images)

    def contrast(flt: Tensor) -> Tensor:
        factor = convert_to_tensor(contrast_factor, dtype=dtypes.float32, name="contrast_factor")
        return create_op("AdjustContrastv2", [flt, factor], {"T": flt.dtype},
                         "AdjustContrastv2").outputs[0]
    return _in_float(x, contrast, "adjust_contrast")


def random_contrast(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """adjust_contrast by a factor drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError(with_hint("upper must be > lower.", _range_hint()))
    if lower < 0:
        raise ValueError(with_hint("lower must be non-negative.", _range_hint()))
    return adjust_contrast(image, random_uniform([], lower, upper, seed=seed))


def per_image_standardization(image: Any) -> Tensor:
    """``(x - mean) / max(stddev, 1 / sqrt(pixels))`` per image (float32)."""
    x = _image(image)
    with x.graph.as_default(), x.graph.name_scope("per_image_standardization") as scope:
        x = cast(x, dtypes.float32)
        rank = x.shape.ndims
        pixels = reduce_prod(slice_(shape(x), [rank - 3], [3]))
        mean = reduce_mean(x, axis=[-1, -2, -3], keepdims=True)
        stddev = sqrt(reduce_mean(square(subtract(x, mean)), axis=[-1, -2, -3], keepdims=True))
        scale = maximum(stddev, rsqrt(cast(pixels, dtypes.float32)))
        return divide(subtract(x, mean), scale, name=scope)


# ---- crops and pads ----------------------------------------------------------------------------
def _range_hint() -> str:
    return tr("the random factor is drawn from the range you give: its bounds must be "
              "ordered and not negative.")


def _hw(x: Tensor) -> tuple[int, int]:
    h, w = x.shape.dims[-3], x.shape.dims[-2]
    if h is None or w is None:
        raise ValueError(with_hint(
            f"tfteach needs the image's height and width when the graph is built, not {x.shape}.",
            tr("set the image's shape first (image.set_shape([h, w, c]) or tf.reshape).")))
    return h, w


def _box(x: Tensor, begin: list, size: list) -> tuple[list, list]:
    if x.shape.ndims == 4:
        return [0] + begin + [0], [-1] + size + [-1]
    return begin + [0], size + [-1]


def _check(conditions: list) -> None:
    for ok, message in conditions:
        if not ok:
            raise ValueError(with_hint(message, tr("the box must lie inside the image (for a "
                                                   "pad: the image inside the box).")))


def crop_to_bounding_box(image: Any, offset_height: int, offset_width: int,
                         target_height: int, target_width: int) -> Tensor:
    """The ``target_height x target_width`` box whose top-left corner is at the offsets."""
    x = _image(image)
    h, w = _hw(x)
    _check([(offset_width >= 0, "offset_width must be >= 0."),
            (offset_height >= 0, "offset_height must be >= 0."),
            (target_width > 0, "target_width must be > 0."),
            (target_height > 0, "target_height must be > 0."),
            (w >= target_width + offset_width, "width must be >= target + offset."),
            (h >= target_height + offset_height, "height must be >= target + offset.")])
    with x.graph.as_default(), x.graph.name_scope("crop_to_bounding_box"):
        return slice_(x, *_box(x, [offset_height, offset_width], [target_height, target_width]))


def pad_to_bounding_box(image: Any, offset_height: int, offset_width: int,
                        target_height: int, target_width: int) -> Tensor:
    """The image inside a ``target_height x target_width`` box of zeros, at the offsets."""
    x = _image(image)
    h, w = _hw(x)
    after_h, after_w = target_height - offset_height - h, target_width - offset_width - w
    _check([(offset_height >= 0, "offset_height must be >= 0"),
            (offset_width >= 0, "offset_width must be >= 0"),
            (after_w >= 0, "width must be <= target - offset"),
            (after_h >= 0, "height must be <= target - offset")])
    spatial = [[offset_height, after_h], [offset_width, after_w]]
    pads = ([[0, 0]] if x.shape.ndims == 4 else []) + spatial + [[0, 0]]
    with x.graph.as_default(), x.graph.name_scope("pad_to_bounding_box"):
        return pad(x, pads)


def resize_image_with_crop_or_pad(image: Any, target_height: int, target_width: int) -> Tensor:
    """The centre of the image, cropped or padded with zeros to the target size."""
    x = _image(image)
    h, w = _hw(x)
    if target_width <= 0 or target_height <= 0:
        _check([(target_width > 0, "target_width must be > 0."),
                (target_height > 0, "target_height must be > 0.")])
    dw, dh = target_width - w, target_height - h
    with x.graph.as_default(), x.graph.name_scope("resize_image_with_crop_or_pad"):
        cropped = crop_to_bounding_box(x, max(-dh // 2, 0), max(-dw // 2, 0),
                                       min(target_height, h), min(target_width, w))
        return pad_to_bounding_box(cropped, max(dh // 2, 0), max(dw // 2, 0),
                                   target_height, target_width)


def central_crop(image: Any, central_fraction: float) -> Tensor:
    """The central ``central_fraction`` of the image's height and width."""
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError(with_hint("central_fraction must be within (0, 1]",
                                   tr("give the fraction of the height and width to keep, "
                                      "e.g. 0.875.")))
    x = _image(image)
    if central_fraction == 1.0:
        return x
    h, w = _hw(x)
    top, left = int((h - h * central_fraction) / 2), int((w - w * central_fraction) / 2)
    with x.graph.as_default(), x.graph.name_scope("central_crop"):
        return slice_(x, *_box(x, [top, left], [h - 2 * top, w - 2 * left]))


def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """``tf.random_crop``: a piece of ``value`` of shape ``size`` at a uniformly random offset."""
    g = get_default_graph()
    with g.name_scope(name or "random_crop"):
        x = convert_to_tensor(value, name="value")
        sz = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        dims = x.shape.dims
        wanted = [int(s) for s in np.asarray(size).reshape(-1)] if not isinstance(size, Tensor) \
            else None
        if dims is not None and wanted is not None and any(
                d is not None and s > d for d, s in zip(dims, wanted, strict=False)):
            raise ValueError(with_hint(f"Need value.shape >= size, got {dims} {wanted}",
                                       tr("crop a piece no larger than the value.")))
        limit = cast(add(subtract(shape(x), sz), 1), dtypes.float32)
        draw = random_uniform(shape(sz), 0, 1.0, seed=seed)
        offset = cast(floor(multiply(draw, limit)), dtypes.int32)
        out = slice_(x, offset, sz)
        if wanted is not None:
            out.set_shape(wanted)
        return out

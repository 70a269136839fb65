"""Sliding windows over NHWC images: the geometry and array helpers that convolution and
pooling share (no ops are registered here).

Geometry follows TF's ``GetWindowedOutputSize``: with an effective window ``(k - 1) * d + 1``,
``VALID`` gives ``ceil((in - eff + 1) / s)`` positions and ``SAME`` gives ``ceil(in / s)``,
padded by ``max(0, (out - 1) * s + eff - in)``, the smaller half before. Attribute lists
(``strides``, ``ksize``, ``dilations``) are TF's four-element lists in the op's
``data_format``; the batch and channel entries must be 1.

Array helpers work on a padded NHWC array with any array module ``xp``: ``patches`` is a
strided view ``[N, OH, OW, KH, KW, C]`` (im2col without a copy until it is reshaped), and
``window_slices`` yields, per window offset, the slice of the padded image it sees at every
output position, so pooling loops over window offsets, never over pixels.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PADDINGS = ("SAME", "VALID")


def four(value: Any, name: str, data_format: str = "NHWC") -> list[int]:
    """TF's ``_get_sequence``: an int, 2 ints (H, W) or 4 ints -> 4 ints in ``data_format``."""
    vals = [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]
    if len(vals) == 1:
        vals = vals * 2
    if len(vals) == 2:
        vals = [1, 1, *vals] if data_format == "NCHW" else [1, *vals, 1]
    if len(vals) != 4:
        raise ValueError(f"{name} should be of length 1, 2 or 4 but was {len(vals)}")
    return vals


def spatial(values: list[int], data_format: str) -> tuple[int, int]:
    """The (H, W) entries of a four-element attribute."""
    return (values[2], values[3]) if data_format == "NCHW" else (values[1], values[2])


def check_padding(padding: Any, op_type: str) -> str:
    text = padding.decode() if isinstance(padding, bytes) else str(padding)
    if text.upper() not in PADDINGS:
        raise ValueError(f"Value for attr 'padding' of \"{text}\" is not in the list of allowed "
                         f"values: \"SAME\", \"VALID\"\n\t; NodeDef: {op_type}")
    return text.upper()


def check_format(data_format: Any) -> str:
    fmt = data_format or "NHWC"
    if fmt not in ("NHWC", "NCHW"):
        raise ValueError(f"Value for attr 'data_format' of \"{fmt}\" is not in the list of "
                         "allowed values: \"NHWC\", \"NCHW\"")
    return fmt


@dataclass(frozen=True)
class Axis:
    """One spatial axis: output size and the padding before and after it."""

    out: int
    before: int
    after: int


def axis_geometry(size: int, k: int, s: int, d: int, padding: str) -> Axis | None:
    """The output size and padding along one axis; None when the window does not fit."""
    eff = (k - 1) * d + 1
    if padding == "VALID":
        out = (size - eff + s) // s
        return Axis(out, 0, 0) if size >= eff else None
    out = (size + s - 1) // s
    total = max(0, (out - 1) * s + eff - size)
    return Axis(out, total // 2, total - total // 2)


@dataclass(frozen=True)
class Window:
    """A 2-D window: size, strides, dilations and padding mode (NHWC)."""

    kh: int
    kw: int
    sh: int
    sw: int
    dh: int = 1
    dw: int = 1
    padding: str = "VALID"

    def axes(self, h: int, w: int) -> tuple[Axis, Axis]:
        ah = axis_geometry(h, self.kh, self.sh, self.dh, self.padding)
        aw = axis_geometry(w, self.kw, self.sw, self.dw, self.padding)
        if ah is None or aw is None:
            raise ValueError(f"Negative dimension size caused by subtracting "
                             f"{self.kh if ah is None else self.kw} from "
                             f"{h if ah is None else w}")
        return ah, aw

    def out_dim(self, size: int | None, axis: int) -> int | None:
        """Output size along H (axis 0) or W (axis 1) of a possibly unknown ``size``."""
        if size is None:
            return None
        k, s, d = (self.kh, self.sh, self.dh) if axis == 0 else (self.kw, self.sw, self.dw)
        geo = axis_geometry(size, k, s, d, self.padding)
        if geo is None:
            raise ValueError(f"Negative dimension size caused by subtracting {k} from {size}")
        return geo.out


def window_from_attrs(attrs: Any, size_key: str = "ksize", filter_hw: tuple | None = None
                      ) -> Window:
    """The ``Window`` an op's attrs describe (``filter_hw`` for convolutions)."""
    fmt = attrs.get("data_format", "NHWC")
    sh, sw = spatial(attrs["strides"], fmt)
    dh, dw = spatial(attrs.get("dilations", [1, 1, 1, 1]), fmt)
    kh, kw = filter_hw if filter_hw is not None else spatial(attrs[size_key], fmt)
    return Window(kh, kw, sh, sw, dh, dw, attrs["padding"])


def pad_image(xp: Any, x: Any, ah: Axis, aw: Axis, value: float = 0.0) -> Any:
    """``x`` [N, H, W, C] padded by the geometry's before/after amounts."""
    if not (ah.before or ah.after or aw.before or aw.after):
        return x
    widths = ((0, 0), (ah.before, ah.after), (aw.before, aw.after), (0, 0))
    return xp.pad(x, widths, mode="constant", constant_values=value)


def patches(xp: Any, xpad: Any, win: Window, oh: int, ow: int) -> Any:
    """A strided view [N, OH, OW, KH, KW, C] of the padded image ``xpad`` (no copy)."""
    n, _, _, c = xpad.shape
    s0, s1, s2, s3 = xpad.strides
    shape = (n, oh, ow, win.kh, win.kw, c)
    strides = (s0, s1 * win.sh, s2 * win.sw, s1 * win.dh, s2 * win.dw, s3)
    return xp.lib.stride_tricks.as_strided(xpad, shape=shape, strides=strides)


def window_slices(win: Window, oh: int, ow: int) -> Iterator[tuple[int, int, tuple]]:
    """Per window offset (row-major): ``(i, j, index)`` where ``padded[index]`` is the
    [N, OH, OW, C] block that offset sees at every output position."""
    for i in range(win.kh):
        for j in range(win.kw):
            r0, c0 = i * win.dh, j * win.dw
            yield i, j, (slice(None), slice(r0, r0 + (oh - 1) * win.sh + 1, win.sh),
                         slice(c0, c0 + (ow - 1) * win.sw + 1, win.sw), slice(None))


def crop(xpad: Any, ah: Axis, aw: Axis) -> Any:
    """Undo ``pad_image``."""
    h, w = xpad.shape[1] - ah.before - ah.after, xpad.shape[2] - aw.before - aw.after
    return xpad[:, ah.before:ah.before + h, aw.before:aw.before + w, :]


def to_nhwc(xp: Any, x: Any, data_format: str) -> Any:
    return xp.transpose(x, (0, 2, 3, 1)) if data_format == "NCHW" else x


def from_nhwc(xp: Any, x: Any, data_format: str) -> Any:
    return xp.ascontiguousarray(xp.transpose(x, (0, 3, 1, 2))) if data_format == "NCHW" else x


def nhwc_dims(dims: list | None, data_format: str) -> list | None:
    """A shape's dims reordered to NHWC (None stays None)."""
    if dims is None:
        return None
    return [dims[0], dims[2], dims[3], dims[1]] if data_format == "NCHW" else list(dims)


def in_format(dims: list, data_format: str) -> list:
    """NHWC dims back in ``data_format``."""
    return [dims[0], dims[3], dims[1], dims[2]] if data_format == "NCHW" else list(dims)

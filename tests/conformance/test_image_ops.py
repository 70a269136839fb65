"""``tf.image`` basics and ``tf.random_crop`` against TensorFlow's compat.v1.

The deterministic ops (flips, crops, pads, brightness, contrast, standardisation, dtype
conversion, bilinear and nearest resizing) give TF's values, dtypes and static shapes; the
random ones give what their definition allows (the image or its mirror; a constant shift within
``max_delta``; a window of the input), in TF's dtypes and shapes. Each runtime builds every
case in one graph and runs it once.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

RNG = np.random.default_rng(7)
IMG = RNG.uniform(0, 1, (5, 7, 3)).astype(np.float32)
BATCH = RNG.uniform(-1, 2, (2, 5, 7, 3)).astype(np.float32)
U8 = RNG.integers(0, 256, (5, 7, 3)).astype(np.uint8)

DETERMINISTIC = {
    "flip_lr": lambda tf: tf.image.flip_left_right(IMG),
    "flip_lr_batch": lambda tf: tf.image.flip_left_right(BATCH),
    "flip_ud": lambda tf: tf.image.flip_up_down(U8),
    "reverse": lambda tf: tf.reverse(BATCH, [0, 2]),
    "brightness_float": lambda tf: tf.image.adjust_brightness(IMG, 0.25),
    "brightness_uint8": lambda tf: tf.image.adjust_brightness(U8, 0.3),
    "contrast_float": lambda tf: tf.image.adjust_contrast(BATCH, 1.7),
    "contrast_uint8": lambda tf: tf.image.adjust_contrast(U8, 2.5),
    "standardize_uint8": lambda tf: tf.image.per_image_standardization(U8),
    "standardize_batch": lambda tf: tf.image.per_image_standardization(BATCH),
    "standardize_flat": lambda tf: tf.image.per_image_standardization(np.ones((2, 2, 1))),
    "to_float": lambda tf: tf.image.convert_image_dtype(U8, tf.float32),
    "to_uint8": lambda tf: tf.image.convert_image_dtype(BATCH, tf.uint8, saturate=True),
    "bilinear_up": lambda tf: tf.image.resize_images(IMG, [8, 11]),
    "bilinear_down": lambda tf: tf.image.resize_images(BATCH, [3, 4]),
    "bilinear_corners": lambda tf: tf.image.resize_images(U8, [9, 4], align_corners=True),
    "bilinear_same": lambda tf: tf.image.resize_images(U8, [5, 7]),
    "nearest_up": lambda tf: tf.image.resize_images(
        U8, [11, 9], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR),
    "nearest_down": lambda tf: tf.image.resize_images(
        BATCH, [2, 3], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR, align_corners=True),
    "central_half": lambda tf: tf.image.central_crop(IMG, 0.5),
    "central_batch": lambda tf: tf.image.central_crop(BATCH, 0.33),
    "crop_box": lambda tf: tf.image.crop_to_bounding_box(BATCH, 1, 2, 3, 4),
    "pad_box": lambda tf: tf.image.pad_to_bounding_box(U8, 2, 1, 8, 10),
    "crop_or_pad_both": lambda tf: tf.image.resize_image_with_crop_or_pad(IMG, 8, 4),
    "crop_or_pad_batch": lambda tf: tf.image.resize_image_with_crop_or_pad(BATCH, 2, 10),
}

RANDOM = {
    "random_flip": lambda tf: tf.image.random_flip_left_right(IMG, seed=3),
    "random_flip_batch": lambda tf: tf.image.random_flip_left_right(BATCH, seed=4),
    "random_flip_ud": lambda tf: tf.image.random_flip_up_down(U8, seed=5),
    "random_brightness": lambda tf: tf.image.random_brightness(IMG, 0.3, seed=6),
    "random_contrast": lambda tf: tf.image.random_contrast(U8, 0.2, 1.8, seed=7),
    "random_crop": lambda tf: tf.random_crop(BATCH, [2, 3, 4, 3], seed=8),
}


def _run(mod, cases: dict) -> dict:
    with mod.Graph().as_default():
        tensors = {name: build(mod) for name, build in cases.items()}
        static = {name: (t.dtype.name, t.shape.as_list() if t.shape.ndims is not None else None)
                  for name, t in tensors.items()}
        with mod.Session() as sess:
            values = sess.run(tensors)
    return {name: (values[name], static[name]) for name in cases}


@pytest.fixture(scope="module")
def both() -> tuple[dict, dict]:
    cases = {**DETERMINISTIC, **RANDOM}
    return _run(tfteach, cases), _run(tf1, cases)


@pytest.mark.parametrize("case", sorted(DETERMINISTIC))
def test_deterministic_image_op_matches_tf(both, case: str) -> None:
    (ours, our_static), (theirs, their_static) = both[0][case], both[1][case]
    assert our_static == their_static
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    tolerance = 0 if ours.dtype == np.uint8 else 1e-5
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64),
                               atol=tolerance, rtol=1e-5)


@pytest.mark.parametrize("case", sorted(RANDOM))
def test_random_image_op_has_tf_dtype_and_shape(both, case: str) -> None:
    (ours, our_static), (theirs, their_static) = both[0][case], both[1][case]
    assert our_static == their_static
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape


def test_random_flips_give_the_image_or_its_mirror(both) -> None:
    ours = {k: both[0][k][0] for k in RANDOM}
    assert any(np.array_equal(ours["random_flip"], x) for x in (IMG, IMG[:, ::-1]))
    assert any(np.array_equal(ours["random_flip_ud"], x) for x in (U8, U8[::-1]))
    for got, img in zip(ours["random_flip_batch"], BATCH, strict=True):
        assert np.array_equal(got, img) or np.array_equal(got, img[:, ::-1])


def test_random_brightness_shifts_every_pixel_by_one_delta(both) -> None:
    shift = both[0]["random_brightness"][0] - IMG
    assert np.ptp(shift) < 1e-5 and abs(shift.flat[0]) <= 0.3


def test_random_contrast_scales_around_the_channel_means(both) -> None:
    got = both[0]["random_contrast"][0].astype(np.float64)
    mean = U8.astype(np.float64).mean(axis=(0, 1))
    factor = (got - mean)[U8 != np.round(mean)] / (U8.astype(np.float64) - mean)[
        U8 != np.round(mean)]
    assert 0.2 - 0.05 <= np.median(factor) <= 1.8 + 0.05


def test_random_crop_is_a_window_of_the_input(both) -> None:
    got = both[0]["random_crop"][0]
    windows = [BATCH[:, i:i + 3, j:j + 4] for i in range(3) for j in range(4)]
    assert any(np.array_equal(got, w) for w in windows)


def test_crop_outside_the_image_fails_as_in_tf() -> None:
    with tfteach.Graph().as_default(), pytest.raises(ValueError,
                                                     match="width must be >= target \\+ offset"):
        tfteach.image.crop_to_bounding_box(IMG, 0, 5, 2, 3)
    with tf1.Graph().as_default(), pytest.raises(ValueError,
                                                 match="width must be >= target \\+ offset"):
        tf1.image.crop_to_bounding_box(IMG, 0, 5, 2, 3)

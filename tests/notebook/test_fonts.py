"""Figures draw Korean, Chinese and Russian labels with real glyphs: the CJK font comes with
tfteach[lab] (mplfonts' Noto Sans CJK SC), no system font needed."""
from __future__ import annotations

import warnings

import pytest

matplotlib = pytest.importorskip("matplotlib")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from tfteach.notebook.fonts import cjk_family, font_rc  # noqa: E402
from tfteach.notebook.palette import figure_rc  # noqa: E402

LABELS = {"ko": "전역 스텝에 따른 손실", "zh": "损失随全局步数的变化", "ru": "Потери по глобальному шагу"}


def _missing_glyph_warnings(rc: dict, text: str) -> list[str]:
    with matplotlib.rc_context(rc), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = Figure(figsize=(3, 2))
        ax = fig.subplots()
        ax.set_title(text)
        ax.set_xlabel(text)
        FigureCanvasAgg(fig).draw()
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def test_the_cjk_font_is_installed_with_the_package_and_registered():
    assert cjk_family() == "Noto Sans CJK SC"
    assert font_rc()["font.family"] == ["DejaVu Sans", "Noto Sans CJK SC"]


@pytest.mark.parametrize("lang", sorted(LABELS))
def test_figure_labels_in_every_language_have_every_glyph(lang):
    assert _missing_glyph_warnings(figure_rc(), LABELS[lang]) == []


def test_without_the_font_korean_and_chinese_labels_lose_their_glyphs():
    """The check above can fail: matplotlib's own font has no Hangul or Han characters."""
    plain = {"font.family": ["DejaVu Sans"]}
    assert _missing_glyph_warnings(plain, LABELS["ko"])
    assert _missing_glyph_warnings(plain, LABELS["zh"])


def _embedded_font(svg: str):
    import base64
    import io
    import re

    from fontTools.ttLib import TTFont

    found = re.search(r"url\(data:font/otf;base64,([A-Za-z0-9+/=]+)\)", svg)
    return TTFont(io.BytesIO(base64.b64decode(found.group(1)))) if found else None


def _placement_bundle(monkeypatch, lang: str) -> str:
    import tfteach as tf
    from tfteach.notebook.placement_cell import PlacementOptions, run_placement_cell

    monkeypatch.setenv("TFTEACH_LANG", lang)
    cell = ("with tf.device('/gpu:0'):\n"
            "    product = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]), name='product')\n"
            "product")
    result = run_placement_cell(cell, PlacementOptions(run=True), {"tf": tf})
    try:
        return result.view._repr_mimebundle_()[0]["image/svg+xml"]
    finally:
        result.close()


@pytest.mark.parametrize("lang", ["ko", "zh"])
def test_a_korean_or_chinese_picture_carries_the_glyphs_of_its_labels(monkeypatch, lang):
    """The static SVG reads in a browser without a Korean or Chinese font: the glyphs it
    uses are embedded, cut from the same font, and every text's font list names them."""
    import re

    from wcwidth import wcwidth

    svg = _placement_bundle(monkeypatch, lang)
    wide = {c for text in re.findall(r">([^<>]+)<", svg) for c in text if wcwidth(c) == 2}
    assert wide, "the legend is translated"
    font = _embedded_font(svg)
    assert font is not None
    assert wide <= {chr(code) for code in font.getBestCmap()}
    assert all(family.endswith(",tfteach-cjk")
               for family in re.findall(r'font-family="([^"]*)"', svg))
    assert len(svg) < 60_000, "a few glyphs, not the whole font"


def test_an_english_or_russian_picture_embeds_no_font(monkeypatch):
    for lang in ("en", "ru"):
        svg = _placement_bundle(monkeypatch, lang)
        assert _embedded_font(svg) is None and "tfteach-cjk" not in svg

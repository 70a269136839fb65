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

"""Fonts for figures in every lesson language: Korean and Chinese need a CJK font.

matplotlib's own DejaVu Sans has Latin and Cyrillic but no Hangul or Han characters, which it
draws as empty boxes. ``cjk_family()`` registers Noto Sans CJK SC (Hangul, Han, Latin and
Cyrillic in one font, shipped by the ``mplfonts`` wheel that ``tfteach[lab]`` installs, so no
system font is needed) with matplotlib once per process; ``font_rc()`` names it after DejaVu
Sans as the font family, so matplotlib takes each glyph DejaVu lacks from it.

The static SVG pictures (placement graph, timeline) are drawn by whatever browser shows them
(JupyterLab, nbconvert's HTML, GitHub), which may have no Korean or Chinese font.
``embed_cjk_font(svg)`` puts into an SVG that has such characters the few glyphs it uses,
cut from the same font (a few KB, as a data URL in an ``@font-face``), and names that face
after each ``font-family``, so a browser falls back to it only for the glyphs its own fonts
lack.
"""
from __future__ import annotations

import base64
import functools
import importlib.util
import io
import re
from pathlib import Path
from typing import Any

CJK_FILE = "NotoSansCJKsc-Regular.otf"
SVG_FACE = "tfteach-cjk"
_TEXT = re.compile(r">([^<>]+)<")
_FAMILY = re.compile(r'font-family="([^"]*)"')


def cjk_font_path() -> Path | None:
    """Where the CJK font file is (inside the installed ``mplfonts``), or None."""
    spec = importlib.util.find_spec("mplfonts")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "fonts" / CJK_FILE
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=1)
def cjk_family() -> str | None:
    """The CJK font's family name, registered with matplotlib (None without the font)."""
    path = cjk_font_path()
    if path is None:
        return None
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(path))
    return font_manager.FontProperties(fname=str(path)).get_name()


def font_rc() -> dict[str, Any]:
    """rcParams that draw Korean, Chinese and Russian text (empty without the CJK font)."""
    family = cjk_family()
    if family is None:
        return {}
    return {"font.family": ["DejaVu Sans", family]}


def embed_cjk_font(svg: str) -> str:
    """``svg`` with the glyphs of its Korean and Chinese characters embedded (unchanged when
    it has none, or without the font)."""
    from wcwidth import wcwidth

    wide = "".join(sorted({c for text in _TEXT.findall(svg) for c in text if wcwidth(c) == 2}))
    font = _subset(wide) if wide else None
    if font is None:
        return svg
    face = (f'<style>@font-face{{font-family:"{SVG_FACE}";src:url(data:font/otf;base64,'
            f'{font}) format("opentype")}}</style>')
    svg = _FAMILY.sub(lambda m: f'font-family="{m.group(1)},{SVG_FACE}"', svg)
    return re.sub(r"(<svg\b[^>]*>)", lambda m: m.group(1) + face, svg, count=1)


@functools.lru_cache(maxsize=64)
def _subset(chars: str) -> str | None:
    """The CJK font cut down to ``chars``, as base64 (None without the font or fontTools)."""
    path = cjk_font_path()
    try:
        from fontTools import subset
        from fontTools.ttLib import TTFont
    except ImportError:
        return None
    if path is None:
        return None
    font = TTFont(str(path), lazy=True)
    cutter = subset.Subsetter(subset.Options(hinting=False, desubroutinize=True,
                                             name_IDs=[], notdef_outline=True))
    cutter.populate(text=chars)
    cutter.subset(font)
    out = io.BytesIO()
    font.save(out)
    return base64.b64encode(out.getvalue()).decode("ascii")

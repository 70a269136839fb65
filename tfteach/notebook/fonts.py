"""Fonts for figures in every lesson language: Korean and Chinese need a CJK font.

matplotlib's own DejaVu Sans has Latin and Cyrillic but no Hangul or Han characters, which it
draws as empty boxes. ``cjk_family()`` registers Noto Sans CJK SC (Hangul, Han, Latin and
Cyrillic in one font, shipped by the ``mplfonts`` wheel that ``tfteach[lab]`` installs, so no
system font is needed) with matplotlib once per process; ``font_rc()`` names it after DejaVu
Sans as the font family, so matplotlib takes each glyph DejaVu lacks from it.
"""
from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

CJK_FILE = "NotoSansCJKsc-Regular.otf"


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

"""The translated lessons (no kernel): each language has every English lesson, cell for cell
(same ids, types and order), with the English code cells byte for byte and their metadata,
its language in the notebook's metadata and every markdown cell with prose translated; each
language's folder has a README, and the glossary has a column per language. The diagrams
(fenced blocks with box-drawing frames) keep each box's sides in line, counted in display
columns (``wcwidth``: a Korean or Chinese character takes two)."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from lesson_tools import LANGS, LESSONS, lesson_or_skip, lesson_path
from wcwidth import wcwidth

NAMES = sorted(p.name for p in LESSONS.glob("[0-9][0-9]_*.ipynb"))
TRANSLATED = [lang for lang in LANGS if lang != "en"]
PAIRS = [(lang, name) for lang in TRANSLATED for name in NAMES]
IDS = [f"{lang}-{name[:-len('.ipynb')]}" for lang, name in PAIRS]

# Box frames: top corners, bottom corners, and what a side may be crossed by on its way down.
TOP = {"┌": "┐", "╭": "╮"}
BOTTOM = {"┌": ("└", "┘"), "╭": ("╰", "╯")}
SIDE = set("│├┤┼▲▼◄►┬┴")
RUN_RECORD = "execution"          # cell metadata nbclient writes at each run (its times)
OPENS = set("│├")       # near the top-left corner, on the line below: a box, not a bracket
NEAR = 4                 # columns: a side shifted by a translation is still seen as a box's


def _cells(path: Path) -> list:
    return nbformat.read(path, as_version=4).cells


def _authored(metadata: dict) -> dict:
    """A cell's metadata less what executing it records."""
    return {k: v for k, v in metadata.items() if k != RUN_RECORD}


def _pair(lang: str, name: str) -> tuple[list, list]:
    """The English lesson's cells and the translation's (skipped while it is missing: the
    test of its existence fails instead)."""
    return _cells(lesson_path(name)), _cells(lesson_or_skip(name, lang))


def prose(markdown: str) -> str:
    """A markdown text without its fenced code blocks, `code` spans, links' targets and HTML
    tags: what a translator translates."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]+`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"<[^>]+>", "", text)


@pytest.mark.parametrize(("lang", "name"), PAIRS, ids=IDS)
def test_every_english_lesson_is_translated(lang, name):
    assert lesson_path(name, lang).is_file(), f"lessons/{lang}/{name} is missing"


@pytest.mark.parametrize(("lang", "name"), PAIRS, ids=IDS)
def test_the_translation_has_the_english_cells_in_order(lang, name):
    english, translated = _pair(lang, name)
    assert [(c.cell_type, c.get("id")) for c in translated] == \
        [(c.cell_type, c.get("id")) for c in english]


@pytest.mark.parametrize(("lang", "name"), PAIRS, ids=IDS)
def test_code_cells_and_their_metadata_are_the_english_ones(lang, name):
    english, translated = _pair(lang, name)
    pairs = [(e, t) for e, t in zip(english, translated, strict=False) if e.cell_type == "code"]
    assert pairs
    for e, t in pairs:
        assert t.cell_type == "code" and t.source.encode() == e.source.encode(), e.get("id")
        assert _authored(t.metadata) == _authored(e.metadata), e.get("id")


@pytest.mark.parametrize(("lang", "name"), PAIRS, ids=IDS)
def test_the_notebook_metadata_names_its_language(lang, name):
    nb = nbformat.read(lesson_or_skip(name, lang), as_version=4)
    assert nb.metadata.get("tfteach", {}).get("lang") == lang


@pytest.mark.parametrize(("lang", "name"), PAIRS, ids=IDS)
def test_every_markdown_cell_with_prose_is_translated(lang, name):
    english, translated = _pair(lang, name)
    untranslated = [e.get("id") for e, t in zip(english, translated, strict=False)
                    if e.cell_type == "markdown" and t.source == e.source
                    and any(ch.isalpha() for ch in prose(e.source))]
    assert untranslated == [], "markdown cells still in English"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_each_language_folder_has_a_readme(lang):
    assert (LESSONS / lang / "README.md").is_file()


def test_the_glossary_has_a_column_per_language():
    text = (LESSONS / "GLOSSARY.md").read_text(encoding="utf-8")
    header = next(line for line in text.splitlines() if line.startswith("|"))
    columns = [c.strip().lower() for c in header.strip("|").split("|")]
    assert columns[0].startswith(("english", "en"))
    for lang in TRANSLATED:
        assert any(f"({lang})" in c or c == lang for c in columns[1:]), (lang, columns)
    rows = [line for line in text.splitlines() if line.startswith("|")][2:]
    assert rows and all(len(row.strip("|").split("|")) == len(columns) for row in rows)


# ---- diagrams ---------------------------------------------------------------------------------
def _columns(line: str) -> dict[int, str]:
    """Each character of ``line`` by the display column it starts at."""
    found, column = {}, 0
    for ch in line:
        found[column] = ch
        column += max(wcwidth(ch), 0)
    return found


def box_problems(block: str) -> list[str]:
    """The boxes of a diagram whose sides are not in line with their corners: for each top
    corner pair (┌ … ┐) with a side (│) near it on the line below, every line down to the
    bottom corners must have a side character at both corners' columns, and the bottom line
    └ and ┘ there."""
    rows = [_columns(line) for line in block.splitlines()]
    problems = []
    for i, row in enumerate(rows):
        for left, ch in sorted(row.items()):
            if ch not in TOP:
                continue
            right = next((c for c in sorted(row) if c > left and row[c] == TOP[ch]), None)
            below = rows[i + 1] if i + 1 < len(rows) else {}
            if right is None or not any(below.get(c) in OPENS
                                        for c in range(left - NEAR, left + NEAR + 1)):
                continue                          # a bracket, not a box
            problems += _walk_down(rows, i, left, right, BOTTOM[ch])
    return problems


def _walk_down(rows: list[dict[int, str]], top: int, left: int, right: int,
               bottom: tuple[str, str]) -> list[str]:
    for j in range(top + 1, len(rows)):
        at_left, at_right = rows[j].get(left, " "), rows[j].get(right, " ")
        if at_left == bottom[0]:
            return [] if at_right == bottom[1] else [f"line {j + 1}: the bottom's right corner "
                                                      f"is not under the top's (column {right})"]
        if at_left not in SIDE:
            return [f"line {j + 1}: the left side left column {left}"]
        if at_right not in SIDE:
            return [f"line {j + 1}: the right side is not at column {right}"]
    return [f"the box from line {top + 1} has no bottom"]


def _diagrams(path: Path) -> list[tuple[str, str]]:
    """(cell id, block) for each fenced block of the markdown cells that draws a box."""
    return [(c.get("id"), block) for c in _cells(path) if c.cell_type == "markdown"
            for block in re.findall(r"^```[^\n]*\n(.*?)^```", c.source, re.S | re.M)
            if any(corner in block for corner in TOP)]


@pytest.mark.parametrize(("lang", "name"), [("en", n) for n in NAMES] + PAIRS,
                         ids=[f"en-{n[:-len('.ipynb')]}" for n in NAMES] + IDS)
def test_diagrams_keep_each_box_in_line(lang, name):
    crooked = {cell: found for cell, block in _diagrams(lesson_or_skip(name, lang))
               if (found := box_problems(block))}
    assert crooked == {}


def test_the_box_check_finds_a_side_pushed_out_by_wide_characters():
    drawn = "┌──────┐\n│ model│\n└──────┘"
    assert box_problems(drawn) == []
    assert box_problems(drawn.replace("model", "모델이")) != []     # 2 columns each: too wide
    assert box_problems(drawn.replace("model", "모델 ")) == []     # 4 + 1 columns: in line
    assert box_problems("  ┌─┴─┐\n  ▼   ▼\n rows rows") == [], "a bracket is not a box"

"""The fixtures of a lesson's tests, for every language: ``lang`` (each of ``LANGS`` in turn,
once per module), ``lesson`` (the module's ``LESSON_NAME`` in that language) and its HTML
export (``export_file``, and its text ``exported``). ``tests/lessons/conftest.py`` and the
lesson tests elsewhere import them."""
from __future__ import annotations

from pathlib import Path

import pytest
from lesson_tools import LANGS, export_html, lesson_or_skip


@pytest.fixture(scope="module", params=LANGS, ids=LANGS)
def lang(request) -> str:
    """A lesson language: the module's tests run once for each."""
    return request.param


@pytest.fixture(scope="module")
def lesson(request, lang) -> Path:
    """``request.module.LESSON_NAME`` in ``lang`` (skipped while not translated yet)."""
    return lesson_or_skip(request.module.LESSON_NAME, lang)


@pytest.fixture(scope="module")
def export_file(lesson, tmp_path_factory) -> Path:
    """The lesson's HTML page with its stored outputs, once per module and language."""
    return export_html(lesson, tmp_path_factory.mktemp("export"))


@pytest.fixture(scope="module")
def exported(export_file) -> str:
    """The text of ``export_file``."""
    return export_file.read_text()

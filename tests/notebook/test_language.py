"""A lesson's kernel speaks the lesson's language: Jupyter tells the kernel which notebook it
runs (``JPY_SESSION_NAME``), and tfteach reads the language from that notebook's metadata,
then passes it on to the processes the kernel starts (``TFTEACH_LANG``)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import os\nfrom tfteach.i18n import language\n"
         "print(language(), os.environ.get('TFTEACH_LANG'))")


def _notebook(folder: Path, lang: str | None) -> Path:
    metadata = {"tfteach": {"lang": lang}} if lang else {}
    path = folder / "01_lesson.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": metadata,
                                "cells": []}), encoding="utf-8")
    return path


def _kernel_says(folder: Path, session: str, **env: str) -> str:
    from jupyter_client.manager import start_new_kernel

    clean = {k: v for k, v in os.environ.items()
             if k not in ("TFTEACH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")}
    clean.update(PYTHONPATH=str(ROOT), JPY_SESSION_NAME=session, **env)
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(folder), env=clean)
    printed: list[str] = []
    try:
        reply = kc.execute_interactive(
            PROBE, timeout=120,
            output_hook=lambda msg: printed.append(msg["content"].get("text", "")))
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return "".join(printed).strip()


@pytest.mark.slow
def test_a_kernel_started_for_a_korean_lesson_speaks_korean_and_passes_it_on(tmp_path):
    folder = tmp_path / "lessons" / "ko"
    folder.mkdir(parents=True)
    _notebook(folder, "ko")
    # Jupyter gives the notebook's path relative to the server root; the kernel runs in
    # the notebook's folder
    assert _kernel_says(folder, "lessons/ko/01_lesson.ipynb") == "ko ko"


@pytest.mark.slow
def test_tfteach_lang_beats_the_notebook_and_an_english_lesson_falls_back_to_the_locale(tmp_path):
    _notebook(tmp_path, "ko")
    assert _kernel_says(tmp_path, "01_lesson.ipynb", TFTEACH_LANG="ru") == "ru ru"
    _notebook(tmp_path, None)
    assert _kernel_says(tmp_path, "01_lesson.ipynb", LANG="zh_CN.UTF-8") == "zh None"

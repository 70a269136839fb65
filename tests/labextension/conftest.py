"""Fixtures for the labextension tests; the helpers they use live in labharness.py.

  * ``registry_dir``: a fresh TFTEACH_REGISTRY_DIR (set in this process too);
    ``module_registry`` the same shared by a module (for a module-scoped server).
  * ``browser``: Debian's Chromium driven by Playwright, one per test module (Playwright's
    sync API allows one running instance per thread, and other test folders start their
    own), with the CJK font mplfonts ships added to its fonts (Korean and Chinese labels
    would be empty boxes otherwise); tests that use it skip when /usr/bin/chromium is
    missing.
  * ``lab_page_factory``: makes ``LabPage``s on a ``JupyterServer``, closed after the test.
"""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labharness import CHROMIUM, CHROMIUM_ARGS, JupyterServer, LabPage


@pytest.fixture
def registry_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh registry directory, also set as TFTEACH_REGISTRY_DIR in this process."""
    path = tmp_path / "registry"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("TFTEACH_REGISTRY_DIR", str(path))
    return path


@pytest.fixture(scope="module")
def module_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One registry dir for a module's server, also set as TFTEACH_REGISTRY_DIR here."""
    path = tmp_path_factory.mktemp("registry")
    old = os.environ.get("TFTEACH_REGISTRY_DIR")
    os.environ["TFTEACH_REGISTRY_DIR"] = str(path)
    yield path
    if old is None:
        del os.environ["TFTEACH_REGISTRY_DIR"]
    else:
        os.environ["TFTEACH_REGISTRY_DIR"] = old


def _fonts_env(folder: Path) -> dict[str, str]:
    """The environment for Chromium with fontconfig also reading mplfonts' Noto Sans CJK
    (Hangul, Chinese and Cyrillic), when mplfonts is installed."""
    spec = importlib.util.find_spec("mplfonts")
    if spec is None or not spec.origin:
        return dict(os.environ)
    fonts = Path(spec.origin).parent / "fonts"
    conf = folder / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        '  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n'
        f"  <dir>{fonts}</dir>\n  <cachedir>{folder / 'cache'}</cachedir>\n</fontconfig>\n")
    return {**os.environ, "FONTCONFIG_FILE": str(conf)}


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (skips when Chromium is not installed)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium to run browser tests")
    sync_api = pytest.importorskip("playwright.sync_api")
    env = _fonts_env(tmp_path_factory.mktemp("fontconfig"))
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                              env=env)
        yield chromium
        chromium.close()


@pytest.fixture
def lab_page_factory(browser: Any) -> Iterator[Any]:
    """Make LabPages on a server; they are closed after the test."""
    pages: list[LabPage] = []

    def make(server: JupyterServer, **kwargs: Any) -> LabPage:
        page = LabPage(browser, server, **kwargs)
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.close()

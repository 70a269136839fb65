"""Lesson 1 run live in a real JupyterLab in Chromium: the labextension draws the views and
the kernel's controls redraw them in place.

Reuses the labextension tests' harness (real ``jupyter lab`` subprocess, Playwright driving
Debian's Chromium); screenshots go to test-artifacts/.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "labextension"
sys.path.insert(0, str(HARNESS))
labharness = pytest.importorskip("labharness")

pytestmark = [pytest.mark.browser, pytest.mark.slow]
LESSON = Path(__file__).resolve().parents[2] / "lessons" / "01_device_placement.ipynb"
ALL_CODE_CELLS_RAN = """() => {
  const m = window.jupyterapp.shell.currentWidget.content.model;
  const cells = [...Array(m.cells.length).keys()].map(i => m.cells.get(i));
  return cells.filter(c => c.type === 'code').every(c => c.executionCount); }"""


def _forget_leaked_running_loop() -> None:
    """Earlier kernel tests (nbclient's sync wrappers) can leave this thread marked as running
    an asyncio loop; Playwright's sync API then refuses to start. No loop really runs here."""
    import asyncio
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    asyncio.events._set_running_loop(None)


@pytest.fixture(scope="module")
def browser():
    if not Path(labharness.CHROMIUM).exists():
        pytest.skip(f"{labharness.CHROMIUM} is missing: apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    _forget_leaked_running_loop()
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=labharness.CHROMIUM,
                                              args=labharness.CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def lesson_page(browser, tmp_path_factory):
    work = tmp_path_factory.mktemp("live-lab")
    root = work / "root"
    root.mkdir()
    shutil.copy(LESSON, root / "lesson.ipynb")
    with labharness.JupyterServer(work, app="lab", root_dir=root) as server:
        page = labharness.LabPage(browser, server, viewport=(1400, 1000))
        page.open("lesson.ipynb")
        page.wait_kernel_idle(120000)
        page.command("notebook:run-all-cells")
        page.page.wait_for_function(ALL_CODE_CELLS_RAN, timeout=180000)
        page.wait_kernel_idle(120000)
        yield page
        page.close()


def _towers_cell(page):
    cell = page.page.locator(".jp-CodeCell", has_text="total = tf.add_n(c)").first
    cell.scroll_into_view_if_needed()
    return cell


def test_lesson_views_are_drawn_by_the_extension_with_live_controls(lesson_page):
    page = lesson_page.page
    assert page.locator("text=Error displaying widget").count() == 0
    cell = _towers_cell(lesson_page)
    cell.locator(".tft-placement").first.wait_for(timeout=30000)
    assert cell.locator(".widget-toggle-buttons").count() == 2, "placement and timeline controls"
    from playwright.sync_api import expect        # waits: the windowed notebook may still be
    cell.scroll_into_view_if_needed()             # attaching the cell's outputs
    expect(cell).to_contain_text("AddN:0", timeout=30000)
    expect(cell).to_contain_text("[ 98. 128.]]", timeout=30000)
    lesson_page.screenshot("notebook-lesson1-towers-live", ".jp-CodeCell:has-text('tf.add_n(c)')")


def test_colour_controls_recolour_the_extension_views_in_place(lesson_page):
    """The kernel's controls redraw the extension's renderers (settings travel in the
    output metadata), never swapping them for the static Graphviz/SVG picture."""
    cell = _towers_cell(lesson_page)
    placement_controls, timeline_controls = cell.locator(".widget-toggle-buttons").all()
    placement_controls.locator(".widget-toggle-button", has_text="op type").click()
    cell.locator(".tft-placement[data-color-by='type']").wait_for(timeout=30000)
    assert cell.locator(".jp-RenderedSVG").count() == 0
    key = cell.locator(".tft-placement .tft-color-item").all_inner_texts()
    assert key == ["AddN", "Const", "MatMul"]

    timeline_controls.locator(".widget-toggle-button", has_text="device").click()
    cell.locator(".tft-timeline[data-color-by='device']").wait_for(timeout=30000)
    fills = cell.locator(".tft-timeline .tft-op").evaluate_all(
        "els => els.map(e => e.getAttribute('data-name') + '=' + e.style.fill)")
    colour = dict(f.split("=", 1) for f in fills)
    assert colour["MatMul"] == colour["Const"] != colour["MatMul_1"], "one colour per lane"
    legend = cell.locator(".tft-timeline .tft-legend-item").all_inner_texts()
    assert legend[:3] == ["CPU:0", "GPU:0", "GPU:1"]
    assert cell.locator(".jp-RenderedSVG").count() == 0
    lesson_page.screenshot("notebook-lesson1-towers-by-op-type",
                           ".jp-CodeCell:has-text('tf.add_n(c)')")
    placement_controls.locator(".widget-toggle-button", has_text="device").click()
    timeline_controls.locator(".widget-toggle-button", has_text="op type").click()
    cell.locator(".tft-placement[data-color-by='device']").wait_for(timeout=30000)
    cell.locator(".tft-timeline[data-color-by='type']").wait_for(timeout=30000)

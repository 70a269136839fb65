"""The README's screenshots, taken in a real JupyterLab through Debian's Chromium.

Lesson 1 (lessons/01_device_placement.ipynb, copied into the server's root) has its outputs
cleared and runs, in an English kernel, only the cells the pictures need: the two-towers
placement graph, the traced step's device timeline, the ``/device:GPU:2``
InvalidArgumentError box with its Hint and exercise 1.1's "Not yet" feedback. The tfteach
clusters sidebar shows a LocalCluster started by this process, whose worker 1 is killed
with the sidebar's Kill button, and a task whose process runs but never answers
(starting). One page takes every picture in the light theme, then in the dark one.

Each picture is cropped to its element and checked: the element is visible, shows what its
name says, and the PNG's typical pixel is light in the light theme and dark in the dark
one. The PNGs go to test-artifacts/ always, and to docs/images/ only with
``TFTEACH_UPDATE_DOC_IMAGES=1`` (so a CI run never rewrites tracked files).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labharness import ARTIFACTS, REPO, JupyterServer, LabPage, fake_entry, write_entry

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LESSON = REPO / "lessons" / "01_device_placement.ipynb"
DOC_IMAGES = REPO / "docs" / "images"
MAX_BYTES = 150_000
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}

# The lesson's cells, each found by a piece of its source that no earlier cell has.
LOAD = "%load_ext tfteach"
TOWERS = "total = tf.add_n(c)"
TRACE = "%%placement --trace"
GPU2 = "%%placement\nwith tf.device('/device:GPU:2')"
EXERCISE = "name='w1')\nproduct_0 = tf.matmul"
CHECK = "check_placement(_placement, exercise='1.1')"


@pytest.fixture(scope="module")
def lab(tmp_path_factory, module_registry) -> Iterator[JupyterServer]:
    work = tmp_path_factory.mktemp("lab-screenshots")
    root = work / "root"
    (root / "lessons").mkdir(parents=True)
    shutil.copy(LESSON, root / "lessons" / LESSON.name)
    env = {"TFTEACH_REGISTRY_DIR": str(module_registry), "TFTEACH_LANG": "en"}
    with JupyterServer(work, app="lab", root_dir=root, env=env) as server:
        server.set_lab_setting("@jupyterlab/translation-extension:plugin", {"locale": "en"})
        yield server


@pytest.fixture(scope="module")
def lesson(browser, lab) -> Iterator[LabPage]:
    """Lesson 1 open with its outputs cleared, then the pictured cells run once; the left
    area is collapsed, so every picture of an output has the notebook's full width."""
    page = LabPage(browser, lab, viewport=(1180, 1100))
    try:
        page.open(f"lessons/{LESSON.name}")
        page.page.evaluate("() => window.jupyterapp.shell.collapseLeft()")  # same width always
        page.wait_kernel_idle(120000)
        page.command("notebook:clear-all-cell-outputs")
        for source in (LOAD, TOWERS, TRACE, GPU2, EXERCISE, CHECK):
            page.run_cell(source, timeout_ms=180000)
        yield page
    finally:
        page.close()


@pytest.fixture(scope="module", params=list(THEMES))
def theme(request, lesson) -> str:
    """The lesson's page switched to the light, then the dark JupyterLab theme."""
    light = "true" if request.param == "light" else "false"
    lesson.command("apputils:change-theme", {"theme": THEMES[request.param]})
    lesson.page.wait_for_function(
        f"() => document.body.dataset.jpThemeLight === '{light}'", timeout=30000)
    lesson.page.wait_for_timeout(500)       # let the theme's CSS settle
    return request.param


def output(page: LabPage, source: str, selector: str) -> Any:
    """A locator of the element ``selector`` in the output of the cell with ``source``."""
    page.page.mouse.move(0, 0)              # no hover tooltip in the picture
    found = page.cell(page.cell_index(source)).locator(selector).first
    found.wait_for(state="visible", timeout=30000)
    found.scroll_into_view_if_needed()
    return found


def median_luma(path: Path) -> float:
    """The median brightness (0 black .. 1 white) of a PNG's pixels."""
    from PIL import Image

    with Image.open(path) as image:
        counts = image.convert("L").histogram()
    seen, half = 0, sum(counts) / 2
    for value, count in enumerate(counts):
        seen += count
        if seen >= half:
            return value / 255
    return 1.0


def keep(name: str, theme: str, take: Any) -> Path:
    """Take a picture with ``take(path)`` into test-artifacts/, check its size and that its
    typical pixel suits ``theme``, and copy it into docs/images/ when asked to."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}-{theme}.png"
    take(path)
    size = path.stat().st_size
    assert 0 < size < MAX_BYTES, f"{path.name} is {size} bytes"
    luma = median_luma(path)
    if theme == "light":
        assert luma > 0.7, f"{path.name} is not light: median brightness {luma:.2f}"
    else:
        assert luma < 0.3, f"{path.name} is not dark: median brightness {luma:.2f}"
    if os.environ.get("TFTEACH_UPDATE_DOC_IMAGES") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOC_IMAGES / path.name)
    return path


def keep_element(name: str, theme: str, element: Any) -> Path:
    box = element.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 30, f"{name} is drawn: {box}"
    return keep(name, theme, lambda path: element.screenshot(path=str(path)))


# ------------------------------------------------------------------------- lesson 1


def test_lesson1_graph_shows_the_towers_on_gpu0_and_gpu1(lesson, theme):
    graph = output(lesson, TOWERS, ".tft-placement")
    where = graph.locator(".tft-node").evaluate_all(
        "els => Object.fromEntries(els.map(e => [e.dataset.name, e.dataset.device]))")
    assert where["MatMul"] == GPU0 and where["MatMul_1"] == GPU1
    assert graph.locator(".tft-edge.tft-transfer").count() == 2
    keep_element("lesson1-graph", theme, graph)


def test_lesson1_timeline_has_a_lane_per_device_and_transfer_arrows(lesson, theme):
    timeline = output(lesson, TRACE, ".tft-timeline")
    lanes = timeline.locator(".tft-lane-label").evaluate_all(
        "els => els.map(e => e.childNodes[0].textContent)")
    assert lanes == ["CPU:0", "GPU:0", "GPU:1"]
    assert timeline.locator(".tft-op").count() >= 3
    assert timeline.locator(".tft-transfer-arrow").count() >= 2
    keep_element("lesson1-timeline", theme, timeline)


def test_lesson1_error_box_names_gpu2_and_gives_a_hint(lesson, theme):
    box = output(lesson, GPU2, ".tfteach-error")
    text = box.inner_text()
    assert text.startswith("InvalidArgumentError")
    assert "/device:GPU:2" in text and "Hint:" in text
    keep_element("lesson1-error-box", theme, box)


def test_lesson1_exercise_feedback_says_not_yet_with_a_hint(lesson, theme):
    box = output(lesson, CHECK, ".tfteach-check")
    text = box.inner_text()
    assert text.startswith("Not yet:") and "Hint:" in text
    keep_element("lesson1-feedback", theme, box)


# -------------------------------------------------------------------------- sidebar


def _state_of(panel: Any, cluster_id: str, task: str) -> str:
    return panel.locator(f".tft-cluster[data-cluster-id='{cluster_id}'] "
                         f".tft-task[data-task='{task}']").get_attribute("class")


@pytest.fixture(scope="module")
def clusters(lesson, module_registry) -> Iterator[tuple[str, str]]:
    """A LocalCluster of this process whose worker 1 the sidebar's Kill button killed, and
    a registry entry whose one task runs but never answers: (their ids)."""
    from tfteach.distributed.local.local_cluster import LocalCluster

    sleeper = subprocess.Popen(["sleep", "600"], start_new_session=True)
    cluster = LocalCluster(ps=1, workers=2)
    try:
        waiting = fake_entry(tasks=1)
        waiting["tasks"][0].update(pid=sleeper.pid, argv=["sleep", "600"])
        write_entry(waiting)
        panel = open_sidebar(lesson)
        ours = panel.locator(f".tft-cluster[data-cluster-id='{cluster.id}']")
        ours.locator(".tft-task.tft-state-alive").nth(2).wait_for(timeout=30000)
        ours.locator(".tft-task[data-task='/job:worker/task:1'] .tft-kill").click()
        ours.locator(".tft-task.tft-state-stopped[data-task='/job:worker/task:1']").wait_for(
            timeout=30000)
        close_sidebar(lesson)
        yield cluster.id, waiting["id"]
    finally:
        cluster.close()
        sleeper.kill()
        sleeper.wait()
        for leftover in module_registry.glob("*.json"):
            leftover.unlink()


def open_sidebar(page: LabPage) -> Any:
    page.page.click(".jp-SideBar .lm-TabBar-tab[data-id='tfteach-clusters']")
    panel = page.page.locator("#tfteach-clusters")
    panel.wait_for(state="visible")
    return panel


def close_sidebar(page: LabPage) -> None:
    page.page.click(".jp-SideBar .lm-TabBar-tab[data-id='tfteach-clusters']")
    page.page.locator("#tfteach-clusters").wait_for(state="hidden")


def test_sidebar_shows_a_starting_task_and_a_killed_one(lesson, theme, clusters):
    cluster_id, waiting_id = clusters
    panel = open_sidebar(lesson)
    try:
        panel.locator(f".tft-cluster[data-cluster-id='{waiting_id}'] "
                      ".tft-task.tft-state-starting").wait_for(timeout=30000)
        assert "tft-state-stopped" in _state_of(panel, cluster_id, "/job:worker/task:1")
        assert "tft-state-alive" in _state_of(panel, cluster_id, "/job:worker/task:0")
        lesson.page.mouse.move(0, 0)
        top = panel.bounding_box()
        last = panel.locator(".tft-cluster").last.bounding_box()
        clip = {"x": top["x"], "y": top["y"], "width": top["width"],
                "height": last["y"] + last["height"] + 8 - top["y"]}
        assert clip["width"] > 100 and clip["height"] > 100, clip
        keep("sidebar-starting-and-killed", theme,
             lambda path: lesson.page.screenshot(path=str(path), clip=clip))
    finally:
        close_sidebar(lesson)

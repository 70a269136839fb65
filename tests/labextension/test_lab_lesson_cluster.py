"""The cluster lesson's end-to-end proof in a real JupyterLab driven through Debian's Chromium.

* The pilot lesson (lessons/01_device_placement.ipynb, copied into the server's root) runs
  its two-towers ``%%placement`` cell in a kernel that imports this checkout's tfteach; the
  extension's interactive renderer draws the nodes on GPU:0 and GPU:1 and hovering one shows
  its requested and assigned devices. Flipping the kernel's "Colour by" and "show transfers"
  controls recolours the interactive graph and hides its transfers (no static SVG swap).
* A notebook cell starts a LocalCluster (``%tfteach cluster start``); the tfteach sidebar lists
  it under the notebook's name with its tasks alive; its Kill button kills worker 1, which
  turns stopped there, and the notebook
  sees it gone: ``%tfteach cluster status`` shows it stopped and a session step on it raises
  UnavailableError naming the task. The cluster is stopped at the end and its processes are
  checked gone.

Screenshots go to test-artifacts/.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from labharness import REPO, JupyterServer, LabPage, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LESSON = REPO / "lessons" / "01_device_placement.ipynb"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
TOWERS = "total = tf.add_n(c)"
NODE_FILLS = """els => Object.fromEntries(els.map(
    e => [e.dataset.name, e.querySelector('rect').style.fill]))"""

CLUSTER_CELLS = (
    "%load_ext tfteach\nimport tfteach as tf",
    "%tfteach cluster start --ps 1 --workers 2",
    "with tf.device('/job:worker/task:1'):\n    x = tf.add(tf.constant(1.0), 1.0, name='x')\n"
    "sess = tf.Session(cluster.target('worker', 0))\nprint('before the kill:', sess.run(x))",
    "%tfteach cluster status",
    "try:\n    sess.run(x)\nexcept tf.errors.UnavailableError as error:\n"
    "    print('UnavailableError:', error)",
    "%tfteach cluster stop",
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory, module_registry):
    work = tmp_path_factory.mktemp("lab-e2e")
    root = work / "root"
    (root / "lessons").mkdir(parents=True)
    shutil.copy(LESSON, root / "lessons" / LESSON.name)
    write_notebook(root / "cluster.ipynb", *CLUSTER_CELLS)
    with JupyterServer(work, app="lab", root_dir=root,
                       env={"TFTEACH_REGISTRY_DIR": str(module_registry)}) as server:
        yield server


@pytest.fixture(scope="module")
def towers(browser, lab):
    """The pilot lesson open with its outputs cleared, then only ``%load_ext`` and the
    two-towers cell run again: (page, locator of the towers cell)."""
    page = LabPage(browser, lab, viewport=(1400, 1300))
    page.open(f"lessons/{LESSON.name}")
    page.wait_kernel_idle(120000)
    page.command("notebook:clear-all-cell-outputs")
    assert page.page.locator(".jp-NotebookPanel .tft-placement").count() == 0
    page.run_cell("%load_ext tfteach")
    cell = page.run_cell(TOWERS, timeout_ms=180000)
    cell.locator(".tft-placement .tft-node").first.wait_for(timeout=30000)
    yield page, cell
    page.close()


# ------------------------------------------------------------------------- the lesson


def test_lesson_towers_cell_is_drawn_by_the_extension_on_both_gpus(towers):
    page, cell = towers
    graph = cell.locator(".tft-placement").first
    assert cell.locator(".jp-OutputArea-output .jp-RenderedSVG").count() == 0, \
        "the interactive renderer, not the static SVG"
    where = graph.locator(".tft-node").evaluate_all(
        "els => Object.fromEntries(els.map(e => [e.dataset.name, e.dataset.device]))")
    assert where["MatMul"] == GPU0 and where["MatMul_1"] == GPU1
    assert sorted(set(where.values())) == sorted(
        {GPU0, GPU1, "/job:localhost/replica:0/task:0/device:CPU:0"})
    assert sum(d == GPU1 for d in where.values()) == 3
    assert graph.get_attribute("data-color-by") == "device"
    assert "placement graph: 7 ops on 3 devices" in graph.locator("svg.tft-svg").get_attribute(
        "aria-label")
    assert "AddN:0" in cell.inner_text(), "the --run values are shown too"
    page.screenshot("e2e-lesson1-towers", ".jp-Cell.jp-mod-active")


def test_hovering_a_lesson_node_shows_requested_and_assigned_devices(towers):
    page, cell = towers
    cell.locator(".tft-placement .tft-node[data-name='MatMul_1']").hover()
    tip = cell.locator(".tft-placement .tft-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "MatMul_1" in text and "MatMul" in text
    assert "requested: /device:GPU:1" in text
    assert f"assigned: {GPU1}" in text
    page.screenshot("e2e-lesson1-hover", ".jp-Cell.jp-mod-active .tft-placement")
    page.page.mouse.move(0, 0)


def test_colour_and_transfer_controls_drive_the_interactive_renderer(towers):
    page, cell = towers
    graph = cell.locator(".tft-placement").first
    controls = cell.locator(".widget-toggle-buttons").first
    by_device = graph.locator(".tft-node").evaluate_all(NODE_FILLS)
    assert by_device["MatMul"] != by_device["MatMul_1"], "two GPUs, two colours"
    assert graph.locator(".tft-edge.tft-transfer").count() == 2

    controls.locator(".widget-toggle-button", has_text="op type").click()
    cell.locator(".tft-placement[data-color-by='type']").wait_for(timeout=30000)
    graph = cell.locator(".tft-placement").first
    by_type = graph.locator(".tft-node").evaluate_all(NODE_FILLS)
    assert by_type["MatMul"] == by_type["MatMul_1"], "same op type, same colour"
    assert by_type["Const"] == by_type["Const_2"] != by_type["MatMul"] != by_type["AddN"]
    assert by_type != by_device
    assert graph.locator(".tft-color-item").all_inner_texts() == ["AddN", "Const", "MatMul"]
    assert cell.locator(".jp-OutputArea-output .jp-RenderedSVG").count() == 0

    cell.locator(".widget-checkbox", has_text="show transfers").first.locator("input").uncheck()
    cell.locator(".tft-placement[data-show-transfers='false']").wait_for(timeout=30000)
    graph = cell.locator(".tft-placement").first
    assert graph.locator(".tft-edge.tft-transfer").count() == 0
    assert graph.locator(".tft-edge").count() == 4, "the same-device edges stay"
    page.screenshot("e2e-lesson1-by-op-type-no-transfers", ".jp-Cell.jp-mod-active")

    cell.locator(".widget-checkbox", has_text="show transfers").first.locator("input").check()
    controls.locator(".widget-toggle-button", has_text="device").click()
    cell.locator(".tft-placement[data-color-by='device'][data-show-transfers='true']").wait_for(
        timeout=30000)
    graph = cell.locator(".tft-placement").first
    assert graph.locator(".tft-node").evaluate_all(NODE_FILLS) == by_device
    assert graph.locator(".tft-edge.tft-transfer").count() == 2


# ------------------------------------------------------------------------ the cluster


def _entries(registry: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in registry.glob("*.json")]


def _gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting for its parent counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


def _status_rows(cell) -> dict[str, list[str]]:
    """task -> the other cells of the status table in a cell's output."""
    rows = cell.locator("table.tfteach-cluster tbody tr").evaluate_all(
        "trs => trs.map(tr => [...tr.cells].map(td => td.textContent.trim()))")
    return {r[0]: r[1:] for r in rows}


def _stop_leftovers(registry: Path) -> None:
    from tfteach.distributed.local import task_registry as reg

    for entry in _entries(registry):
        try:
            reg.stop_cluster(entry["id"])
        except Exception:  # noqa: BLE001 - best effort cleanup after a failure
            pass


@pytest.mark.cluster
def test_sidebar_lists_kills_and_the_notebook_sees_the_task_gone(browser, lab, module_registry):
    page = LabPage(browser, lab, viewport=(1400, 1000))
    try:
        _cluster_round_trip(page, module_registry)
    finally:
        page.close()
        _stop_leftovers(module_registry)


def _cluster_round_trip(page: LabPage, registry: Path) -> None:
    page.open("cluster.ipynb")
    page.wait_kernel_idle(120000)
    page.run_cell("%load_ext tfteach")
    started = page.run_cell("cluster start", timeout_ms=180000)
    assert sorted(_status_rows(started)) == ["ps:0", "worker:0", "worker:1"]
    [entry] = _entries(registry)
    pids = {f"{t['job']}:{t['task']}": t["pid"] for t in entry["tasks"]}

    page.page.click(".jp-SideBar .lm-TabBar-tab[data-id='tfteach-clusters']")
    panel = page.page.locator("#tfteach-clusters")
    ours = panel.locator(f".tft-cluster[data-cluster-id='{entry['id']}']")
    ours.locator(".tft-task.tft-state-alive").nth(2).wait_for(timeout=30000)
    assert ours.locator(".tft-cluster-name").inner_text() == "cluster.ipynb"
    assert "started by cluster.ipynb" in ours.locator(".tft-cluster-owner").inner_text()
    assert ours.locator(".tft-task").evaluate_all(
        "rows => rows.map(r => r.dataset.task + ' ' + r.querySelector('.tft-task-state')"
        ".textContent)") == ["/job:ps/task:0 alive", "/job:worker/task:0 alive",
                             "/job:worker/task:1 alive"]
    page.screenshot("e2e-sidebar-cluster-alive")

    before = page.run_cell("print('before the kill:'")
    assert "before the kill: 2.0" in before.inner_text()

    worker1 = ours.locator(".tft-task[data-task='/job:worker/task:1']")
    worker1.locator(".tft-kill").click()
    panel.locator(f".tft-cluster[data-cluster-id='{entry['id']}'] "
                  ".tft-task.tft-state-stopped[data-task='/job:worker/task:1']").wait_for(
        timeout=30000)
    assert ours.locator(".tft-task.tft-state-alive").count() == 2
    _wait(lambda: _gone(pids["worker:1"]), "worker 1's process to exit")
    assert not _gone(pids["worker:0"]) and not _gone(pids["ps:0"])
    page.screenshot("e2e-sidebar-worker1-killed")
    live = page.cell(page.cell_index("cluster start"))
    _wait(lambda: _status_rows(live)["worker:1"][2] == "stopped",
          "the live status table of the start cell to show worker:1 stopped")
    assert _status_rows(live)["worker:0"][2] == "alive"

    status = _status_rows(page.run_cell("%tfteach cluster status"))
    assert status["worker:1"][2] == "stopped"
    assert status["worker:0"][2] == "alive" and status["ps:0"][2] == "alive"
    failed = page.run_cell("except tf.errors.UnavailableError").inner_text()
    assert "UnavailableError: Task /job:worker/replica:0/task:1" in failed
    assert "is unavailable" in failed and "Hint:" in failed
    page.screenshot("e2e-notebook-sees-worker1-gone")

    page.run_cell("%tfteach cluster stop")
    ours.wait_for(state="detached", timeout=30000)
    _wait(lambda: all(_gone(pid) for pid in pids.values()), "every task process to exit")
    assert _entries(registry) == []


def _wait(condition, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what} after {timeout} s")
        time.sleep(0.2)

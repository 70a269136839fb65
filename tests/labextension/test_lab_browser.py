"""The extension in a real JupyterLab driven through Debian's Chromium.

A notebook displays tfteach's placement and timeline MIME bundles; the tests run it, then
hover, click, filter and zoom like a learner, and look at the cluster sidebar with a
registry entry written through the real registry module. Screenshots go to
test-artifacts/.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from labharness import JupyterServer, LabPage, fake_entry, write_entry, write_notebook

pytestmark = pytest.mark.browser

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
GPU2 = "/job:localhost/replica:0/task:0/device:GPU:2"
VIRTUAL = "virtual GPU backed by the CPU"


def node(name: str, op: str, requested: str, assigned: str) -> dict:
    return {"name": name, "type": op, "requested_device": requested, "assigned_device": assigned}


def edge(src: str, dst: str, cross: bool, size: int | None) -> dict:
    return {"src": src, "dst": dst, "cross_device": cross, "bytes": size}


PLACEMENT = {
    "nodes": [node("a", "Const", "/device:GPU:0", GPU0), node("b", "Const", "/device:GPU:0", GPU0),
              node("matmul", "MatMul", "/device:GPU:1", GPU1),
              node("bias", "Const", "", CPU0), node("add", "AddV2", "/device:GPU:1", GPU1)],
    "edges": [edge("a", "matmul", True, 64), edge("b", "matmul", True, 64),
              edge("matmul", "add", False, 16), edge("bias", "add", True, 16)],
    "devices": [{"name": CPU0, "device_type": "CPU", "description": "numpy on the host"},
                {"name": GPU0, "device_type": "GPU", "description": VIRTUAL},
                {"name": GPU1, "device_type": "GPU", "description": VIRTUAL},
                {"name": GPU2, "device_type": "GPU", "description": VIRTUAL}],
}

TIMELINE = {
    "devices": [{"name": CPU0, "short": "CPU:0"}, {"name": GPU0, "short": "GPU:0"},
                {"name": GPU1, "short": "GPU:1"}],
    "ops": [{"name": "bias", "op": "Const", "device": CPU0, "start_us": 0, "end_us": 8, "bytes": 16},
            {"name": "a", "op": "Const", "device": GPU0, "start_us": 2, "end_us": 10, "bytes": 64},
            {"name": "b", "op": "Const", "device": GPU0, "start_us": 10, "end_us": 18, "bytes": 64},
            {"name": "matmul", "op": "MatMul", "device": GPU1, "start_us": 40, "end_us": 100,
             "bytes": 16},
            {"name": "add", "op": "AddV2", "device": GPU1, "start_us": 104, "end_us": 112,
             "bytes": 16}],
    "transfers": [{"src_device": GPU0, "dst_device": GPU1, "tensor": "b:0", "start_us": 18,
                   "end_us": 38, "bytes": 64, "src_op": "b", "consumers": ["matmul"]},
                  {"src_device": CPU0, "dst_device": GPU1, "tensor": "bias:0", "start_us": 6,
                   "end_us": 30, "bytes": 16, "src_op": "bias", "consumers": ["add"]}],
    "step_us": 120,
}


FEEDBACK_CELL = (
    "import tfteach as tf\nfrom IPython.display import display\n"
    "from tfteach.lessons import check\nfrom tfteach.notebook.displays import ErrorBox\n"
    "display(ErrorBox(tf.errors.InvalidArgumentError('Cannot assign a device for operation x',"
    " hint='put it on a device this session has, e.g. `tf.device(\"/cpu:0\")`'),"
    " 'building the graph'))\n"
    "display(check(2, 2, what='the number of GPUs'))\n"
    "display(check(3, 2, what='the number of GPUs', hint='count the `GPU` rows'))")


# The same step measured here and modelled on a profile: two timelines, one marked.
MODELLED_PROFILE = "8x V100 NVLink"
MODELLED_CELL = (
    f'%%placement --trace --model "{MODELLED_PROFILE}"\nimport tfteach as tf\n'
    "with tf.device('/gpu:1'):\n"
    "    b = tf.matmul(tf.ones([64, 64]), tf.ones([64, 64]), name='product')\nb")


def display_cell(mime: str, data: dict, text: str) -> str:
    return ("import json\nfrom IPython.display import display\n"
            f"display({{{mime!r}: json.loads({json.dumps(data)!r}), 'text/plain': {text!r}}}, "
            "raw=True)")


@pytest.fixture(scope="module")
def lab(tmp_path_factory, module_registry):
    work = tmp_path_factory.mktemp("lab")
    root = work / "root"
    write_notebook(root / "views.ipynb",
                   display_cell("application/vnd.tfteach.placement+json", PLACEMENT,
                                "placement of 5 nodes"),
                   display_cell("application/vnd.tfteach.timeline+json", TIMELINE,
                                "timeline of 5 ops"),
                   FEEDBACK_CELL)
    write_notebook(root / "modelled.ipynb", "%load_ext tfteach", MODELLED_CELL)
    write_notebook(root / "lessons" / "01_device_placement.ipynb", "print('lesson one')")
    with JupyterServer(work, app="lab", root_dir=root,
                       env={"TFTEACH_REGISTRY_DIR": str(module_registry)}) as server:
        yield server


@pytest.fixture(scope="module")
def views(browser, lab):
    """The views notebook open and run once for the module's tests."""
    page = LabPage(browser, lab)
    page.open("views.ipynb")
    page.run_all_cells()
    page.page.wait_for_selector(".tft-placement .tft-node")
    page.page.wait_for_selector(".tft-timeline .tft-op")
    yield page
    page.close()


def svg_texts(locator) -> list[str]:
    """The text of SVG elements (Playwright's inner_text is for HTML only)."""
    return locator.evaluate_all("els => els.map(e => e.textContent)")


def tooltip_text(views: LabPage, view: str) -> str:
    tip = views.page.locator(f"{view} .tft-tooltip")
    tip.wait_for(state="visible")
    return tip.inner_text()


# ------------------------------------------------------------------ placement graph


def test_placement_draws_every_node_in_its_device_group(views):
    page = views.page
    names = page.locator(".tft-placement .tft-node").evaluate_all(
        "els => els.map(e => e.dataset.name + '@' + e.dataset.device)")
    assert sorted(names) == sorted(f"{n['name']}@{n['assigned_device']}"
                                   for n in PLACEMENT["nodes"])
    labels = svg_texts(page.locator(".tft-placement .tft-group-label"))
    assert sorted(labels) == ["/job:localhost", "CPU:0", "GPU:0", "GPU:1", "task:0"]
    legend = page.locator(".tft-placement .tft-legend-item").all_inner_texts()
    assert legend == ["CPU:0 (1)", "GPU:0 (2)", "GPU:1 (2)", "all 4 devices"]
    status = page.locator(".tft-placement .tft-status").inner_text()
    assert status.startswith("5 nodes on 3 devices, 3 cross-device edges")
    views.screenshot("placement-graph", ".tft-placement")


def test_hovering_a_node_shows_requested_and_assigned_device(views):
    views.page.hover(".tft-placement .tft-node[data-name='matmul']")
    text = tooltip_text(views, ".tft-placement")
    assert "MatMul" in text
    assert "requested: /device:GPU:1" in text
    assert f"assigned: {GPU1}" in text
    assert "output: 16 B" in text
    views.screenshot("placement-hover", ".tft-placement")
    views.page.mouse.move(0, 0)


def test_clicking_a_node_lights_up_its_inputs_outputs_and_transfers(views):
    page = views.page
    page.click(".tft-placement .tft-node[data-name='matmul']")
    lit = page.locator(".tft-placement .tft-node").evaluate_all(
        "els => els.map(e => e.dataset.name + ':' + [...e.classList].filter("
        "c => ['tft-selected', 'tft-input', 'tft-output'].includes(c)).join(','))")
    assert sorted(lit) == ["a:tft-input", "add:tft-output", "b:tft-input", "bias:",
                           "matmul:tft-selected"]
    assert page.locator(".tft-placement .tft-edge.tft-transfer-active").count() == 2
    status = page.locator(".tft-placement .tft-status").inner_text()
    assert "Inputs: a, b" in status and "Transfers: 2 (128 B)" in status
    views.screenshot("placement-selected", ".tft-placement")
    page.click(".tft-placement .tft-canvas", position={"x": 5, "y": 5})
    assert page.locator(".tft-placement .tft-selected").count() == 0


def test_unticking_a_device_hides_its_nodes(views):
    page = views.page
    toggle = page.locator(f".tft-placement input.tft-device-toggle[data-device='{GPU0}']")
    toggle.uncheck()
    shown = page.locator(".tft-placement .tft-node").evaluate_all(
        "els => els.map(e => e.dataset.name)")
    assert sorted(shown) == ["add", "bias", "matmul"]
    views.screenshot("placement-gpu0-hidden", ".tft-placement")
    toggle.check()
    assert page.locator(".tft-placement .tft-node").count() == 5


def test_wheel_zooms_the_graph_and_reset_fits_it_again(views):
    page = views.page
    svg = page.locator(".tft-placement svg.tft-svg")
    fitted = svg.get_attribute("viewBox")
    box = svg.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -400)
    page.wait_for_function(
        "v => document.querySelector('.tft-placement svg.tft-svg').getAttribute('viewBox') != v",
        arg=fitted)
    zoomed = [float(v) for v in svg.get_attribute("viewBox").split()]
    assert zoomed[2] < float(fitted.split()[2])
    page.click(".tft-placement .tft-reset")
    assert svg.get_attribute("viewBox") == fitted


# ------------------------------------------------------------------------- timeline


def test_timeline_draws_a_lane_per_device_with_ops_and_transfers(views):
    page = views.page
    lanes = page.locator(".tft-timeline .tft-lane-label").evaluate_all(
        "els => els.map(e => e.childNodes[0].textContent)")
    assert lanes == ["CPU:0", "GPU:0", "GPU:1"]
    assert page.locator(".tft-timeline .tft-op").count() == len(TIMELINE["ops"])
    assert page.locator(".tft-timeline .tft-transfer-arrow").count() == 4
    assert page.locator(".tft-timeline .tft-transfer-slice").count() == 2
    views.screenshot("timeline", ".tft-timeline")


def test_hovering_an_op_shows_its_type_duration_and_bytes(views):
    views.page.hover(".tft-timeline .tft-op[data-name='matmul']")
    text = tooltip_text(views, ".tft-timeline")
    assert "op: MatMul" in text
    assert "duration: 60 µs" in text
    assert "bytes: 16 B" in text
    tip = views.page.locator(".tft-timeline .tft-tooltip").bounding_box()
    bar = views.page.locator(".tft-timeline .tft-op[data-name='matmul']").bounding_box()
    assert tip["y"] >= bar["y"] + bar["height"] or tip["y"] + tip["height"] <= bar["y"], \
        "the tooltip leaves the hovered bar (and the pointer on it) visible"
    views.screenshot("timeline-hover", ".tft-timeline")
    views.page.mouse.move(0, 0)


def test_dragging_zooms_the_timeline_and_reset_shows_the_whole_step(views):
    page = views.page
    reset = page.locator(".tft-timeline .tft-reset")
    full = page.locator(".tft-timeline .tft-range").inner_text()
    assert reset.is_disabled()
    box = page.locator(".tft-timeline svg.tft-svg").bounding_box()
    y = box["y"] + 50
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=5)
    page.mouse.up()
    zoomed = page.locator(".tft-timeline .tft-range").inner_text()
    assert zoomed != full and reset.is_enabled()
    ticks = svg_texts(page.locator(".tft-timeline .tft-tick-label"))
    views.screenshot("timeline-zoomed", ".tft-timeline")
    assert len(ticks) >= 2
    reset.click()
    assert page.locator(".tft-timeline .tft-range").inner_text() == full


def test_timeline_arrows_leave_the_producers_bar_and_enter_the_consumers(views):
    svg = views.page.locator(".tft-timeline svg.tft-svg")
    bars = svg.locator(".tft-op").evaluate_all(
        "els => Object.fromEntries(els.map(e => [e.dataset.name, ['x', 'y', 'width', 'height']"
        ".map(a => Number(e.getAttribute(a)))]))")
    arrows = svg.locator(".tft-transfer-arrow").evaluate_all(
        "els => els.map(g => { const l = g.querySelector('.tft-transfer-line');"
        " return [g.dataset.kind, Number(g.dataset.transfer), g.dataset.consumer,"
        " ...['x1', 'y1', 'x2', 'y2'].map(a => Number(l.getAttribute(a)))]; })")
    assert sorted(a[0] for a in arrows) == ["deliver", "deliver", "send", "send"]
    for kind, index, consumer, x1, y1, x2, y2 in arrows:
        transfer = TIMELINE["transfers"][index]
        assert x2 >= x1, "no arrow points back in time"
        if kind == "send":
            x, y, w, h = bars[transfer["src_op"]]
            assert x1 == pytest.approx(x + w, abs=0.01) and y < y1 < y + h
        else:
            x, y, w, h = bars[consumer]
            assert x - 0.01 <= x2 <= x + w + 0.01 and y2 == pytest.approx(y, abs=0.01)


def test_a_modelled_timeline_is_marked_and_the_measured_one_is_not(lab, lab_page_factory):
    view = lab_page_factory(lab)
    view.open("modelled.ipynb")
    view.run_all_cells()
    page = view.page
    page.wait_for_selector(".tft-timeline.tft-modelled .tft-op")
    timelines = page.locator(".tft-timeline")
    assert timelines.count() == 2
    modelled = page.locator(".tft-timeline.tft-modelled")
    measured = page.locator(".tft-timeline:not(.tft-modelled)")
    assert modelled.count() == 1 and measured.count() == 1
    assert modelled.get_attribute("data-modelled-on") == MODELLED_PROFILE
    mark = modelled.locator(".tft-modelled-mark")
    assert mark.is_visible() and mark.inner_text() == "modelled"
    caption = f"Modelled time on {MODELLED_PROFILE}: a model of that machine, not measured here."
    assert mark.get_attribute("title") == caption
    assert modelled.locator(".tft-status").inner_text().startswith(caption)
    assert modelled.locator("svg.tft-svg").get_attribute("aria-label").startswith(caption)
    assert modelled.locator(".tft-op[data-name='product']").count() == 1
    outline = "el => getComputedStyle(el).outlineStyle"
    assert modelled.locator(".tft-canvas").evaluate(outline) == "dashed"
    assert not measured.locator(".tft-modelled-mark").is_visible()
    assert measured.locator(".tft-canvas").evaluate(outline) != "dashed"
    assert "Modelled" not in measured.locator(".tft-status").inner_text()
    view.screenshot("timeline-modelled", ".tft-timeline.tft-modelled")


def test_the_all_devices_toggle_lists_the_unused_device(views):
    page = views.page
    toggle = page.locator(".tft-placement .tft-all-toggle")
    toggle.check()
    legend = page.locator(".tft-placement .tft-legend-item").all_inner_texts()
    assert legend == ["CPU:0 (1)", "GPU:0 (2)", "GPU:1 (2)", "GPU:2 (0)", "all 4 devices"]
    page.locator(".tft-placement .tft-all-toggle").uncheck()


def test_keyboard_zooms_and_resets_the_graph(views):
    page = views.page
    svg = page.locator(".tft-placement svg.tft-svg")
    fitted = svg.get_attribute("viewBox")
    svg.focus()
    page.keyboard.press("+")
    assert float(svg.get_attribute("viewBox").split()[2]) < float(fitted.split()[2])
    page.keyboard.press("ArrowRight")
    page.keyboard.press("0")
    assert svg.get_attribute("viewBox") == fitted
    page.locator(".tft-placement .tft-node[data-name='matmul']").focus()
    page.keyboard.press("Enter")
    assert page.locator(".tft-placement .tft-node.tft-selected").get_attribute(
        "data-name") == "matmul"
    page.keyboard.press("Escape")
    assert page.locator(".tft-placement .tft-selected").count() == 0


def test_hints_show_inline_code(views):
    hint = views.page.locator(".tfteach-error code").first
    assert hint.inner_text() == 'tf.device("/cpu:0")'
    assert "`" not in views.page.locator(".tfteach-error").inner_text()


# Composite an element's text and background colours over its ancestors' backgrounds.
EFFECTIVE_COLORS = """els => els.map(el => {
  const parse = c => { const p = c.match(/rgba?\\(([^)]+)\\)/)[1].split(/[\\s,\\/]+/)
    .filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3]))
    .concat([1]);
  const chain = []; for (let e = el; e; e = e.parentElement) { chain.unshift(e); }
  let bg = [255, 255, 255, 1];
  for (const e of chain) { const c = parse(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) { bg = over(c, bg); } }
  return [over(parse(getComputedStyle(el).color), bg).slice(0, 3), bg.slice(0, 3)];
})"""
SVG_LABEL_COLORS = """els => els.map(g => [getComputedStyle(g.querySelector('text')).fill,
  getComputedStyle(g.querySelector('rect')).fill])"""


def _hex(rgb) -> str:
    if isinstance(rgb, str):
        rgb = [float(v) for v in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3]]
    return "#" + "".join(f"{round(v):02X}" for v in rgb)


def _contrasts(views: LabPage) -> dict[str, float]:
    from tfteach.notebook.palette import contrast

    page = views.page
    out = {}
    for selector in (".tfteach-error", ".tfteach-error code", ".tfteach-check"):
        for i, (fg, bg) in enumerate(page.locator(selector).evaluate_all(EFFECTIVE_COLORS)):
            out[f"{selector}#{i}"] = contrast(_hex(fg), _hex(bg))
    nodes = page.locator(".tft-placement .tft-node").evaluate_all(SVG_LABEL_COLORS)
    for i, (text, fill) in enumerate(nodes):
        out[f"node label {i} on {fill}"] = contrast(_hex(text), _hex(fill))
    return out


@pytest.mark.parametrize("theme", ["JupyterLab Dark", "JupyterLab Light"])
def test_feedback_boxes_and_node_labels_have_contrast_4_5_in_the_theme(views, theme):
    light = "true" if theme == "JupyterLab Light" else "false"
    views.command("apputils:change-theme", {"theme": theme})
    views.page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{light}'",
                                 timeout=30000)
    views.page.wait_for_timeout(500)
    measured = _contrasts(views)
    assert len([k for k in measured if k.startswith(".tfteach-check")]) == 2
    assert len([k for k in measured if k.startswith("node label")]) == 5
    low = {k: round(v, 2) for k, v in measured.items() if v < 4.5}
    print(theme, {k: round(v, 2) for k, v in measured.items()})
    views.screenshot(f"feedback-{light}", ".jp-Cell:has(.tfteach-error)")
    assert not low, f"contrast below 4.5 in {theme}: {low}"


# -------------------------------------------------------------------- sidebar, lessons


def sleeper() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "120"], start_new_session=True)


def test_sidebar_lists_clusters_and_stops_the_users_own(lab, lab_page_factory, module_registry):
    foreign = fake_entry(owner_uid=os.getuid() + 4242)
    procs = [sleeper(), sleeper()]
    mine = fake_entry(tasks=2, network="1 Gbit Ethernet")
    for record, proc in zip(mine["tasks"], procs):
        record.update(pid=proc.pid, argv=["sleep", "120"])
    write_entry(foreign)
    path = write_entry(mine)
    try:
        view = lab_page_factory(lab)
        view.open()
        view.page.click(".jp-SideBar .lm-TabBar-tab[data-id='tfteach-clusters']")
        panel = view.page.locator("#tfteach-clusters")
        panel.locator(f".tft-cluster[data-cluster-id='{mine['id']}']").wait_for()
        ours = panel.locator(f".tft-cluster[data-cluster-id='{mine['id']}']")
        theirs = panel.locator(f".tft-cluster[data-cluster-id='{foreign['id']}']")
        assert ours.locator(".tft-task-address").all_inner_texts() == [
            t["address"] for t in mine["tasks"]]
        assert theirs.locator(".tft-task-name").all_inner_texts() == [
            "/job:worker/task:0", "/job:worker/task:1"]
        assert theirs.locator("button").count() == 0
        assert ours.locator(".tft-cluster-network").inner_text() == \
            "modelled network: 1 Gbit Ethernet"
        assert theirs.locator(".tft-cluster-network").count() == 0
        assert mine["token"] not in view.page.content()
        view.screenshot("sidebar-clusters")
        ours.locator(".tft-stop").click()
        assert [p.wait(timeout=15) for p in procs] == [-15, -15]
        ours.wait_for(state="detached")
        assert not path.exists() and theirs.is_visible()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        for leftover in module_registry.glob("*.json"):
            leftover.unlink()


def test_sidebar_polls_only_while_it_is_shown(lab, lab_page_factory):
    view = lab_page_factory(lab)
    view.open()
    calls: list[str] = []
    view.page.on("request", lambda r: calls.append(r.url) if "tfteach/api/clusters" in r.url
                 else None)
    view.page.wait_for_timeout(2500)
    assert calls == [], "no polling while the panel is hidden"
    tab = view.page.locator(".jp-SideBar .lm-TabBar-tab[data-id='tfteach-clusters']")
    tab.click()
    view.page.wait_for_timeout(2500)
    assert len(calls) >= 3, "about two polls a second while shown"
    tab.click()
    view.page.locator("#tfteach-clusters[data-polling='false']").wait_for(state="attached")
    view.page.wait_for_timeout(1000)
    calls.clear()
    view.page.wait_for_timeout(2500)
    assert calls == []


def test_launcher_card_opens_the_first_lesson(lab, lab_page_factory):
    view = lab_page_factory(lab)
    view.open()  # a fresh workspace shows the launcher
    card = view.launcher_card("tfteach lessons")
    card.wait_for()
    view.screenshot("launcher")
    card.click()
    view.page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab",
                      has_text="01_device_placement.ipynb").wait_for()


def test_palette_has_the_open_lessons_command_per_language(lab, lab_page_factory):
    view = lab_page_factory(lab)
    view.open()
    view.command("apputils:activate-command-palette")
    search = view.page.locator(".lm-CommandPalette-input:visible")
    search.wait_for()
    search.fill("tfteach")
    items = view.page.locator(".lm-CommandPalette-item:visible .lm-CommandPalette-itemLabel")
    items.first.wait_for()
    view.screenshot("palette")
    assert sorted(t for t in items.all_inner_texts() if "lessons" in t) == [
        "Open tfteach lessons", "Open tfteach lessons in Русский",
        "Open tfteach lessons in 中文", "Open tfteach lessons in 한국어"]

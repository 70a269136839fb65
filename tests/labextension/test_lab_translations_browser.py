"""The extension in Korean, Chinese and Russian in a real JupyterLab (Debian's Chromium).

One lab serves the module; a kernel starts a small LocalCluster (one ps, one worker) from a
notebook. For each language the lab's display language is set the way a learner does it
(the user setting ``@jupyterlab/translation-extension:plugin`` ``{"locale": "ko_KR"}``,
which needs the language pack), a fresh page opens, and the launcher's tfteach cards and
the cluster sidebar must show the translations of labextension/locale/<lang>.po. A
screenshot per language goes to test-artifacts/ and docs/images/lab-<lang>.png. The
language's own card opens lessons/<lang>/01_device_placement.ipynb. The placement and
timeline renderers get the translator from JupyterLab's rendermime (Russian, for its three
plural forms).
"""
from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from labharness import LABEXTENSION_SRC, REPO, JupyterServer, LabPage, write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.cluster]

LOCALES = {"ko": "ko_KR", "zh": "zh_CN", "ru": "ru_RU"}
NATIVE = {"en": "English", "ko": "한국어", "zh": "中文", "ru": "Русский"}
TRANSLATION_PLUGIN = "@jupyterlab/translation-extension:plugin"
FIRST = "01_device_placement.ipynb"
DOCS_IMAGES = REPO / "docs" / "images"
SIDEBAR_TAB = ".jp-SideBar .lm-TabBar-tab[data-id='tfteach-clusters']"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
PLACEMENT = {
    "nodes": [{"name": "a", "type": "Const", "requested_device": "", "assigned_device": CPU0},
              {"name": "b", "type": "Neg", "requested_device": "/gpu:0", "assigned_device": GPU0}],
    "edges": [{"src": "a", "dst": "b", "cross_device": True, "bytes": 8}],
    "devices": [{"name": CPU0, "device_type": "CPU"}, {"name": GPU0, "device_type": "GPU"}],
}
TIMELINE = {
    "devices": [{"name": CPU0, "short": "CPU:0"}, {"name": GPU0, "short": "GPU:0"}],
    "ops": [{"name": "a", "op": "Const", "device": CPU0, "start_us": 0, "end_us": 8, "bytes": 8},
            {"name": "b", "op": "Neg", "device": GPU0, "start_us": 30, "end_us": 40, "bytes": 8}],
    "transfers": [{"src_device": CPU0, "dst_device": GPU0, "tensor": "a:0", "start_us": 8,
                   "end_us": 28, "bytes": 8, "src_op": "a", "consumers": ["b"]}],
    "step_us": 40,
}
VIEWS_CELL = (
    "import json\nfrom IPython.display import display\n"
    f"display({{'application/vnd.tfteach.placement+json': json.loads({json.dumps(PLACEMENT)!r})}},"
    " raw=True)\n"
    f"display({{'application/vnd.tfteach.timeline+json': json.loads({json.dumps(TIMELINE)!r})}},"
    " raw=True)")


def _catalogs() -> dict[str, dict]:
    path = LABEXTENSION_SRC / "locale" / "build.py"
    spec = importlib.util.spec_from_file_location("tfteach_lab_locale_build", path)
    build = sys.modules.get(spec.name) or importlib.util.module_from_spec(spec)
    if spec.name not in sys.modules:
        sys.modules[spec.name] = build
        spec.loader.exec_module(build)
    return {lang: build.read_po(LABEXTENSION_SRC / "locale" / f"{lang}.po")[1]
            for lang in LOCALES}


CATALOGS = _catalogs()


def tr(lang: str, msgid: str, *args: object) -> str:
    """The .po's translation of ``msgid`` with ``%1``, ``%2``… filled in."""
    text = CATALOGS[lang][msgid].msgstr[0]
    for i, arg in enumerate(args, 1):
        text = text.replace(f"%{i}", str(arg))
    return text


def tr_n(lang: str, msgid: str, n: int, *args: object) -> str:
    """The .po's plural form of ``msgid`` for ``n`` (Russian: one, few, many)."""
    form = 0
    if lang == "ru" and not (n % 10 == 1 and n % 100 != 11):
        form = 1 if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14 else 2
    text = CATALOGS[lang][msgid].msgstr[form]
    for i, arg in enumerate((n, *args), 1):
        text = text.replace(f"%{i}", str(arg))
    return text


def write_lesson(path: Path, lang: str) -> None:
    """A stand-in lesson in ``lang`` (a translated lesson says its language in metadata)."""
    import nbformat

    write_notebook(path, f"print({NATIVE[lang]!r})")
    nb = nbformat.read(str(path), as_version=4)
    nb.metadata["tfteach"] = {"lang": lang}
    nbformat.write(nb, str(path))


@pytest.fixture(scope="module")
def lab(tmp_path_factory, module_registry):
    work = tmp_path_factory.mktemp("lab-i18n")
    root = work / "root"
    write_lesson(root / "lessons" / FIRST, "en")
    for lang in LOCALES:
        write_lesson(root / "lessons" / lang / FIRST, lang)
        write_lesson(root / "lessons" / lang / "02_placing_by_hand.ipynb", lang)
    write_notebook(root / "views.ipynb", VIEWS_CELL)
    write_notebook(root / "cluster.ipynb", "%load_ext tfteach",
                   "%tfteach cluster start --ps 1 --workers 1")
    with JupyterServer(work, app="lab", root_dir=root,
                       env={"TFTEACH_REGISTRY_DIR": str(module_registry)}) as server:
        yield server


@pytest.fixture(scope="module")
def cluster(browser, lab, module_registry):
    """A LocalCluster started by cluster.ipynb's kernel (the page closes, the kernel stays)."""
    page = LabPage(browser, lab)
    try:
        page.open("cluster.ipynb")
        page.wait_kernel_idle(120000)
        page.run_cell("%load_ext tfteach")
        page.run_cell("cluster start", timeout_ms=180000)
    finally:
        page.close()
    [entry] = [json.loads(p.read_text()) for p in module_registry.glob("*.json")]
    yield entry
    lab.api("POST", f"tfteach/api/clusters/{entry['id']}/stop")
    deadline = time.monotonic() + 30
    while any(module_registry.glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)


@pytest.fixture
def lab_in(lab, lab_page_factory):
    """Open the lab in a language: ``page = lab_in("ko")``; English again afterwards."""
    def open_in(lang: str) -> LabPage:
        lab.set_lab_setting(TRANSLATION_PLUGIN, {"locale": LOCALES[lang]})
        page = lab_page_factory(lab)
        page.open()
        return page

    yield open_in
    lab.set_lab_setting(TRANSLATION_PLUGIN, {})


@pytest.mark.parametrize("lang", list(LOCALES))
def test_launcher_and_sidebar_speak_the_labs_language(lang, lab_in, cluster):
    page = lab_in(lang)
    cards = page.page.locator(".jp-LauncherCard[data-category='tfteach'] .jp-LauncherCard-label")
    cards.first.wait_for()
    assert cards.all_inner_texts() == [tr(lang, "tfteach lessons")] + [
        tr(lang, "tfteach lessons (%1)", NATIVE[other]) for other in ("ko", "zh", "ru")]
    page.page.click(SIDEBAR_TAB)
    panel = page.page.locator("#tfteach-clusters")
    ours = panel.locator(f".tft-cluster[data-cluster-id='{cluster['id']}']")
    ours.locator(".tft-task.tft-state-alive").nth(1).wait_for(timeout=30000)
    assert panel.locator(".tft-panel-title").text_content() == tr(lang, "tfteach clusters")
    assert ours.locator(".tft-cluster-owner").inner_text() == tr(lang, "started by %1",
                                                                 "cluster.ipynb")
    assert ours.locator(".tft-task-state").all_inner_texts() == [tr(lang, "alive")] * 2
    assert ours.locator(".tft-stop").inner_text() == tr(lang, "Stop cluster")
    assert set(ours.locator(".tft-kill").all_inner_texts()) == {tr(lang, "Kill")}
    assert panel.locator(".tft-refresh").inner_text() == tr(lang, "Refresh")
    shot = page.screenshot(f"lab-{lang}")
    DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, DOCS_IMAGES / f"lab-{lang}.png")


@pytest.mark.parametrize("lang", list(LOCALES))
def test_a_languages_launcher_card_opens_its_first_lesson(lang, lab_in):
    page = lab_in(lang)
    page.launcher_card(tr(lang, "tfteach lessons (%1)", NATIVE[lang])).click()
    page.page.wait_for_function(
        "p => { const w = window.jupyterapp.shell.currentWidget;"
        " return !!w && !!w.context && w.context.path === p; }",
        arg=f"lessons/{lang}/{FIRST}", timeout=30000)


def test_the_english_card_still_opens_the_english_lessons(lab, lab_page_factory):
    page = lab_page_factory(lab)
    page.open()
    page.launcher_card("tfteach lessons").click()
    page.page.wait_for_function(
        "p => { const w = window.jupyterapp.shell.currentWidget;"
        " return !!w && !!w.context && w.context.path === p; }",
        arg=f"lessons/{FIRST}", timeout=30000)



def test_the_renderers_speak_the_labs_language(lab, lab_page_factory):
    lang = "ru"
    lab.set_lab_setting(TRANSLATION_PLUGIN, {"locale": LOCALES[lang]})
    try:
        page = lab_page_factory(lab)
        page.open("views.ipynb")
        page.run_all_cells()
        placement = page.page.locator(".tft-placement")
        placement.locator(".tft-node").first.wait_for()
        assert placement.locator(".tft-reset").inner_text() == tr(lang, "Reset view")
        assert placement.locator(".tft-status").inner_text() == tr(
            lang, "%1 %2, %3. Click a node to see its inputs, outputs and transfers; drag to "
            "pan, wheel to zoom.", tr_n(lang, "%1 node", 2), tr_n(lang, "on %1 device", 2),
            tr_n(lang, "%1 cross-device edge", 1))
        page.page.hover(".tft-placement .tft-node[data-name='b']")
        tip = placement.locator(".tft-tooltip")
        tip.wait_for(state="visible")
        assert f"{tr(lang, 'requested')}: /gpu:0" in tip.inner_text()
        timeline = page.page.locator(".tft-timeline")
        assert timeline.locator(".tft-reset").inner_text() == tr(lang, "Reset zoom")
        assert tr(lang, "transfer") in timeline.locator(".tft-legend").inner_text()
        page.screenshot(f"views-{lang}", ".jp-Cell")
    finally:
        lab.set_lab_setting(TRANSLATION_PLUGIN, {})

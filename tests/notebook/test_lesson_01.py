"""Lesson 1 passes nbval, and its static HTML export shows the pictures (in Chromium)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lessons"))
from lesson_tools import (LESSONS, assert_passes_nbval, export_html, output_texts,  # noqa: E402
                          stored_outputs, svgs)

PLACEMENT_MIME = "application/vnd.tfteach.placement+json"

LESSON = LESSONS / "01_device_placement.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(tmp_path):
    assert_passes_nbval(LESSON, tmp_path)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    return export_html(LESSON, tmp_path_factory.mktemp("export"))


def test_static_export_holds_placement_svgs_and_timeline_images(exported):
    html = exported.read_text()
    pictures = svgs(html)
    graphs = [s for s in pictures if "cluster_dev_" in s]
    timelines = [s for s in pictures if "tfteach-tl-arrow" in s]
    assert len(graphs) >= 8 and len(timelines) >= 4
    assert any(">AddN</text>" in s and ">GPU:1</text>" in s for s in graphs)
    assert "Hint:" in html and "InvalidArgumentError" in html
    assert "Correct: the placement. Well done!" in html


@pytest.mark.browser
def test_exported_lesson_draws_in_chromium(exported, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    pytest.importorskip("PIL")
    from PIL import Image

    shot = tmp_path / "lesson.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", f"--screenshot={shot}",
                    "--window-size=1200,6000", exported.as_uri()],
                   capture_output=True, timeout=180, check=False)
    assert shot.exists(), "Chromium wrote no screenshot"
    colours = {c for _, c in Image.open(shot).convert("RGB").getcolors(1 << 24)}
    device_colours = {(0x56, 0xB4, 0xE9), (0xE6, 0x9F, 0x00), (0x00, 0x9E, 0x73)}
    assert device_colours <= colours, "the CPU:0, GPU:0 and GPU:1 node colours are drawn"
    assert (0xC0, 0x39, 0x2B) in colours, "transfer arrows and the error box are drawn"


def test_try_it_on_tensorflow_shows_tf_lacking_the_gpus_and_every_op_it_moved():
    """The text: TF here has no GPU, says so, puts every op on CPU:0 with --soft, and the
    comparison lists each op that went elsewhere."""
    outputs = stored_outputs(LESSON, "%%placement --backend compare --soft")
    text = output_texts(outputs)
    assert "Note: TensorFlow on this machine has no GPU:0, GPU:1 (it has CPU:0)." in text
    ours, theirs = [o["data"][PLACEMENT_MIME] for o in outputs
                    if PLACEMENT_MIME in o.get("data", {})]
    assert {n["assigned_device"][-5:] for n in theirs["nodes"]} == {"CPU:0"}
    moved = [n["name"] for n in ours["nodes"] if not n["assigned_device"].endswith("CPU:0")]
    assert "tfteach and TensorFlow differ (6 differences):" in text
    for name, node in ((n["name"], n) for n in ours["nodes"] if n["name"] in moved):
        assert f"placement of {name}: tfteach {node['assigned_device'][-5:]}, TensorFlow " \
               "CPU:0" in text

"""Lesson 1 passes nbval, and its static HTML export shows the pictures (in Chromium), in every
language."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tfteach.notebook import palette

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lessons"))
import lesson_fixtures  # noqa: E402
from lesson_tools import (assert_passes_nbval, code_spans, correct, counterpart,  # noqa: E402
                          hint_label, output_texts, plural_pattern, shown, stored_outputs, svgs)

from tfteach import i18n  # noqa: E402
from tfteach.i18n import tr  # noqa: E402

PLACEMENT_MIME = "application/vnd.tfteach.placement+json"

LESSON_NAME = "01_device_placement.ipynb"
# The lesson tests' fixtures: the tests run once per language, on ``lesson`` and its export.
lang, lesson = lesson_fixtures.lang, lesson_fixtures.lesson
export_file, exported = lesson_fixtures.export_file, lesson_fixtures.exported

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(lesson, tmp_path):
    assert_passes_nbval(lesson, tmp_path)


def test_static_export_holds_placement_svgs_and_timeline_images(exported, lang):
    pictures = svgs(exported)
    graphs = [s for s in pictures if "cluster_dev_" in s]
    timelines = [s for s in pictures if "tfteach-tl-arrow" in s]
    assert len(graphs) >= 8 and len(timelines) >= 4
    assert any(">AddN</text>" in s and ">GPU:1</text>" in s for s in graphs)
    assert shown(exported, hint_label(lang)) and "InvalidArgumentError" in exported
    assert shown(exported, correct("the placement", lang))


@pytest.mark.browser
def test_exported_lesson_draws_in_chromium(export_file, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    pytest.importorskip("PIL")
    from PIL import Image

    shot = tmp_path / "lesson.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--no-first-run", f"--screenshot={shot}",
                    "--window-size=1200,6000", export_file.as_uri()],
                   capture_output=True, timeout=180, check=False)
    assert shot.exists(), "Chromium wrote no screenshot"
    colours = {c for _, c in Image.open(shot).convert("RGB").getcolors(1 << 24)}
    device_colours = {(0x56, 0xB4, 0xE9), (0xE6, 0x9F, 0x00), (0x00, 0x9E, 0x73)}
    assert device_colours <= colours, "the CPU:0, GPU:0 and GPU:1 node colours are drawn"
    transfer = tuple(int(palette.TRANSFER_COLOR[i:i + 2], 16) for i in (1, 3, 5))
    assert transfer in colours, "the transfer arrows are drawn in the palette's transfer red"


NO_GPU = ("TensorFlow on this machine has no {missing} (it has {have}). tfteach's GPUs are "
          "virtual; TensorFlow needs real ones.")


def test_try_it_on_tensorflow_shows_tf_lacking_the_gpus_and_every_op_it_moved(lesson, lang):
    """The text: TF here has no GPU, says so, puts every op on CPU:0 with --soft, and the
    comparison lists each op that went elsewhere."""
    outputs = stored_outputs(lesson, "%%placement --backend compare --soft")
    text = output_texts(outputs)
    soft = tr("With --soft, TF put those ops on a device it has (see below).", lang=lang)
    head = tr(NO_GPU, lang=lang, missing=i18n.join(["GPU:0", "GPU:1"], lang), have="CPU:0")
    note = tr("{sentence} {next}", lang=lang, sentence=head, next=soft)
    assert tr("Note: {text}", lang=lang, text=note) in text
    ours, theirs = [o["data"][PLACEMENT_MIME] for o in outputs
                    if PLACEMENT_MIME in o.get("data", {})]
    assert {n["assigned_device"][-5:] for n in theirs["nodes"]} == {"CPU:0"}
    moved = [n["name"] for n in ours["nodes"] if not n["assigned_device"].endswith("CPU:0")]
    assert re.search(plural_pattern("tfteach and TensorFlow differ ({n} difference):",
                                    "tfteach and TensorFlow differ ({n} differences):", 6, lang),
                     text)
    for name, node in ((n["name"], n) for n in ours["nodes"] if n["name"] in moved):
        assert tr("placement of {name}: tfteach {ours}, TensorFlow {theirs}", lang=lang,
                  name=name, ours=node["assigned_device"][-5:], theirs="CPU:0") in text


TIMELINE_MIME = "application/vnd.tfteach.timeline+json"


def _data(outputs: list, mime: str) -> dict:
    return next(o["data"][mime] for o in outputs if mime in o.get("data", {}))


def _svg_of(outputs: list, mime: str) -> str:
    return next(o["data"]["image/svg+xml"] for o in outputs if mime in o.get("data", {}))


def test_transfer_arrows_are_thick_red_and_labelled_with_their_bytes(lesson, lang):
    """The text: the copies to the GPU are thick red arrows; the saved picture writes the
    bytes copied beside each arrow."""
    outputs = stored_outputs(lesson, "%%placement --run\nwith tf.device('/cpu:0'):")
    transfers = [e for e in _data(outputs, PLACEMENT_MIME)["edges"] if e["cross_device"]]
    assert sorted((e["src"], e["bytes"]) for e in transfers) == [("a", 24), ("b", 24)]
    svg = _svg_of(outputs, PLACEMENT_MIME)
    label = f'fill="#d0402f"> {i18n.size(24, lang)}</text>'
    assert svg.count(label) == 2, "a byte label by each red arrow"
    assert svg.count('stroke="#d0402f" stroke-width="2.2"') >= 2, "thick red arrows"


def test_all_three_ops_of_the_logged_example_went_to_gpu_0(lesson):
    text = output_texts(stored_outputs(lesson, "log_device_placement=True"))
    for op in ("MatMul: (MatMul)", "a: (Const)", "b: (Const)"):
        assert f"{op}: /job:localhost/replica:0/task:0/device:GPU:0" in text


def test_the_towers_sum_is_twice_one_towers_product(lesson):
    outputs = stored_outputs(lesson, "print(_placement.values['AddN:0'])")
    assert "[[ 44.  56.]\n [ 98. 128.]]" in output_texts(outputs)


def test_the_big_towers_products_overlap_on_the_warm_timeline(lesson):
    """The text: after a warm-up step the two MatMul bars sit one above the other."""
    timeline = _data(stored_outputs(lesson, "%%placement --trace --warmup"), TIMELINE_MIME)
    products = {op["device"][-5:]: op for op in timeline["ops"] if op["op"] == "MatMul"}
    assert sorted(products) == ["GPU:0", "GPU:1"]
    both = (min(op["end_us"] for op in products.values())
            - max(op["start_us"] for op in products.values()))
    shorter = min(op["end_us"] - op["start_us"] for op in products.values())
    assert both > shorter / 2, "the products run at the same time for most of the shorter one"


def test_soft_placement_moves_gpu_2_to_gpu_0_and_the_int_variable_to_the_cpu(lesson):
    text = output_texts(stored_outputs(lesson, "%%placement --soft --log --run"))
    assert "MatMul (MatMul) -> GPU:0" in text and "a (Const) -> GPU:0" in text
    text = output_texts(stored_outputs(lesson, "v = tf.Variable(3, name='v')"))
    assert "v (VariableV2) -> CPU:0" in text


def test_cuda_visible_devices_renumbers_the_gpus(lesson, lang):
    """The text: with CUDA_VISIBLE_DEVICES=1 GPU:0 is the second virtual GPU (pci bus id
    virtual:1); with 2,0 GPU:0 is virtual GPU 2 and GPU:1 virtual GPU 0."""
    text = output_texts(stored_outputs(lesson, "%%placement --log\nwith tf.device('/gpu:0'):"))
    assert "device:GPU:0 -> device: 0, name: tfteach virtual GPU (backed by the CPU), pci bus " \
           "id: virtual:1" in text
    assert "device:GPU:1" not in text
    nb = nbformat.read(lesson, as_version=4)
    tables = [output_texts(c.outputs) for c in nb.cells
              if c.cell_type == "code" and c.source.strip() == "%tfteach devices"]
    mapping = i18n.clauses([tr("{device} is virtual GPU {index}", lang=lang, device=f"GPU:{i}",
                               index=index) for i, index in ((0, 2), (1, 0))], lang)
    assert tr("{head} {mapping}.", lang=lang, head="", mapping=mapping).strip() in tables[2]


def test_the_exercise_starts_with_everything_on_gpu_0(lesson):
    text = output_texts(stored_outputs(lesson, "product_0 = tf.matmul(x, w0, name='product_0')"))
    assert set(re.findall(r"^\S+ \(\w+\) -> (\S+)$", text, re.M)) == {"GPU:0"}


def test_the_textbook_example_pins_the_variable_and_constant_and_mul_gets_gpu_0(lesson):
    """Section 2b: Hands-On ML's example as written; its value is 3 x 4."""
    outputs = stored_outputs(lesson, "a.initializer.run(session=sess)")
    text = output_texts(outputs)
    for op in ("Variable: (VariableV2)", "Const: (Const)"):
        assert f"{op}: /job:localhost/replica:0/task:0/device:CPU:0" in text
    assert "mul: (Mul): /job:localhost/replica:0/task:0/device:GPU:0" in text
    assert "12.0" in text


def test_a_placed_variable_stays_and_the_op_changing_it_follows(lesson):
    """Section 2b: v, placed by a first run on GPU:0, keeps it; inc asked for GPU:1."""
    text = output_texts(stored_outputs(lesson, "inc = tf.assign_add(v, 1.0, name='inc')"))
    assert text.split() == ["v:", "GPU:0", "inc:", "GPU:0"]


def test_one_cpu_device_stands_for_every_core(lesson):
    text = output_texts(stored_outputs(lesson, "cpus = [d.name for d in sess.list_devices()"))
    assert "cores, 1 CPU device: /job:localhost/replica:0/task:0/device:CPU:0" in text


def test_the_created_lines_name_each_gpu_with_its_memory(lesson):
    """Section 2c: one 'Created TensorFlow device' line per GPU, 1024 MB each."""
    text = output_texts(stored_outputs(lesson, "print(f'Created TensorFlow device"))
    lines = text.strip().splitlines()
    assert [line.split(" with ")[0] for line in lines] == [
        f"Created TensorFlow device (/job:localhost/replica:0/task:0/device:GPU:{i}"
        for i in (0, 1)]
    assert all("with 1024 MB memory) -> physical GPU (device: " in line for line in lines)


def test_the_lesson_names_where_real_tensorflow_differs(lesson):
    """The "On real TensorFlow" section lists the six differences, one item each, naming by
    their code TF's only device, its log lines, the start-up log's lines and the variable."""
    section = counterpart(lesson, "## On real TensorFlow").source
    assert section.startswith("## ")
    assert len(re.findall(r"^- ", section, re.M)) == 6
    spans = code_spans(section)
    for topic in ("CPU:0", "I tensorflow/core/common_runtime/placer.cc:162]", "Created",
                  "CUDA_VISIBLE_DEVICES", "{{node MatMul}}"):
        assert topic in spans, topic

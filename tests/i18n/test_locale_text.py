"""Text tfteach writes in Korean, Chinese and Russian reads as those languages write it: lists
joined with the language's separators (never an ASCII ``", ".join``), numbers with its decimal
sign, units after a no-break space in Russian, percentages as each language writes them, the
word "Hint" and its colon from the catalog, and widget summaries with no English words left."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import catalogs
import nbformat
import pytest

import tfteach as tf
from tfteach.i18n import clauses, hint_label, hint_line, join, number, percent, size
from tfteach.notebook import cluster_view, loss_curves
from tfteach.notebook.displays import ErrorBox
from tfteach.notebook.placement_cell import PlacementOptions, run_placement_cell
from tfteach.notebook.progress import Progress
from tfteach.notebook.timeline_view import timeline_text

LANGS = catalogs.TRANSLATED
ROOT = catalogs.ROOT
NBSP = "\u00a0"
MIB = 1024 * 1024
# The modules that write learner text: the views and their summaries, the checks, the errors.
LEARNER_TEXT = ["tfteach/errors.py", "tfteach/i18n.py"] + [
    f"tfteach/notebook/{name}.py" for name in (
        "displays", "timeline_view", "placement_view", "loss_curves", "progress",
        "cluster_view", "tf_backend", "backend_compare", "quizzes", "exercise_checks",
        "grading", "placement_cell")]


# ---- no ASCII list of learner text -----------------------------------------------------------

def _comma_joins(path: Path) -> list[int]:
    """Lines of ``", ".join(...)`` calls in a module."""
    return [node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "join" and isinstance(node.func.value, ast.Constant)
            and node.func.value.value == ", "]


def test_notebook_views_and_errors_join_learner_text_with_the_languages_separators():
    found = [f"{name}:{line}" for name in LEARNER_TEXT for line in _comma_joins(ROOT / name)]
    assert found == [], "use tfteach.i18n.join (a list) or clauses (a summary's facts)"


# ---- lists, numbers, units -------------------------------------------------------------------

def test_english_lists_and_numbers_read_as_they_always_have():
    assert (join(["a", "b", "c"], "en"), clauses(["a", "b"], "en")) == ("a, b, c", "a, b")
    assert (size(512, "en"), size(4096, "en"), size(195.9 * MIB, "en"),
            size(3 * 1024 * MIB, "en"), size(None, "en")) == \
        ("512 B", "4.0 KiB", "195.9 MiB", "3.0 GiB", "?")
    assert (number(0.5, 2, "en"), percent(0.2, lang="en")) == ("0.50", "20%")


@pytest.mark.parametrize("lang, listed, facts", [
    ("ko", "a, b 및 c", "a, b, c"), ("zh", "a、b和c", "a，b，c"), ("ru", "a, b и c", "a, b, c")])
def test_lists_take_the_languages_separators(lang, listed, facts):
    assert (join("abc", lang), clauses("abc", lang)) == (listed, facts)


def test_russian_sizes_have_a_decimal_comma_and_a_no_break_space_before_the_unit():
    assert size(195.9 * MIB, "ru") == f"195,9{NBSP}МиБ"
    assert (size(512, "ru"), size(1536, "ru")) == (f"512{NBSP}Б", f"1,5{NBSP}КиБ")


@pytest.mark.parametrize("lang, want", [("zh", "20%"), ("ko", "20%"), ("ru", f"20{NBSP}%"),
                                        ("en", "20%")])
def test_percentages_as_each_language_writes_them(lang, want):
    assert percent(0.2, lang=lang) == want


# ---- the hint --------------------------------------------------------------------------------

@pytest.mark.parametrize("lang, label", [("en", "Hint: "), ("ko", "힌트: "), ("zh", "提示："),
                                         ("ru", "Подсказка: ")])
def test_the_hint_label_and_its_colon_come_from_the_catalog(lang, label):
    assert hint_label(lang) == label
    assert hint_line("x", lang) == f"{label}x"


def test_an_error_box_sets_the_chinese_label_in_bold_with_its_full_width_colon(monkeypatch):
    monkeypatch.setenv("TFTEACH_LANG", "zh")
    box = ErrorBox(tf.errors.InvalidArgumentError("bad", hint="换一个设备"))
    assert "<b>提示：</b>换一个设备" in box.html()
    assert box.text().endswith("\n提示：换一个设备")


def _outputs(notebook: nbformat.NotebookNode) -> str:
    texts = []
    for cell in notebook.cells:
        for out in cell.get("outputs", []):
            texts += [out.get("text", "")] + [str(v) for v in out.get("data", {}).values()]
            texts += out.get("traceback", [])
    return "\n".join(texts)


@pytest.mark.parametrize("lang", LANGS)
def test_lesson_1_prints_the_hint_label_its_text_names(lang):
    """The lesson's stored outputs show the label tfteach prints now, and its text (which
    explains the error box) names the same word."""
    path = next((ROOT / "lessons" / lang).glob("01_*.ipynb"))
    notebook = nbformat.read(path, as_version=4)
    label = hint_label(lang)
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert label in _outputs(notebook) and "Hint:" not in _outputs(notebook)
    assert f"`{label.rstrip()}`" in markdown, "the text quotes the label as printed"


# ---- widget summaries ------------------------------------------------------------------------

ENGLISH = re.compile(r"\b(?:Timeline|devices?|ops?|transfers?|step|took|idle|Loss|curves|records?|"
                     r"workers?|last|global|staleness|dropped|steps|ETA|min|is|virtual|alive|stopped|"
                     r"task|address|state|and|on|of)\b")


TOWERS = """c = []
for d in ['/gpu:0', '/gpu:1']:
    with tf.device(d):
        a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
        c.append(tf.matmul(a, a, transpose_b=True))
with tf.device('/cpu:0'):
    total = tf.add_n(c)
"""


@pytest.fixture(scope="module")
def towers():
    result = run_placement_cell(TOWERS, PlacementOptions(run=True), {"tf": tf})
    yield result
    result.close()


def _histories() -> dict:
    return {mode: [{"worker": w, "step": s, "global_step": 2 * s + w, "wall_time": 0.1 * s,
                    "loss": 1.0 / (s + 1), "staleness": w if mode == "async" else None,
                    "accepted": not (mode == "sync" and s == 3 and w)}
                   for s in range(5) for w in range(2)] for mode in ("sync", "async")}


def _summaries(towers) -> dict[str, str]:
    now = [0.0]
    progress = Progress(total=30, clock=lambda: now[0], display=False)
    now[0] = 2.0
    progress.update(6, loss=0.25)
    rows = [{"task": "ps:0", "address": "localhost:1", "devices": ["CPU:0", "GPU:0"],
             "alive": True, "last_step": 3},
            {"task": "ps:1", "address": "localhost:2", "devices": [], "alive": False,
             "last_step": None}]
    return {"timeline": timeline_text(towers.timeline.data),
            "loss curves": loss_curves.summary(_histories()),
            "progress": progress.text(), "cluster": cluster_view.rows_text(rows)}


@pytest.mark.parametrize("lang", LANGS)
def test_widget_summaries_have_no_english_words(lang, towers, monkeypatch):
    monkeypatch.setenv("TFTEACH_LANG", "en")
    english = _summaries(towers)
    assert all(ENGLISH.search(text) for text in english.values()), english
    monkeypatch.setenv("TFTEACH_LANG", lang)
    found = {what: ENGLISH.findall(text) for what, text in _summaries(towers).items()}
    assert {what: words for what, words in found.items() if words} == {}


@pytest.mark.parametrize("lang", LANGS)
def test_task_states_are_the_words_the_lab_sidebar_uses(lang):
    lab = {m.id: m.string for m in catalogs.read(ROOT / "labextension" / "locale" / f"{lang}.po")}
    states = catalogs.read(catalogs.po_path(lang), lang)
    assert (states.get("alive").string, states.get("stopped").string) == \
        (lab["alive"], lab["stopped"])


def test_the_runtime_names_a_task_state_with_the_labs_english_word():
    from tfteach.notebook.cluster_view import rows_text

    text = rows_text([{"task": "ps:0", "address": "localhost:1", "devices": [], "alive": False,
                       "last_step": None}])
    assert text.split()[-2] == "stopped"


# ---- the loss curves' titles -----------------------------------------------------------------

@pytest.mark.parametrize("lang", ["ru", "ko"])
def test_loss_curve_panel_titles_fit_their_panels(lang, monkeypatch):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    monkeypatch.setenv("TFTEACH_LANG", lang)
    fig = loss_curves.plot_histories(_histories())
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    for ax in fig.axes:
        title, box = ax.title.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert ax.get_title() and box.x0 - 30 <= title.x0 and title.x1 <= box.x1 + 30, \
            (ax.get_title(), title, box)


# ---- the extension's labels ------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_a_views_json_names_the_learners_language_for_the_extension(lang, towers, monkeypatch):
    """The extension writes its labels ("Reset view", "7 nodes on 3 devices") in the lesson's
    language, which JupyterLab's own language setting does not know."""
    monkeypatch.setenv("TFTEACH_LANG", lang)
    for view in (towers.view, towers.timeline):
        payload = view._repr_mimebundle_()[0][view.MIME]
        assert payload.get("lang") == (None if lang == "en" else lang)


@pytest.mark.parametrize("lang, pairs", [
    ("en", "(GPU:0 on CPU:1, GPU:1 on CPU:2; device_count={'CPU': 3})"),
    ("zh", "GPU:0 在 CPU:1 上，GPU:1 在 CPU:2 上"), ("ru", "GPU:0 на CPU:1, GPU:1 на CPU:2")])
def test_the_gpus_as_cpus_note_names_each_stand_in_in_the_language(lang, pairs, monkeypatch):
    from tfteach.notebook.tf_backend import device_notes
    monkeypatch.setenv("TFTEACH_LANG", lang)
    notes = device_notes(tf.Graph(), [], PlacementOptions(gpus_as_cpus=2))
    assert len(notes) == 1 and pairs in notes[0]

"""What the lesson tests and ``execute.py`` share: the environment a lesson runs in, running
it under nbval, exporting it to HTML, and checking that a cluster lesson stopped every
process it started. A cell whose metadata says ``{"tfteach": {"needs": "tensorflow"}}`` runs
only where that package is installed (as in CI); elsewhere nbval skips it.

A lesson runs with this checkout first on PYTHONPATH and with the device and cluster-token
variables unset, so it sees the defaults its stored outputs were made with (two virtual
GPUs, no token), and in its own language: ``TFTEACH_LANG`` is the ``tfteach.lang`` of the
notebook's metadata (``en`` where it has none). The English lessons are ``lessons/*.ipynb``,
each translation's are ``lessons/<lang>/`` with the same file names (``lesson_path``). A
``registry`` folder, when given, holds the LocalClusters the run registers and marks every
process it starts (kernel and tasks), so a test can find them.

A lesson's tests run for every language. Code cells, and so all that the code prints, are the
same in each; what tfteach's runtime writes (feedback, hints, summaries) is in the lesson's
language, so a test builds it from the message catalog (``correct``, ``hint_label``,
``message_pattern``) and never asserts on English prose.
"""
from __future__ import annotations

import base64
import html
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from tfteach import i18n
from tfteach.i18n import catalog, tr

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "lessons"
LANGS = ("en", "ko", "zh", "ru")
SANITIZE = LESSONS / "sanitize.cfg"
REGISTRY_ENV = "TFTEACH_REGISTRY_DIR"
_SVG = re.compile(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')
_UNSET = ("CUDA_VISIBLE_DEVICES", "TFTEACH_VIRTUAL_GPUS", "TFTEACH_DEVICE_SPEED",
          "TFTEACH_CLUSTER_TOKEN", "TFTEACH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES",
          "TFTEACH_RUN_SOLUTIONS")


def lesson_path(name: str, lang: str = "en") -> Path:
    """The lesson file ``name`` (e.g. ``04_how_a_graph_runs.ipynb``) in ``lang``."""
    return LESSONS / name if lang == "en" else LESSONS / lang / name


def notebook_lang(notebook: Path) -> str:
    """The language a notebook's metadata names (``tfteach.lang``), else ``en``."""
    nb = nbformat.read(notebook, as_version=4)
    return nb.metadata.get("tfteach", {}).get("lang", "en")


def lesson_or_skip(name: str, lang: str) -> Path:
    """``lesson_path(name, lang)``; the calling test is skipped while that translation is not
    written yet (a missing English lesson is not skipped: its tests fail)."""
    path = lesson_path(name, lang)
    if lang != "en" and not path.exists():
        import pytest

        pytest.skip(f"lessons/{lang}/{name} is not translated yet")
    return path


def lesson_env(registry: Path | None = None, lang: str = "en") -> dict[str, str]:
    """This process's environment, made the one a lesson's kernel should start in."""
    env = dict(os.environ)
    paths = [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    for name in _UNSET:
        env.pop(name, None)
    env["TFTEACH_LANG"] = lang
    if registry is not None:
        env[REGISTRY_ENV] = str(registry)
    return env


def needs_missing_package(cell) -> bool:
    """Whether a cell needs a package (``metadata.tfteach.needs``) this Python lacks."""
    needs = cell.metadata.get("tfteach", {}).get("needs")
    return bool(needs) and importlib.util.find_spec(needs) is None


def runnable_here(notebook: Path, workdir: Path) -> Path:
    """``notebook``, or a copy in ``workdir`` in which nbval skips the cells that need a
    package this Python lacks (e.g. the "Try it on real TensorFlow" cells without
    TensorFlow)."""
    nb = nbformat.read(notebook, as_version=4)
    skipped = [c for c in nb.cells if c.cell_type == "code" and needs_missing_package(c)]
    if not skipped:
        return notebook
    for cell in skipped:
        cell.metadata["tags"] = [*cell.metadata.get("tags", []), "nbval-skip"]
    copy = workdir / notebook.name
    nbformat.write(nb, copy)
    return copy


def assert_passes_nbval(notebook: Path, workdir: Path) -> Path:
    """Run ``notebook`` under nbval with the lessons' sanitizers in a fresh pytest process
    (cells that need a package this Python lacks are skipped). Its solution cells run too,
    as ``execute.py`` ran them (``TFTEACH_RUN_SOLUTIONS=1``), and fail where a solution does
    not pass its check.

    Returns the registry folder the run used (``workdir/registry``)."""
    registry = workdir / "registry"
    lang = notebook_lang(notebook)
    notebook = runnable_here(notebook, workdir)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", str(notebook), "--nbval-sanitize-with",
         str(SANITIZE), "-q", "-p", "no:cacheprovider", "--rootdir", str(workdir)],
        check=False, cwd=ROOT, env={**lesson_env(registry, lang), "TFTEACH_RUN_SOLUTIONS": "1"},
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", done.stdout)
    return registry


def processes_marked_with(registry: Path) -> list[int]:
    """Live processes whose environment names ``registry`` (a lesson's kernel and tasks)."""
    mark = f"{REGISTRY_ENV}={registry}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if mark in (entry / "environ").read_bytes().split(b"\0") and \
                    (entry / "stat").read_text().split()[2] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def assert_stopped_every_task(registry: Path) -> None:
    """No process of the run is left, and no LocalCluster is still registered."""
    deadline = time.monotonic() + 30       # tasks notice their kernel's exit within ~1 s
    while processes_marked_with(registry) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_marked_with(registry) == [], "the lesson left task processes running"
    assert not list(registry.glob("*.json")), "the lesson left a LocalCluster registered"


def export_html(notebook: Path, out: Path) -> Path:
    """``notebook`` exported by nbconvert to ``out`` as HTML, with its stored outputs."""
    done = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", str(notebook), "--output-dir",
         str(out)], check=False, capture_output=True, text=True,
        env=lesson_env(out / "registry", notebook_lang(notebook)), timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return out / notebook.with_suffix(".html").name


def svgs(html: str) -> list[str]:
    """The SVG pictures embedded in an exported page, decoded."""
    return [base64.b64decode(b).decode() for b in _SVG.findall(html)]


def stored_outputs(notebook: Path, marker: str) -> list:
    """The stored outputs of the first code cell of ``notebook`` whose source has ``marker``."""
    nb = nbformat.read(notebook, as_version=4)
    return next(c for c in nb.cells if c.cell_type == "code" and marker in c.source).outputs


def output_texts(outputs: list) -> str:
    """The text/plain forms and streams of ``outputs``, one after another."""
    return "\n".join(o.get("text") or o.get("data", {}).get("text/plain", "") for o in outputs)


# ---- the runtime's text, in a lesson's language -------------------------------------------------
_FIELD = re.compile(r"\{\{|\}\}|\{(\w+)(?:[:!][^{}]*)?\}")


def _template_pattern(template: str, fields: dict[str, str]) -> str:
    """``template`` (a ``str.format`` text) as a regular expression: its text literally, each
    ``{field}`` a named group matching ``fields[field]`` (default: some text on one line)."""
    parts, seen, end = [], set(), 0
    for found in _FIELD.finditer(template):
        parts.append(re.escape(template[end:found.start()]))
        name = found.group(1)
        if name is None:                                    # {{ or }}: one brace
            parts.append(re.escape(found.group(0)[0]))
        elif name in seen:
            parts.append(f"(?P={name})")
        else:
            seen.add(name)
            parts.append(f"(?P<{name}>{fields.get(name, '.+?')})")
        end = found.end()
    unknown = set(fields) - seen
    if unknown:
        raise ValueError(f"{template!r} has no field {sorted(unknown)}")
    return "".join(parts) + re.escape(template[end:])


def message_pattern(msgid: str, lang: str, **fields: str) -> str:
    """A regular expression for the runtime message ``msgid`` as tfteach writes it in ``lang``
    (the catalog's translation, or the English text while there is none): each ``{field}`` a
    named group matching the regular expression ``fields[field]`` (default ``.+?``; a
    translation may begin or end with a field, so anchor the pattern, e.g. ``^ *...$``, where
    the groups' values matter)."""
    return _template_pattern(catalog(lang).gettext(msgid), fields)


def plural_pattern(singular: str, plural: str, n: int, lang: str, **fields: str) -> str:
    """``message_pattern`` for the form of a ``trn`` message for the number ``n`` (``{n}``
    stands for ``n`` unless ``fields`` gives it)."""
    fields.setdefault("n", re.escape(str(n)))
    return _template_pattern(catalog(lang).ngettext(singular, plural, n), fields)


def timeline_transfers(text: str, lang: str) -> list[tuple[str, str, str, str]]:
    """The transfers a timeline's text summary lists, in ``lang``: (tensor, from, to, size)."""
    line = message_pattern("transfer {tensor}: {src} -> {dst} ({size})", lang)
    return [m.group("tensor", "src", "dst", "size")
            for m in re.finditer(rf"^ *{line} *$", text, re.M)]


# A duration as tfteach writes it in a lesson's language (value, unit): 1.25 ms, 1,25 мс (a
# no-break space, &nbsp; once exported), 1.25 毫秒; ``microseconds`` reads it back.
DURATION = r"([\d.,]+)(?: |\u00a0|&nbsp;)?(µs|ms|s|мкс|мс|с|微秒|毫秒|秒)"
_US = {"µs": 1.0, "мкс": 1.0, "微秒": 1.0, "ms": 1e3, "мс": 1e3, "毫秒": 1e3,
       "s": 1e6, "с": 1e6, "秒": 1e6}


def microseconds(value: str, unit: str) -> float:
    """A ``DURATION`` match's value in µs (a decimal comma read as a point)."""
    return float(value.replace(",", ".")) * _US[unit]


def correct(what: str, lang: str) -> str:
    """The feedback of a passed check of ``what`` (an English msgid), in ``lang``."""
    return tr("Correct: {what}. Well done!", lang=lang, what=tr(what, lang=lang))


def hint_label(lang: str) -> str:
    """What starts a hint line in ``lang`` (``Hint:``, ``提示：``), without its space."""
    return i18n.hint_label(lang).rstrip()


def shown(page: str, text: str) -> bool:
    """Whether an exported page shows ``text``: HTML-escaped there, its `code` spans as
    ``<code>`` (as tfteach's feedback and error boxes write them)."""
    page = html.unescape(page)
    return text in page or re.sub(r"`([^`]+)`", r"<code>\1</code>", text) in page


# ---- markdown, in any language -------------------------------------------------------------------
def counterpart(notebook: Path, english_marker: str):
    """The cell of ``notebook`` (a lesson in any language) with the id of the English lesson's
    first cell whose source contains ``english_marker``: the same cell, translated."""
    english = nbformat.read(lesson_path(notebook.name), as_version=4).cells
    cell_id = next(c.id for c in english if english_marker in c.source)
    return next(c for c in nbformat.read(notebook, as_version=4).cells if c.id == cell_id)


def code_spans(markdown: str) -> list[str]:
    """The inline `code` spans and fenced code blocks of a markdown text: what stays English."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", markdown, re.S | re.M)
    rest = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    return blocks + re.findall(r"`([^`\n]+)`", rest)


def headings(page: str, level: int) -> list[str]:
    """The text of an exported page's ``<hN>`` headings (anchor links left out)."""
    found = re.findall(rf"<h{level}\b[^>]*>(.*?)</h{level}>", page, re.S)
    return [html.unescape(re.sub(r"<a class=\"anchor-link\".*?</a>|<[^>]+>", "", h)).strip()
            for h in found]


def assert_tf_section_ends_the_lesson(lesson: Path, exported: str) -> None:
    """The lesson's "On real TensorFlow" section (in the lesson's language): a level-2
    heading of the exported page, whose cell holds the program for TensorFlow."""
    section = counterpart(lesson, "## On real TensorFlow")
    assert section.cell_type == "markdown" and section.source.startswith("## ")
    assert section.source.splitlines()[0][3:].strip() in headings(exported, 2)
    assert "import tensorflow.compat.v1 as tf" in section.source


def printed(lesson: Path, marker: str) -> str:
    """What the first code cell of ``lesson`` with ``marker`` printed (its stored outputs)."""
    return output_texts(stored_outputs(lesson, marker))

"""The ``tfteach`` command: lessons copy (fresh notebooks without outputs), devices."""
import json
import subprocess
import sys

import pytest

from tfteach import cli


def _lesson(outputs):
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# Hi"},
        {"cell_type": "code", "metadata": {}, "source": "1+1", "execution_count": 3,
         "outputs": outputs}]}


def test_strip_outputs_clears_code_cells_only():
    nb = cli.strip_outputs(_lesson([{"output_type": "stream", "name": "stdout", "text": "2"}]))
    code = nb["cells"][1]
    assert code["outputs"] == [] and code["execution_count"] is None
    assert nb["cells"][0]["source"] == "# Hi"


def test_copy_lessons_writes_fresh_notebooks(tmp_path, monkeypatch):
    src = tmp_path / "lessons"
    src.mkdir()
    (src / "01_x.ipynb").write_text(json.dumps(_lesson([{"output_type": "stream",
                                                         "name": "stdout", "text": "2"}])))
    (src / "README.md").write_text("syllabus")
    monkeypatch.setattr(cli, "lessons_dir", lambda lang="en": src)
    out = tmp_path / "class"
    written = cli.copy_lessons(out)
    assert sorted(p.name for p in written) == ["01_x.ipynb", "README.md"]
    assert json.loads((out / "01_x.ipynb").read_text())["cells"][1]["outputs"] == []
    with pytest.raises(FileExistsError, match="--overwrite"):
        cli.copy_lessons(out)
    assert cli.copy_lessons(out, overwrite=True)


def test_command_line_lists_devices():
    out = subprocess.run([sys.executable, "-m", "tfteach.cli", "devices"], capture_output=True,
                         text=True, check=True).stdout
    assert "/job:localhost/replica:0/task:0/device:CPU:0" in out


def _with_solution(text: str) -> dict:
    nb = _lesson([])
    nb["cells"].append({"cell_type": "code", "source": text, "execution_count": None,
                        "outputs": [], "metadata": {"tfteach": {"solution": "1.1"},
                                                    "jupyter": {"source_hidden": True}}})
    return nb


def test_strip_outputs_without_solutions_leaves_out_the_marked_cells():
    nb = _with_solution("answer = 42")
    assert [c["source"] for c in cli.strip_outputs(nb, solutions=False)["cells"]] == ["# Hi", "1+1"]
    assert len(cli.strip_outputs(nb)["cells"]) == 3


def test_copy_of_the_real_lessons_without_solutions_keeps_every_exercise(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tfteach.cli", "lessons", "copy",
                           str(tmp_path), "--no-solutions"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for path in sorted(cli.lessons_dir().glob("*.ipynb")):
        source = json.loads(path.read_text())["cells"]
        copied = json.loads((tmp_path / path.name).read_text())["cells"]
        assert not [c for c in copied if "solution" in c["metadata"].get("tfteach", {})]
        assert len(copied) == len([c for c in source
                                   if "solution" not in c["metadata"].get("tfteach", {})])
        assert any("exercise=" in "".join(c["source"]) for c in copied), path.name


def test_keep_existing_copies_only_what_is_missing(tmp_path, monkeypatch):
    src = tmp_path / "lessons"
    src.mkdir()
    for name in ("01_x.ipynb", "02_y.ipynb"):
        (src / name).write_text(json.dumps(_lesson([])))
    monkeypatch.setattr(cli, "lessons_dir", lambda lang="en": src)
    out = tmp_path / "work"
    out.mkdir()
    (out / "01_x.ipynb").write_text("the learner's work")
    assert [p.name for p in cli.copy_lessons(out, keep_existing=True)] == ["02_y.ipynb"]
    assert (out / "01_x.ipynb").read_text() == "the learner's work"


def test_readme_lab_command_opens_a_git_ignored_working_copy_the_card_finds(tmp_path):
    import re
    from pathlib import Path

    from tfteach.notebook.lab_handlers import find_lessons

    repo = Path(__file__).resolve().parents[2]
    readme = (repo / "README.md").read_text()
    line = readme.split("<!-- lab-command -->", 1)[1].split("```bash\n", 1)[1].split("\n")[0]
    found = re.search(r"tfteach lessons copy (.+?) && \S*jupyter lab (\S+)$", line)
    assert found, line
    copy_args, lab_root = found.group(1).split(), found.group(2)
    ignored = subprocess.run(["git", "check-ignore", "-q", lab_root.rstrip("/") + "/x.ipynb"],
                             cwd=repo, check=False)
    assert ignored.returncode == 0, f"{lab_root} is not git-ignored"
    for _ in range(2):        # the command runs again on a machine that has the copy
        done = subprocess.run([sys.executable, "-m", "tfteach.cli", "lessons", "copy",
                               *copy_args], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    assert find_lessons(tmp_path / lab_root)["first"] == "lessons/01_device_placement.ipynb"


def test_copy_in_korean_writes_the_korean_lessons_and_the_glossary(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tfteach.cli", "lessons", "copy", "--lang",
                           "ko", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in tmp_path.glob("*.ipynb"))
    assert names == sorted(p.name for p in cli.lessons_dir().glob("*.ipynb"))
    first = json.loads((tmp_path / names[0]).read_text(encoding="utf-8"))
    assert first["metadata"]["tfteach"]["lang"] == "ko"
    assert all(c["outputs"] == [] for c in first["cells"] if c["cell_type"] == "code")
    assert "| English |" in (tmp_path / "GLOSSARY.md").read_text(encoding="utf-8")
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == \
        (cli.lessons_dir("ko") / "README.md").read_text(encoding="utf-8")


def test_copy_of_every_language_puts_the_translations_in_their_folders(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tfteach.cli", "lessons", "copy", "--lang",
                           "all", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for lang, folder in (("en", tmp_path), ("zh", tmp_path / "zh"), ("ru", tmp_path / "ru")):
        notebook = json.loads(next(folder.glob("01_*.ipynb")).read_text(encoding="utf-8"))
        assert notebook["metadata"].get("tfteach", {}).get("lang", "en") == lang
    assert not list((tmp_path / "ko").glob("ko"))


def _console_script(name: str, *args: str) -> subprocess.CompletedProcess:
    """Run the installed console script ``name`` (next to this Python) as a process."""
    from pathlib import Path

    script = Path(sys.executable).parent / name
    if not script.exists():
        pytest.skip(f"{name} is not installed in this environment")
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", ["tfteach", "tfteach-server"])
def test_version_prints_the_installed_version_and_exits_0(name):
    from importlib import metadata

    done = _console_script(name, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{name} {metadata.version('tfteach')}"


def test_tfteach_help_shows_every_command_with_examples_and_exits_0():
    done = _console_script("tfteach", "--help")
    assert done.returncode == 0, done.stderr
    for text in ("usage: tfteach", "lessons", "devices", "tfteach lessons copy --lang ko",
                 "tfteach lessons path", "--version"):
        assert text in done.stdout
    assert "``" not in done.stdout
    assert done.stdout.rstrip().endswith("every option of a command.")


def test_tfteach_server_help_shows_its_flags_and_examples_and_exits_0():
    done = _console_script("tfteach-server", "--help")
    assert done.returncode == 0, done.stderr
    for text in ("usage: tfteach-server", "--cluster", "--job", "--task_index", "--insecure",
                 "--ps_hosts=localhost:2222", "TFTEACH_CLUSTER_TOKEN", "--version"):
        assert text in done.stdout
    assert "``" not in done.stdout
    assert "Started server" not in done.stderr       # help starts no task

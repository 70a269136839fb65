"""The ``tfteach`` command: ``tfteach lessons copy [--lang ko] DIR``, ``tfteach lessons path``,
``tfteach lessons grade [PATH]``, ``tfteach devices``.

Lessons ship inside the wheel (``tfteach/lessons_data``) and sit in the repository's
``lessons/`` for an editable install; ``lessons copy`` writes them with outputs and
execution counts cleared, so a teacher hands out fresh notebooks (``--no-solutions`` leaves
out the exercises' solution cells and turns ``tfteach.lessons.solution()`` off there) and a
learner gets a working copy that JupyterLab may save into (``--keep-existing`` keeps the
notebooks already there, with the learner's work).
``--lang`` picks the lessons' language (``en``, ``ko``, ``zh`` or ``ru``; a translated set
comes with the course's glossary); ``--lang all`` writes the English set into DIR and each
translation into DIR/<lang>/, as the repository's ``lessons/`` holds them. A copy is marked
(``exercises.COPY_FILE``), so the learner's wrong tries are kept there for ``lessons grade``,
which runs a learner's copy (or a folder of copies, one per learner) in fresh kernels and
prints every exercise's result (``tfteach.notebook.grading``; ``--csv FILE`` writes it too).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from tfteach.i18n import LANGUAGES
from tfteach.notebook import exercises

_COPIED_FILES = ("README.md", "sanitize.cfg")


def lessons_dir(lang: str = "en") -> Path:
    """Where the lessons in ``lang`` are: inside the installed package, else the checkout."""
    return exercises.lessons_folder(lang)


def strip_outputs(notebook: dict, solutions: bool = True) -> dict:
    """A copy of a notebook (nbformat 4 JSON) with outputs and execution counts removed, and
    without its solution cells unless ``solutions``."""
    nb = json.loads(json.dumps(notebook))
    if not solutions:
        nb["cells"] = [c for c in nb.get("cells", []) if not exercises.is_solution(c)]
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def _sources(lang: str) -> list[Path]:
    """The files a copy in ``lang`` holds: its lessons, syllabus and (translations) glossary."""
    src, english = lessons_dir(lang), lessons_dir()
    extra = [src / n for n in _COPIED_FILES]
    if src != english:
        extra.append(english / "GLOSSARY.md")
    return sorted(src.glob("*.ipynb")) + [path for path in extra if path.exists()]


def copy_lessons(dest: Path, overwrite: bool = False, solutions: bool = True,
                 keep_existing: bool = False, lang: str = "en") -> list[Path]:
    """Copy every lesson in ``lang`` (without outputs; without solutions unless
    ``solutions``) and the syllabus into ``dest``; with ``keep_existing`` the files already
    there stay as they are."""
    sources = _sources(lang)
    dest.mkdir(parents=True, exist_ok=True)
    marker = dest / exercises.COPY_FILE     # the learner's wrong tries are kept in this copy
    if not marker.exists():
        marker.write_text("A copy of tfteach's lessons: wrong tries are kept in "
                          f"{exercises.TRIES_FILE} for `tfteach lessons grade`.\n")
    written = []
    if not solutions:       # turns tfteach.lessons.solution() off for notebooks run here
        marker = dest / exercises.NO_SOLUTIONS_FILE
        marker.write_text("Lessons copied without solutions: tfteach.lessons.solution() is off.\n")
        written.append(marker)
    for path in sources:
        target = dest / path.name
        if target.exists() and keep_existing:
            continue
        if target.exists() and not overwrite:
            raise FileExistsError(f"{target} already exists; use --overwrite to replace it, or "
                                  "--keep-existing to copy only the lessons missing there")
        if path.suffix == ".ipynb":
            notebook = strip_outputs(json.loads(path.read_text()), solutions)
            target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n",
                              encoding="utf-8")
        else:
            shutil.copyfile(path, target)
        written.append(target)
    return written


def _devices() -> None:
    from tfteach import config
    for d in config.list_devices():
        print(f"{d.name}  {d.memory_limit >> 20} MiB  {d.description or d.device_type}")


_DESCRIPTION = "Hand out tfteach's lesson notebooks and show the devices a session gets here."
_EPILOG = """examples:
  tfteach lessons copy ~/tfteach-lessons               fresh copies of the English lessons
  tfteach lessons copy --lang ko --no-solutions DIR    Korean, without the solution cells
  tfteach lessons copy --keep-existing DIR             only the lessons missing in DIR
  tfteach lessons path                                 where the lessons are installed
  tfteach devices                                      the devices a session would get
Run 'tfteach lessons copy --help' for every option of a command."""


def _parser() -> argparse.ArgumentParser:
    from tfteach import __version__

    parser = argparse.ArgumentParser(prog="tfteach", description=_DESCRIPTION, epilog=_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tfteach {__version__}")
    return parser


def _grade(path: Path, limit: float, csv_path: Path | None) -> int:
    from tfteach.notebook import grading

    if not path.exists() or not grading.learners(path):
        raise FileNotFoundError(f"{path}: no lesson notebooks there (a copy made by "
                                "`tfteach lessons copy`, or a folder of such copies)")
    try:
        rows = grading.grade(path, limit)
    except ImportError as e:
        print(f"tfteach: grading runs notebooks with nbclient ({e}); install JupyterLab: "
              "pip install 'tfteach[lab]'", file=sys.stderr)
        return 1
    print(grading.table(rows))
    if csv_path is not None:
        grading.write_csv(rows, csv_path)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    sub = parser.add_subparsers(dest="command", required=True)
    lessons = sub.add_parser("lessons", help="the lesson notebooks")
    lsub = lessons.add_subparsers(dest="action", required=True)
    copy = lsub.add_parser("copy", help="copy the lessons, without outputs, into DIR")
    copy.add_argument("dir", type=Path, help="the folder to copy the lessons into")
    copy.add_argument("--overwrite", action="store_true",
                      help="replace notebooks already in DIR (their work is lost)")
    copy.add_argument("--no-solutions", dest="solutions", action="store_false",
                      help="leave out the exercises' solution cells (for a class)")
    copy.add_argument("--keep-existing", action="store_true",
                      help="keep the notebooks already in DIR (a learner's work)")
    path = lsub.add_parser("path", help="print where the lessons are")
    copy.add_argument("--lang", choices=(*LANGUAGES, "all"), default="en",
                      help="the lessons' language (default: en); all: every language, "
                           "the translations in DIR/<lang>/")
    path.add_argument("--lang", choices=LANGUAGES, default="en",
                      help="the lessons' language (default: en)")
    grade = lsub.add_parser("grade", help="run learners' copies of the lessons and print "
                                          "each exercise's result")
    grade.add_argument("path", type=Path, nargs="?", default=Path("."),
                       help="a learner's copy, a folder of copies (one per learner), or a "
                            "notebook (default: .)")
    grade.add_argument("--timeout", type=float, default=300.0,
                       help="seconds each notebook may run (default 300)")
    grade.add_argument("--csv", type=Path, default=None, help="also write the table to this file")
    sub.add_parser("devices", help="list the devices a session would get here")
    args = parser.parse_args(argv)
    try:
        if args.command == "devices":
            _devices()
        elif args.action == "path":
            print(lessons_dir(args.lang))
        elif args.action == "grade":
            return _grade(args.path, args.timeout, args.csv)
        else:
            for lang in (LANGUAGES if args.lang == "all" else (args.lang,)):
                dest = args.dir if lang in ("en", args.lang) else args.dir / lang
                for path in copy_lessons(dest, args.overwrite, args.solutions,
                                         args.keep_existing, lang):
                    print(path)
    except (FileNotFoundError, FileExistsError) as e:
        print(f"tfteach: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Keep tfteach's gettext catalogs in step with its code.

    python tests/i18n/catalogs.py extract   # tfteach/locale/tfteach.pot from the code
    python tests/i18n/catalogs.py update    # merge the .pot into each language's .po
    python tests/i18n/catalogs.py compile   # write the .mo next to each .po
    python tests/i18n/catalogs.py check [--allow-untranslated]

Run it from anywhere after changing a learner-facing text. The messages are the first
argument of every ``tr("literal", ...)`` call in ``tfteach/**/*.py`` (implicit concatenation
across lines makes one message), the two first of every ``trn("singular", "plural", n)``, plus the learner texts of ``tfteach/notebook/exercises.json``
(each exercise's ``what``, ``direction`` and ``hint``, or each string of such a list). A
``tr()`` (``trn()``) whose message is not a literal is an error, unless its line ends with the
comment ``# i18n: dynamic`` (the text is extracted from elsewhere, e.g. exercises.json).

``update`` keeps translations, adds new messages untranslated and drops obsolete ones;
``compile`` leaves untranslated messages out of the .mo, so they read in English. ``check``
exits 1 with a list when the .pot is stale, a .po lacks a message, leaves it untranslated
(unless ``--allow-untranslated``) or fuzzy, changes its ``{placeholders}``, or when a .mo
does not match its .po.
"""
from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from collections import Counter
from io import BytesIO
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tfteach"
LOCALE = PACKAGE / "locale"
POT = LOCALE / "tfteach.pot"
EXERCISES = PACKAGE / "notebook" / "exercises.json"
TRANSLATED = ("ko", "zh", "ru")
EXERCISE_FIELDS = ("what", "direction", "hint")
DYNAMIC_MARK = "# i18n: dynamic"
HEADER = ("# The texts tfteach writes for learners (hints, feedback, labels), in English.\n"
          "# Written by `python tests/i18n/catalogs.py extract`: do not edit by hand.")
PO_HEADER = ("# tfteach's texts for learners in {language}: translate each msgstr with the terms\n"
             "# of lessons/GLOSSARY.md, keeping every {{field}} as it is. New messages come from\n"
             "# `python tests/i18n/catalogs.py update`; `compile` then writes the .mo.")


def po_path(lang: str) -> Path:
    return LOCALE / lang / "LC_MESSAGES" / "tfteach.po"


def mo_path(lang: str) -> Path:
    return po_path(lang).with_suffix(".mo")


# ---- extraction ------------------------------------------------------------------------------

# function: how many leading arguments are messages (N_ marks a text tr() shows elsewhere)
KEYWORDS = {"tr": 1, "trn": 2, "N_": 1}


def code_messages() -> list[tuple[str | tuple[str, str], str]]:
    """(message, file) of every ``tr("literal", ...)`` call under tfteach/ (a ``trn``
    message is the pair (singular, plural)), found with ``ast``: also inside f-strings, and
    never a string that is only an argument's subscript (``tr(info["hint"])``)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            count = _messages_of(node)
            texts = [a.value for a in node.args[:count]
                     if isinstance(a, ast.Constant) and isinstance(a.value, str)] if count else []
            if count and len(texts) == count:
                found.append((texts[0] if count == 1 else tuple(texts), where))
    return found


def non_literal_calls() -> list[str]:
    """``file:line`` of each ``tr(...)`` call whose message is not a string literal."""
    problems: list[tuple[str, int]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text, str(path))):
            count = _messages_of(node)
            if not count:
                continue
            messages = node.args[:count]
            literal = len(messages) == count and all(
                isinstance(m, ast.Constant) and isinstance(m.value, str) for m in messages)
            if not literal and not lines[node.lineno - 1].rstrip().endswith(DYNAMIC_MARK):
                problems.append((path.relative_to(ROOT).as_posix(), node.lineno))
    return [f"{where}:{line}: tr() needs a string literal message (or end the line with "
            f"'{DYNAMIC_MARK}')" for where, line in sorted(problems)]


def _messages_of(node: ast.AST) -> int:
    """How many leading arguments of this call are messages (0: not a tr/trn call)."""
    if not isinstance(node, ast.Call):
        return 0
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return KEYWORDS.get(name, 0)


def exercise_messages() -> list[tuple[str, str]]:
    """(text, exercise) of each learner text of exercises.json."""
    out = []
    for key, exercise in json.loads(EXERCISES.read_text(encoding="utf-8")).items():
        for field in EXERCISE_FIELDS:
            value = exercise.get(field)
            for text in ([value] if isinstance(value, str) else value or []):
                if isinstance(text, str) and text:
                    out.append((text, f"exercise {key} {field}"))
    return out


def template() -> Catalog:
    """The catalog of every message, as ``extract`` writes it."""
    pot = Catalog(project="tfteach", copyright_holder="the tfteach authors", fuzzy=False,
                  header_comment=HEADER)
    for message, where in code_messages():
        pot.add(message, locations=[(where, None)])
    exercises = EXERCISES.relative_to(ROOT).as_posix()
    for message, which in exercise_messages():
        entry = pot.get(message)
        if entry is None:
            pot.add(message, locations=[(exercises, None)], auto_comments=[which])
        elif which not in entry.auto_comments:
            entry.auto_comments.append(which)
            entry.locations = sorted(set(entry.locations) | {(exercises, None)})
    return pot


def msgids(catalog: Catalog) -> set[str]:
    return {m.id for m in catalog if m.id}


def translated(message) -> bool:
    """Whether a catalog entry has its translation (every plural form, for trn's)."""
    forms = message.string if isinstance(message.string, (tuple, list)) else [message.string]
    return bool(forms) and all(forms)


# ---- reading and writing ---------------------------------------------------------------------

def read(path: Path, lang: str | None = None) -> Catalog:
    with path.open("rb") as f:
        return read_po(f, locale=lang)


def write(path: Path, catalog: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    out = BytesIO()
    write_po(out, catalog, sort_output=True, include_lineno=False, ignore_obsolete=True,
             width=100)
    path.write_bytes(out.getvalue())


def extract() -> int:
    """Write the .pot (unless its messages and places are unchanged); 1 on non-literal calls."""
    problems = non_literal_calls()
    fresh = template()
    if not POT.exists() or _entries(read(POT)) != _entries(fresh):
        write(POT, fresh)
    print(f"{POT.relative_to(ROOT)}: {len(msgids(fresh))} messages")
    return _report(problems)


def _entries(catalog: Catalog) -> dict[str, tuple]:
    return {m.id: (sorted(m.locations), list(m.auto_comments)) for m in catalog if m.id}


def update() -> int:
    """Merge the .pot into each language's .po: keep translations, add new, drop old."""
    pot = read(POT)
    for lang in TRANSLATED:
        path = po_path(lang)
        po = read(path, lang) if path.exists() else Catalog(locale=lang, project="tfteach")
        po.update(pot, no_fuzzy_matching=True)
        po.header_comment, po.fuzzy = PO_HEADER.format(language=lang), False
        po.obsolete.clear()
        write(path, po)
        done = sum(1 for m in po if m.id and translated(m) and not m.fuzzy)
        print(f"{path.relative_to(ROOT)}: {done}/{len(msgids(po))} translated")
    return 0


def compile_all() -> int:
    """Write each language's .mo from its .po (untranslated and fuzzy entries left out)."""
    for lang in TRANSLATED:
        out = BytesIO()
        write_mo(out, read(po_path(lang), lang), use_fuzzy=False)
        mo_path(lang).write_bytes(out.getvalue())
        print(f"{mo_path(lang).relative_to(ROOT)} written")
    return 0


# ---- checks ----------------------------------------------------------------------------------

def placeholders(text: str) -> Counter:
    """The ``{field}`` groups of a message (``{{`` and ``}}`` are literal braces)."""
    return Counter(re.findall(r"\{[^{}]*\}", text.replace("{{", "").replace("}}", "")))


def stale_template() -> list[str]:
    """Problems of the .pot against the code."""
    if not POT.exists():
        return [f"{POT.relative_to(ROOT)} is missing: run extract"]
    have, want = msgids(read(POT)), msgids(template())
    return ([f"{POT.name} lacks {m!r}: run extract" for m in sorted(want - have)]
            + [f"{POT.name} still has {m!r}: run extract" for m in sorted(have - want)])


def po_problems(lang: str, pot_ids: set[str], allow_untranslated: bool = False) -> list[str]:
    """Problems of one language's .po against the .pot."""
    path = po_path(lang)
    if not path.exists():
        return [f"{path.relative_to(ROOT)} is missing: run update"]
    po = read(path, lang)
    name = f"{lang}/tfteach.po"
    problems = [f"{name} lacks {m!r}: run update" for m in sorted(pot_ids - msgids(po))]
    problems += [f"{name} has {m!r}, which the .pot does not: run update"
                 for m in sorted(msgids(po) - pot_ids)]
    for m in po:
        if not m.id:
            continue
        if m.fuzzy:
            problems.append(f"{name}: {m.id!r} is fuzzy: check its translation")
        elif not translated(m):
            if not allow_untranslated:
                problems.append(f"{name}: {m.id!r} is not translated")
        else:
            problems += _placeholder_problems(name, m)
    return problems


def _placeholder_problems(name: str, message) -> list[str]:
    """A translation must keep its message's ``{fields}`` (a plural form: the plural's)."""
    if isinstance(message.id, str):
        pairs = [(message.id, message.string, placeholders)]
    else:
        pairs = [(message.id[1], form, lambda t: set(placeholders(t))) for form in message.string]
    return [f"{name}: {message.id!r} has placeholders {sorted(fields(original))}, its "
            f"translation {sorted(fields(text))}"
            for original, text, fields in pairs if fields(text) != fields(original)]


def compiled(lang: str) -> dict[str, str]:
    """The translations a .mo of this language's .po holds."""
    po = read(po_path(lang), lang)
    return {_forms(m.id): _forms(m.string) for m in po
            if m.id and translated(m) and not m.fuzzy}


def _forms(string):
    return tuple(string) if isinstance(string, (tuple, list)) else string


def mo_problems(lang: str) -> list[str]:
    """Problems of one language's .mo against its .po."""
    path = mo_path(lang)
    if not path.exists():
        return [f"{lang}/tfteach.mo is missing: run compile"]
    with path.open("rb") as f:
        in_mo = {_forms(m.id): _forms(m.string) for m in read_mo(f) if m.id}
    if in_mo != compiled(lang) and po_path(lang).exists():
        return [f"{lang}/tfteach.mo does not match {lang}/tfteach.po: run compile"]
    return []


def check(allow_untranslated: bool = False) -> int:
    problems = non_literal_calls() + stale_template()
    pot_ids = msgids(read(POT)) if POT.exists() else set()
    for lang in TRANSLATED:
        problems += po_problems(lang, pot_ids, allow_untranslated)
        if po_path(lang).exists():
            problems += mo_problems(lang)
    if not problems:
        print("catalogs are up to date")
    return _report(problems)


def _report(problems: list[str]) -> int:
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("extract", "update", "compile", "check"))
    parser.add_argument("--allow-untranslated", action="store_true",
                        help="check: an untranslated message is not a problem")
    args = parser.parse_args(argv)
    if args.command == "check":
        return check(args.allow_untranslated)
    return {"extract": extract, "update": update, "compile": compile_all}[args.command]()


if __name__ == "__main__":
    sys.exit(main())

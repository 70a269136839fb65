"""tfteach's gettext catalogs and ``tr()``: the .pot lists every message of the code, each
language's .po and .mo follow it, the learner's language is found in the documented order,
and a script run in Korean, Chinese or Russian keeps TF's English message and translates only
the hint."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import catalogs
import pytest

from tfteach import i18n
from tfteach.i18n import hint_label, hint_line, language, normalize, tr

LANGS = catalogs.TRANSLATED
_LANG_ENV = ("TFTEACH_LANG", "JPY_SESSION_NAME", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


@pytest.fixture
def no_language_set(monkeypatch):
    """No variable names a language (each is restored afterwards, even one that
    ``language()`` sets)."""
    for name in _LANG_ENV:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


# ---- the catalogs ----------------------------------------------------------------------------

def test_pot_lists_exactly_the_messages_of_the_code_and_exercises(tmp_path):
    fresh = tmp_path / "fresh.pot"
    catalogs.write(fresh, catalogs.template())
    want, have = catalogs.msgids(catalogs.read(fresh)), catalogs.msgids(catalogs.read(catalogs.POT))
    assert (sorted(want - have), sorted(have - want)) == ([], []), \
        "(missing, obsolete) messages: run python tests/i18n/catalogs.py extract"


def test_every_tr_call_has_a_literal_message():
    assert catalogs.non_literal_calls() == []


def test_exercise_texts_are_in_the_pot():
    texts = {text for text, _ in catalogs.exercise_messages()}
    assert texts and texts <= catalogs.msgids(catalogs.read(catalogs.POT))


@pytest.mark.parametrize("lang", LANGS)
def test_po_has_the_messages_of_the_pot(lang):
    pot, po = (catalogs.msgids(catalogs.read(p)) for p in (catalogs.POT, catalogs.po_path(lang)))
    assert (sorted(pot - po), sorted(po - pot)) == ([], []), \
        "(missing, obsolete) messages: run python tests/i18n/catalogs.py update"


@pytest.mark.parametrize("lang", LANGS)
def test_translations_keep_the_placeholders_and_none_is_fuzzy(lang):
    pot = catalogs.msgids(catalogs.read(catalogs.POT))
    assert catalogs.po_problems(lang, pot, allow_untranslated=True) == []


@pytest.mark.translations
@pytest.mark.parametrize("lang", LANGS)
def test_WAITS_FOR_TRANSLATORS_every_message_is_translated(lang):
    """Fails until the translators fill tfteach/locale/<lang>/LC_MESSAGES/tfteach.po (then
    ``python tests/i18n/catalogs.py compile``); deselect with ``-m "not translations"``."""
    po = catalogs.read(catalogs.po_path(lang), lang)
    untranslated = [m.id for m in po if m.id and not catalogs.translated(m)]
    assert untranslated == [], f"{len(untranslated)} of {len(catalogs.msgids(po))} untranslated"


@pytest.mark.parametrize("lang", LANGS)
def test_mo_matches_its_po(lang):
    assert catalogs.mo_problems(lang) == []


def test_check_command_passes_except_for_missing_translations():
    done = subprocess.run([sys.executable, "tests/i18n/catalogs.py", "check",
                           "--allow-untranslated"], cwd=catalogs.ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("lang", LANGS)
def test_compiled_catalogs_are_tracked_and_not_ignored_so_the_wheel_ships_them(lang):
    """The wheel takes every file under tfteach/ that git does not ignore."""
    path = str(catalogs.mo_path(lang).relative_to(catalogs.ROOT))
    ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=catalogs.ROOT)
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", path], cwd=catalogs.ROOT,
                             capture_output=True)
    assert (ignored.returncode, tracked.returncode) == (1, 0)


def test_placeholders_ignore_doubled_braces():
    assert catalogs.placeholders("feed_dict={{{name}: v}} of {shape:.1f}") == \
        {"{name}": 1, "{shape:.1f}": 1}


# ---- tr() and the language -------------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGS)
def test_tr_gives_an_unknown_message_in_english(lang):
    assert tr("no such message, {n} times", lang=lang, n=3) == "no such message, 3 times"


def test_tr_without_fields_keeps_braces():
    assert tr("e.g. {'old_name': v}", lang="ko") == "e.g. {'old_name': v}"


def test_unknown_tfteach_lang_means_english(no_language_set, monkeypatch):
    monkeypatch.setenv("TFTEACH_LANG", "xx")
    assert (language(), tr("Hint")) == ("en", "Hint")


@pytest.mark.parametrize("tag, lang", [("ko_KR.UTF-8", "ko"), ("zh-Hans", "zh"), ("ru_RU", "ru"),
                                       ("zh_CN.UTF-8", "zh"), ("en_US", "en"), ("fr_FR", None)])
def test_locale_tags_normalise_to_a_language(tag, lang):
    assert normalize(tag) == lang


def _notebook(tmp_path: Path, lang: str) -> Path:
    path = tmp_path / f"lesson_{lang}.ipynb"
    path.write_text(json.dumps({"cells": [], "metadata": {"tfteach": {"lang": lang}},
                                "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_tfteach_lang_beats_the_notebook_and_the_locale(no_language_set, monkeypatch, tmp_path):
    monkeypatch.setenv("JPY_SESSION_NAME", str(_notebook(tmp_path, "ko")))
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.setenv("TFTEACH_LANG", "ru")
    assert language() == "ru"


def test_the_notebook_language_beats_the_locale(no_language_set, monkeypatch, tmp_path):
    monkeypatch.setenv("JPY_SESSION_NAME", str(_notebook(tmp_path, "ko")))
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert language() == "ko"


def test_the_notebook_language_is_passed_on_in_tfteach_lang(no_language_set, monkeypatch,
                                                             tmp_path):
    monkeypatch.setenv("JPY_SESSION_NAME", str(_notebook(tmp_path, "zh")))
    language()
    assert os.environ["TFTEACH_LANG"] == "zh"


def test_the_locale_gives_the_language_without_a_notebook(no_language_set, monkeypatch):
    monkeypatch.setenv("LANG", "ru_RU.UTF-8")
    assert language() == "ru"


def test_a_locale_in_another_language_means_english(no_language_set, monkeypatch):
    monkeypatch.setenv("LANG", "ko_KR.UTF-8")
    monkeypatch.setenv("LC_ALL", "fr_FR.UTF-8")
    assert language() == "en"


def test_no_language_anywhere_means_english(no_language_set):
    assert language() == "en"


# ---- a learner's script ----------------------------------------------------------------------

WRONG_FEED = """\
import tfteach as tf
x = tf.placeholder(tf.float32, [None, 3])
with tf.Session() as sess:
    sess.run(x * 2, feed_dict={x: [[1.0, 2.0]]})
"""
UNINITIALIZED = """\
import tfteach as tf
v = tf.Variable(1.0, name="v")
with tf.Session() as sess:
    sess.run(v + 1)
"""
# program, the exception line's start, the hint's message and fields
PROGRAMS = {
    "wrong_feed": (WRONG_FEED, "ValueError: ", "reshape the value to {shape} (? means any "
                   "size), e.g. x.reshape(-1, ...).", {"shape": "(?, 3)"}),
    "uninitialized": (UNINITIALIZED, "FailedPreconditionError: ", "run "
                      "sess.run(tf.global_variables_initializer()) once after creating the "
                      "session (variables belong to a session and start uninitialized).", {}),
}
@pytest.fixture(scope="module")
def run_script(tmp_path_factory):
    """``run(program, lang)``: (TF's message, the hint line) of the error the script ends
    with, run as ``python script.py`` with ``TFTEACH_LANG=lang`` (each run once)."""
    folder, runs = tmp_path_factory.mktemp("scripts"), {}

    def run(program: str, lang: str) -> tuple[str, str]:
        if (program, lang) not in runs:
            source, start, _, _ = PROGRAMS[program]
            (folder / f"{program}.py").write_text(source)
            env = {k: v for k, v in os.environ.items() if k not in _LANG_ENV}
            env.update(TFTEACH_LANG=lang, PYTHONPATH=str(catalogs.ROOT))
            done = subprocess.run([sys.executable, f"{program}.py"], cwd=folder, env=env,
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 1 and start in done.stderr, done.stderr
            error = done.stderr[done.stderr.rindex(start) + len(start):].rstrip("\n")
            message, _, hint = error.rpartition("\n")
            runs[program, lang] = (message, hint)
        return runs[program, lang]
    return run


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("lang", LANGS)
def test_script_keeps_tf_message_in_english_and_writes_the_hint_in_the_language(
        program, lang, run_script):
    message, hint = run_script(program, lang)
    english_message, english_hint = run_script(program, "en")
    _, _, msgid, fields = PROGRAMS[program]
    assert english_hint == f"Hint: {tr(msgid, lang='en', **fields)}"
    assert (message, hint) == (english_message,
                               hint_line(tr(msgid, lang=lang, **fields), lang=lang))


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("lang", LANGS)
def test_script_hint_differs_from_english_once_translated(program, lang, run_script):
    _, _, msgid, _ = PROGRAMS[program]
    if i18n.catalog(lang).gettext(msgid) == msgid or hint_label(lang) == "Hint: ":
        pytest.skip(f"the {lang} catalog does not translate this hint (or 'Hint: ') yet: "
                    f"translators fill tfteach/locale/{lang}/LC_MESSAGES/tfteach.po")
    assert run_script(program, lang)[1] != run_script(program, "en")[1]

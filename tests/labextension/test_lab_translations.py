"""The extension's translations: every label the TypeScript passes to ``trans.__`` /
``trans._n`` has a Korean, Chinese and Russian translation in labextension/locale/<lang>.po
with the English placeholders, and JupyterLab's server loads the JSON built from them.

No browser: test_lab_translations_browser.py shows them in a real JupyterLab.
"""
from __future__ import annotations

import importlib.util
import sys
from collections import Counter

import pytest
from labharness import LABEXTENSION_SRC

LANGS = ("ko", "zh", "ru")
# How many plural forms each language has (its .po's Plural-Forms).
PLURAL_FORMS = {"ko": 1, "zh": 1, "ru": 3}


def _load_build():
    path = LABEXTENSION_SRC / "locale" / "build.py"
    spec = importlib.util.spec_from_file_location("tfteach_lab_locale_build", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module      # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


build = _load_build()
SOURCE, NOT_LITERAL = build.extract()


def catalog(lang: str) -> dict:
    return build.read_po(LABEXTENSION_SRC / "locale" / f"{lang}.po")[1]


def test_the_source_has_labels_to_translate():
    assert len(SOURCE) >= 60
    assert "tfteach lessons" in SOURCE and SOURCE["%1 node"].plural == "%1 nodes"


def test_every_translated_label_is_a_string_literal():
    assert NOT_LITERAL == [], "the tests and build.py read the English from the call itself"


@pytest.mark.parametrize("lang", LANGS)
def test_every_label_has_a_translation(lang):
    messages = catalog(lang)
    missing = [m for m in SOURCE if m not in messages or not messages[m].translated]
    assert missing == [], f"untranslated in locale/{lang}.po (fuzzy counts as untranslated)"


@pytest.mark.parametrize("lang", LANGS)
def test_plural_labels_are_plural_in_the_translation(lang):
    messages = catalog(lang)
    wrong = [m for m, source in SOURCE.items() if m in messages
             and (messages[m].plural != source.plural
                  or source.plural and len(messages[m].msgstr) != PLURAL_FORMS[lang])]
    assert wrong == [], f"msgid_plural or number of forms differ from the source in {lang}.po"


@pytest.mark.parametrize("lang", LANGS)
def test_translations_keep_the_english_placeholders(lang):
    messages = catalog(lang)
    wrong = []
    for msgid, source in SOURCE.items():
        english = Counter(build.PLACEHOLDER.findall(source.plural or msgid))
        for form in messages[msgid].msgstr if msgid in messages else []:
            if Counter(build.PLACEHOLDER.findall(form)) != english:
                wrong.append((msgid, form))
    assert wrong == []


@pytest.mark.parametrize("lang", LANGS)
def test_no_translation_is_of_a_label_the_source_no_longer_has(lang):
    assert sorted(set(catalog(lang)) - set(SOURCE)) == []


def test_shipped_json_is_built_from_the_po_files():
    assert build.main(["--check"]) == 0, "run python labextension/locale/build.py"


def test_one_form_plurals_get_the_second_form_jupyterlab_needs():
    header, messages = build.read_po(LABEXTENSION_SRC / "locale" / "ko.po")
    data = build.jed(header, messages, "ko_KR", "0")
    assert data["%1 node"] == ["노드 %1개", ""]
    assert data[""]["language"] == "ko-KR" and data[""]["domain"] == "tfteach"


@pytest.mark.parametrize("locale", ["ko_KR", "zh_CN", "ru_RU"])
def test_jupyterlab_server_serves_the_translations_for_the_locale(locale):
    translation_utils = pytest.importorskip("jupyterlab_server.translation_utils")
    packs, _ = translation_utils.get_language_packs()
    assert locale in packs, f"install jupyterlab-language-pack-{locale.replace('_', '-')}"
    data, message = translation_utils.get_language_pack(locale)
    assert "tfteach" in data, (
        "no jupyterlab.locale entry point for tfteach: reinstall it (pip install -e .)\n"
        + message)
    lang = locale.split("_")[0]
    assert data["tfteach"]["tfteach lessons"] == catalog(lang)["tfteach lessons"].msgstr

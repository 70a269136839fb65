"""The lesson tests' helpers for the runtime's text (no kernel): a message's pattern is built
from its translation, matches its fields and nothing but its literal text."""
from __future__ import annotations

import gettext
import re

import lesson_tools
import pytest
from lesson_tools import message_pattern, plural_pattern


class _Korean(gettext.NullTranslations):
    """A catalog that translates two messages, fields in another order."""

    def gettext(self, message):
        return {"transfer {tensor}: {src} -> {dst} ({size})": "{src}에서 {dst}(으)로 {tensor} 전송 "
                                                               "({size})"}.get(message, message)

    def ngettext(self, singular, plural, n):
        return "전송 {n}개" if singular == "{n} transfer" else super().ngettext(singular, plural, n)


@pytest.fixture
def korean(monkeypatch):
    monkeypatch.setattr(lesson_tools, "catalog", lambda lang: _Korean() if lang == "ko"
                        else gettext.NullTranslations())


def test_a_pattern_follows_the_translation_not_the_english_text(korean):
    pattern = message_pattern("transfer {tensor}: {src} -> {dst} ({size})", "ko")
    found = re.fullmatch(pattern, "GPU:0에서 CPU:0(으)로 a:0 전송 (4 B)")
    assert found.group("tensor", "src", "dst", "size") == ("a:0", "GPU:0", "CPU:0", "4 B")
    assert not re.search(pattern, "  transfer a:0: GPU:0 -> CPU:0 (4 B)")


def test_the_transfers_of_a_timeline_summary_are_read_in_its_language(korean):
    summary = "Timeline: 2 devices\n  GPU:0에서 CPU:0(으)로 a:0 전송 (4 B)\n  CPU:0: total (Add)"
    assert lesson_tools.timeline_transfers(summary, "ko") == [("a:0", "GPU:0", "CPU:0", "4 B")]
    assert lesson_tools.timeline_transfers(summary, "en") == []


def test_a_plural_pattern_takes_the_form_for_its_number(korean):
    assert re.fullmatch(plural_pattern("{n} transfer", "{n} transfers", 3, "ko"), "전송 3개")
    assert not re.search(plural_pattern("{n} transfer", "{n} transfers", 3, "ko"), "전송 2개")
    assert re.fullmatch(plural_pattern("{n} transfer", "{n} transfers", 1, "en"), "1 transfer")


def test_literal_text_is_escaped_and_a_field_given_twice_must_repeat():
    pattern = message_pattern("create it with name='{name}', e.g. tf.matmul(a, b, name='{name}'),"
                              " in the %%placement cell", "en", name=r"\w+")
    assert re.fullmatch(pattern, "create it with name='x', e.g. tf.matmul(a, b, name='x'), in "
                                 "the %%placement cell")
    assert not re.fullmatch(pattern, "create it with name='x', e.g. tf.matmul(a, b, name='y'), "
                                     "in the %%placement cell")
    assert not re.search(message_pattern("Not yet: {what}.", "en"), "Not yet: it!")


def test_a_field_the_message_lacks_is_an_error():
    with pytest.raises(ValueError):
        message_pattern("Not yet: {what}.", "en", wat=".+")

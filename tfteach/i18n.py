"""Text for learners in their language: English, Korean, Chinese or Russian.

Every sentence tfteach writes for a learner (hints, check feedback, the magics' tables and
headings, progress and cluster-status lines, loss-curve summaries) goes through :func:`tr`
(or :func:`trn` where it counts something),
which looks the English text up in a gettext catalog (``tfteach/locale/<lang>/LC_MESSAGES/
tfteach.mo``) and fills in its ``{fields}``::

    raise errors.InvalidArgumentError(
        message, hint=tr("feed {name} a value of shape {shape}", name=name, shape=shape))

TensorFlow's own error messages are never translated: learners search for them. Only the
``Hint:`` line (and its word "Hint") is: :func:`hint_line` (``提示：`` in Chinese).

Lists, numbers and units follow the language too, from Babel's CLDR data: :func:`join` (a
list in a sentence), :func:`clauses` (a summary's facts), :func:`number`, :func:`significant`,
:func:`percent`, :func:`size` and :func:`duration_us` (``195,9 МиБ`` with a no-break space in
Russian). English keeps Python's formats (``a, b, c``, ``195.9 MiB``, ``20%``).

The language is, first found: ``TFTEACH_LANG``; the notebook's own (a lesson's metadata
``{"tfteach": {"lang": "ko"}}``, read from the notebook Jupyter started this kernel for);
the system locale (``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG``); else English.
A language found in a notebook is written to ``TFTEACH_LANG``, so the cluster tasks a lesson
starts speak it too. ``tests/i18n/catalogs.py`` extracts the messages and compiles the
catalogs.
"""
from __future__ import annotations

import functools
import math
import gettext
import json
import os
from pathlib import Path
from typing import Iterable

LANGUAGES = ("en", "ko", "zh", "ru")
DOMAIN = "tfteach"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
_LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def normalize(tag: str | None) -> str | None:
    """The language of a locale tag (``ko``, ``ko_KR.UTF-8``, ``zh-Hans``, ``ru-RU``), or
    None when it is not one of :data:`LANGUAGES`."""
    if not tag:
        return None
    code = tag.strip().replace("-", "_").split("_")[0].split(".")[0].lower()
    return code if code in LANGUAGES else None


def language() -> str:
    """The language learners' text is written in now (one of :data:`LANGUAGES`)."""
    chosen = os.environ.get("TFTEACH_LANG")
    if chosen:
        return normalize(chosen) or "en"
    found = notebook_language(os.environ.get("JPY_SESSION_NAME"))
    if found:
        os.environ["TFTEACH_LANG"] = found
        return found
    return system_language()


def system_language() -> str:
    """The language the system locale asks for, or English."""
    for variable in _LOCALE_VARIABLES:
        for tag in os.environ.get(variable, "").split(":"):
            if normalize(tag):
                return normalize(tag)
            if tag:
                return "en"         # a locale is set, in a language we do not have
    return "en"


@functools.lru_cache(maxsize=8)
def notebook_language(session: str | None) -> str | None:
    """The language in the metadata of the notebook Jupyter started this kernel for
    (``JPY_SESSION_NAME`` holds its path), or None."""
    if not session:
        return None
    path = Path(session)
    for candidate in (path, Path.cwd() / path.name):
        try:
            metadata = json.loads(candidate.read_text(encoding="utf-8")).get("metadata", {})
        except (OSError, ValueError, AttributeError):
            continue
        return normalize((metadata.get("tfteach") or {}).get("lang"))
    return None


@functools.lru_cache(maxsize=len(LANGUAGES))
def catalog(lang: str) -> gettext.NullTranslations:
    """The compiled catalog of ``lang`` (English: the messages as written)."""
    if lang == "en":
        return gettext.NullTranslations()
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang], fallback=True)


def N_(message: str) -> str:
    """Marks ``message`` for the catalog where it is written; :func:`tr` translates it where
    it is shown (e.g. a table's column names, kept in English as keys)."""
    return message


def tr(message: str, /, lang: str | None = None, **fields: object) -> str:
    """``message`` in ``lang`` (default: :func:`language`), with its ``{fields}`` filled."""
    text = catalog(lang or language()).gettext(message)
    return text.format(**fields) if fields else text


def trn(singular: str, plural: str, n: int, /, lang: str | None = None,
        **fields: object) -> str:
    """The form of a message for the number ``n`` (``{n} worker``/``{n} workers``) in
    ``lang``, with ``n`` and the other ``{fields}`` filled."""
    text = catalog(lang or language()).ngettext(singular, plural, n)
    return text.format(n=n, **fields)


# ---- lists, numbers and units in the learner's language (CLDR data, through Babel) -----------

_BABEL_LOCALES = {"en": "en", "ko": "ko", "zh": "zh_Hans", "ru": "ru"}
_CLAUSE_PATTERNS = {"zh": "{0}，{1}"}


def join(items: Iterable[object], lang: str | None = None) -> str:
    """``items`` as a list inside a sentence: ``a, b, c`` in English (CLDR's ``unit``
    style, so English reads as it always has), ``a, b 및 c``, ``a、b和c``, ``a, b и c``
    (CLDR's ``standard`` style)."""
    from babel.lists import format_list
    lang = lang or language()
    texts = [str(item) for item in items]
    if not texts:
        return ""
    style = "unit" if lang == "en" else "standard"
    return format_list(texts, style=style, locale=_BABEL_LOCALES[lang])


def clauses(items: Iterable[object], lang: str | None = None) -> str:
    """Separate facts of a status or summary line, with no "and": ``3 devices, 5 ops``
    (CLDR's list separator; Chinese separates clauses with the full-width comma, keeping
    ``、`` for the items of a list)."""
    from babel.core import Locale
    lang = lang or language()
    middle = _CLAUSE_PATTERNS.get(lang) or \
        Locale.parse(_BABEL_LOCALES[lang]).list_patterns["standard"]["middle"]
    texts = [str(item) for item in items]
    out = texts[0] if texts else ""
    for text in texts[1:]:
        out = middle.format(out, text)
    return out


def number(x: float, digits: int = 1, lang: str | None = None) -> str:
    """``x`` with ``digits`` decimals and the language's decimal sign (``195.9``, ``195,9``;
    no grouping, as Python's ``f"{x:.1f}"``)."""
    from babel.numbers import format_decimal
    pattern = "0." + "0" * digits if digits > 0 else "0"
    return format_decimal(x, format=pattern, locale=_BABEL_LOCALES[lang or language()])


def significant(x: float, digits: int = 3, lang: str | None = None) -> str:
    """``x`` to ``digits`` significant digits (as ``f"{x:.3g}"`` for 0.001 <= x < 10**digits),
    written in the language."""
    if not math.isfinite(x):
        return str(x)
    magnitude = math.floor(math.log10(abs(x))) + 1 if x else 1
    decimals = max(0, digits - magnitude)
    text = number(round(x, decimals), decimals, lang)
    return _trim_zeros(text) if decimals else text


def _trim_zeros(text: str) -> str:
    """``1.50`` -> ``1.5``, ``2,0`` -> ``2`` (as ``:g`` does), whatever the decimal sign."""
    head = text.rstrip("0")
    return head[:-1] if head and not head[-1].isdigit() else head


def percent(fraction: float, digits: int = 0, lang: str | None = None) -> str:
    """``fraction`` (0.2) as a percentage: ``20%``, ``20 %`` in Russian (no-break space)."""
    from babel.core import Locale
    from babel.numbers import format_percent
    locale = Locale.parse(_BABEL_LOCALES[lang or language()])
    pattern = locale.percent_formats[None].pattern.split(";")[0]
    if digits > 0:
        pattern = pattern.replace("0", "0." + "0" * digits, 1)
    return format_percent(fraction, format=pattern, locale=locale)


def size(n_bytes: int | float | None, lang: str | None = None) -> str:
    """A size in bytes: ``?`` when unknown, else ``512 B``, ``4.0 KiB``, ``195.9 MiB``,
    ``2.0 GiB`` (Russian: ``195,9 МиБ``, a no-break space before the unit)."""
    if n_bytes is None:
        return "?"
    value = float(n_bytes)
    if value < 1024:
        return tr("{value} B", lang=lang, value=number(value, 0, lang))
    for unit in ("KiB", "MiB"):
        value /= 1024
        if value < 1024:
            return _unit(unit, number(value, 1, lang), lang)
    return _unit("GiB", number(value / 1024, 1, lang), lang)


def _unit(unit: str, value: str, lang: str | None) -> str:
    texts = {"KiB": N_("{value} KiB"), "MiB": N_("{value} MiB"), "GiB": N_("{value} GiB"),
             "µs": N_("{value} µs"), "ms": N_("{value} ms"), "s": N_("{value} s")}
    return tr(texts[unit], lang=lang, value=value)  # i18n: dynamic


def duration_us(us: float, lang: str | None = None) -> str:
    """A duration in microseconds: ``850 µs``, ``1.25 ms``, ``2.5 s`` (three significant
    digits; Russian ``1,25 мс``)."""
    if us < 1000:
        return _unit("µs", number(us, 0, lang), lang)
    if us < 999_500:
        return _unit("ms", significant(us / 1000, 3, lang), lang)
    return _unit("s", significant(us / 1_000_000, 3, lang), lang)


# ---- the hint line ---------------------------------------------------------------------------

def hint_line(text: str, lang: str | None = None) -> str:
    """``Hint: text`` in ``lang``: the word and its punctuation come from the catalog
    (``힌트: …``, ``提示：…``, ``Подсказка: …``)."""
    return tr("Hint: {text}", lang=lang, text=text)


def hint_label(lang: str | None = None) -> str:
    """What :func:`hint_line` writes before the text, spacing included (``Hint: ``,
    ``提示：``), e.g. to set it in bold."""
    return hint_line("\0", lang).split("\0", 1)[0]

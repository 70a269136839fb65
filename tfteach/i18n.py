"""Text for learners in their language: English, Korean, Chinese or Russian.

Every sentence tfteach writes for a learner (hints, check feedback, the magics' tables and
headings, progress and cluster-status lines, loss-curve summaries) goes through :func:`tr`
(or :func:`trn` where it counts something),
which looks the English text up in a gettext catalog (``tfteach/locale/<lang>/LC_MESSAGES/
tfteach.mo``) and fills in its ``{fields}``::

    raise errors.InvalidArgumentError(
        message, hint=tr("feed {name} a value of shape {shape}", name=name, shape=shape))

TensorFlow's own error messages are never translated: learners search for them. Only the
``Hint:`` line (and its word "Hint") is.

The language is, first found: ``TFTEACH_LANG``; the notebook's own (a lesson's metadata
``{"tfteach": {"lang": "ko"}}``, read from the notebook Jupyter started this kernel for);
the system locale (``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG``); else English.
A language found in a notebook is written to ``TFTEACH_LANG``, so the cluster tasks a lesson
starts speak it too. ``tests/i18n/catalogs.py`` extracts the messages and compiles the
catalogs.
"""
from __future__ import annotations

import functools
import gettext
import json
import os
from pathlib import Path

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

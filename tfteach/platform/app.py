"""``tf.app``: ``run(main=None, argv=None)`` and ``flags``, as TF 1.x has them.

``run`` parses the flags from ``argv`` (default ``sys.argv``) keeping the ones no flag
defines, then calls ``sys.exit(main(argv))`` through absl's ``app.run``, as TF does.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, NoReturn

from absl.app import run as _run

from tfteach.errors import missing_attribute
from tfteach.platform import flags


def _parse_flags_tolerate_undef(argv: list[str] | None) -> list[str]:
    """Parse the flags, returning the arguments no flag takes (absl alone would fail)."""
    return flags.FLAGS(sys.argv if argv is None else argv, known_only=True)


def run(main: Callable[[list[str]], Any] | None = None,
        argv: list[str] | None = None) -> NoReturn:
    """Parse the flags, then ``sys.exit(main(argv))`` (``main``: ``__main__.main``)."""
    main = main or sys.modules["__main__"].main
    _run(main=main, argv=argv, flags_parser=_parse_flags_tolerate_undef)


__all__ = ["flags", "run"]


def __getattr__(name: str):
    """A name tf.app has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.platform.app", f"tf.app.{name}", name)

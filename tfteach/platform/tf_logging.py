"""``tf.logging``: TF 1.x's logging functions, over Python's ``logging``.

tfteach's own modules log under the ``tfteach`` logger (``tfteach.train`` for hooks and
sessions); ``tf.logging.set_verbosity(tf.logging.INFO)`` lets their INFO lines through, as
TF's does for ``tensorflow``. The first use of this module gives that logger a handler on
stderr that writes TF's plain format (``INFO:tfteach.train:loss = 2.3, step = 1``), unless
it or the root logger already has one.
"""
from __future__ import annotations

import logging
import sys
from typing import Any

__all__ = ["DEBUG", "INFO", "WARN", "ERROR", "FATAL", "set_verbosity", "get_verbosity", "log",
           "debug", "info", "warning", "warn", "error", "fatal", "vlog", "log_if",
           "log_every_n", "log_first_n", "flush"]

DEBUG, INFO, WARN, ERROR, FATAL = (logging.DEBUG, logging.INFO, logging.WARN, logging.ERROR,
                                   logging.FATAL)
_logger = logging.getLogger("tfteach")
_counts: dict[tuple, int] = {}


def _with_handler() -> logging.Logger:
    if not _logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
        _logger.addHandler(handler)
    return _logger


def set_verbosity(v: int) -> None:
    """Show messages of level ``v`` and above (``tf.logging.INFO``, ``WARN``, ...)."""
    _with_handler().setLevel(v)


def get_verbosity() -> int:
    """The level set by ``set_verbosity`` (WARN until then, as TF)."""
    return _logger.getEffectiveLevel()


def log(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    _with_handler().log(level, msg, *args, **kwargs)


def debug(msg: Any, *args: Any, **kwargs: Any) -> None:
    log(DEBUG, msg, *args, **kwargs)


def info(msg: Any, *args: Any, **kwargs: Any) -> None:
    log(INFO, msg, *args, **kwargs)


def warning(msg: Any, *args: Any, **kwargs: Any) -> None:
    log(WARN, msg, *args, **kwargs)


warn = warning


def error(msg: Any, *args: Any, **kwargs: Any) -> None:
    log(ERROR, msg, *args, **kwargs)


def fatal(msg: Any, *args: Any, **kwargs: Any) -> None:
    log(FATAL, msg, *args, **kwargs)


def vlog(level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
    log(level, msg, *args, **kwargs)


def log_if(level: int, msg: Any, condition: bool, *args: Any) -> None:
    if condition:
        log(level, msg, *args)


def _nth(level: int, msg: Any, n: int, args: tuple, first_only: bool) -> None:
    """Log the call site's 1st, (n+1)th, ... message (``first_only``: its first ``n``)."""
    caller = sys._getframe(2)
    key = (caller.f_code.co_filename, caller.f_lineno)
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if (count < n) if first_only else (count % n == 0):
        log(level, msg, *args)


def log_every_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log this line's message once every ``n`` calls (the first call included)."""
    _nth(level, msg, n, args, first_only=False)


def log_first_n(level: int, msg: Any, n: int, *args: Any) -> None:
    """Log this line's message for its first ``n`` calls only."""
    _nth(level, msg, n, args, first_only=True)


def flush() -> None:
    for handler in _logger.handlers:
        handler.flush()

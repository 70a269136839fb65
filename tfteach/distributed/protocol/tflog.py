"""Log lines of the cluster runtime, where a learner sees them.

Messages go to the ``tfteach.distributed`` logger. When nobody configured logging (the
usual case in a notebook or a plain script) they are written to stderr in TF's style
(``I tfteach] Started server with target: grpc://localhost:2222``), like TF's C++ log.
State: none. Never pass a secret (the cluster token) to these functions.
"""
from __future__ import annotations

import logging
import sys

logger = logging.getLogger("tfteach.distributed")


def info(message: str) -> None:
    """Log ``message`` at INFO level (stderr if logging is not configured)."""
    _emit(logging.INFO, "I", message)


def warning(message: str) -> None:
    """Log ``message`` at WARNING level (stderr if logging is not configured)."""
    _emit(logging.WARNING, "W", message)


def _emit(level: int, letter: str, message: str) -> None:
    if logger.hasHandlers():
        logger.log(level, message)
    else:
        print(f"{letter} tfteach] {message}", file=sys.stderr, flush=True)

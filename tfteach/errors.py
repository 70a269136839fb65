"""TensorFlow's error classes, written for learners.

Every runtime failure in tfteach is an ``OpError`` subclass with TF's class name and TF's
message text, so code written against ``tf.errors`` works unchanged. On top of TF we add a
``hint``: one line starting ``Hint:`` that tells a learner what to do next. The hint is part
of ``str(err)`` but not of ``err.message``, which stays TF's text, in English; the hint and
its word "Hint" are in the learner's language (:mod:`tfteach.i18n`).

Invariants: ``error_code`` matches TF's ``error_codes.proto``; errors carry no secrets.
"""
from __future__ import annotations

from typing import Any

from tfteach.i18n import hint_line, tr

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


def with_hint(message: str, *hints: str) -> str:
    """``message`` followed by one ``Hint:`` line per hint, the word in the learner's
    language (``message`` itself is left as it is: TF's text stays English)."""
    return "\n".join([message] + [hint_line(hint) for hint in hints if hint])


class OpError(Exception):
    """A failed graph operation: TF's message, the op (if known), and a hint for learners.

    Built as tfteach does, ``XError(message, op=None, hint=None)``, or as TF does,
    ``XError(node_def, op, message)`` (``OpError(node_def, op, message, error_code)``): a
    first argument that is not a string is TF's ``node_def``.
    """

    error_code = UNKNOWN

    def __init__(self, *args: Any, message: str | None = None, op: Any = None,
                 hint: str | None = None, node_def: Any = None,
                 error_code: int | None = None) -> None:
        if len(args) >= 3 and not isinstance(args[0], str):     # TF's (node_def, op, message)
            node_def, op, message, *rest = args
            if rest:
                error_code = rest[0]
        elif args:
            message, op, hint, node_def, error_code = (
                list(args) + [op, hint, node_def, error_code][len(args) - 1:])[:5]
        self.message = "" if message is None else message
        self.op = op
        self.hint = hint
        self.node_def = node_def
        if error_code is not None:
            self.error_code = error_code
        super().__init__(str(self))

    @property
    def experimental_payloads(self) -> dict:
        """TF's status payloads (none in tfteach)."""
        return {}

    def __str__(self) -> str:
        if self.hint:
            return with_hint(self.message, self.hint)
        return self.message

    def __reduce__(self):
        return (_rebuild, (type(self).__name__, self.message, self.hint))


def _rebuild(cls_name: str, message: str, hint: str | None) -> OpError:
    return exception_type_from_name(cls_name)(message, hint=hint)


def _make(name: str, code: int) -> type:
    cls = type(name, (OpError,), {"error_code": code, "__doc__": f"TF's {name} (code {code})."})
    cls.__module__ = __name__
    return cls


CancelledError = _make("CancelledError", CANCELLED)
UnknownError = _make("UnknownError", UNKNOWN)
InvalidArgumentError = _make("InvalidArgumentError", INVALID_ARGUMENT)
DeadlineExceededError = _make("DeadlineExceededError", DEADLINE_EXCEEDED)
NotFoundError = _make("NotFoundError", NOT_FOUND)
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS)
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED)
UnauthenticatedError = _make("UnauthenticatedError", UNAUTHENTICATED)
ResourceExhaustedError = _make("ResourceExhaustedError", RESOURCE_EXHAUSTED)
FailedPreconditionError = _make("FailedPreconditionError", FAILED_PRECONDITION)
AbortedError = _make("AbortedError", ABORTED)
OutOfRangeError = _make("OutOfRangeError", OUT_OF_RANGE)
UnimplementedError = _make("UnimplementedError", UNIMPLEMENTED)
InternalError = _make("InternalError", INTERNAL)
UnavailableError = _make("UnavailableError", UNAVAILABLE)
DataLossError = _make("DataLossError", DATA_LOSS)

_BY_CODE = {cls.error_code: cls for cls in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError,
    AlreadyExistsError, PermissionDeniedError, UnauthenticatedError, ResourceExhaustedError,
    FailedPreconditionError, AbortedError, OutOfRangeError, UnimplementedError, InternalError,
    UnavailableError, DataLossError)}


def exception_type_from_error_code(code: int) -> type:
    """The OpError subclass for a TF error code (UnknownError for codes we do not know)."""
    return _BY_CODE.get(code, UnknownError)


def exception_type_from_name(name: str) -> type:
    """The OpError subclass with this class name (UnknownError if there is none)."""
    for cls in _BY_CODE.values():
        if cls.__name__ == name:
            return cls
    return UnknownError


def error_code_from_exception_type(cls: type) -> int:
    """TF's error code for an OpError subclass."""
    return getattr(cls, "error_code", UNKNOWN)


def missing_attribute(module: str, symbol: str, name: str) -> AttributeError:
    """The AttributeError for ``tf.<symbol>`` that tfteach lacks (``module``: the tfteach
    module asked, ``name``: the attribute). Private and dunder names (``__wrapped__``,
    ``_ipython_display_``: what IPython and ``hasattr`` probe) get Python's plain message."""
    message = f"module '{module}' has no attribute '{name}'"
    if name.startswith("_"):
        return AttributeError(message)
    return AttributeError(with_hint(message, tr(
        "tfteach has no {symbol}: it implements only part of the TensorFlow 1.x API (or the "
        "name is misspelled). To run this cell on real TensorFlow, install it (pip install "
        "tensorflow) and start the cell with %%placement --backend tensorflow.",
        symbol=symbol)))

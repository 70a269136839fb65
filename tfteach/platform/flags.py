"""``tf.flags`` / ``tf.app.flags``: absl's flags, as TensorFlow routes them.

As in TF: ``FLAGS`` is absl's ``FLAGS`` behind a wrapper that parses ``sys.argv`` on the
first read of a flag if nothing parsed it yet (absl alone raises), and the ``DEFINE_*``
functions also take TF 1.x's old keyword names (``flag_name``, ``default_value``,
``docstring``). The flags are absl's own, shared with anything else in the process that
uses absl (TensorFlow too), exactly as under TF.
"""
from __future__ import annotations

import functools
import logging
import sys
from typing import Any, Callable

from absl import flags as _absl
from absl.flags import (DEFINE_enum, DEFINE_list, DEFINE_multi_float, DEFINE_multi_integer,
                        DEFINE_multi_string, DEFINE_spaceseplist, Error, FlagValues,
                        IllegalFlagValueError, UnrecognizedFlagError, mark_flag_as_required,
                        mark_flags_as_required)

__all__ = ["DEFINE_bool", "DEFINE_boolean", "DEFINE_enum", "DEFINE_float", "DEFINE_integer",
           "DEFINE_list", "DEFINE_multi_float", "DEFINE_multi_integer", "DEFINE_multi_string",
           "DEFINE_spaceseplist", "DEFINE_string", "Error", "FLAGS", "FlagValues",
           "IllegalFlagValueError", "UnrecognizedFlagError", "mark_flag_as_required",
           "mark_flags_as_required"]

_RENAMED_ARGUMENTS = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _old_names(define: Callable) -> Callable:
    """``define`` accepting TF 1.x's keyword names, with TF's deprecation warning."""
    @functools.wraps(define)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        old = [k for k in _RENAMED_ARGUMENTS if k in kwargs]
        for name in old:
            kwargs[_RENAMED_ARGUMENTS[name]] = kwargs.pop(name)
        if old:
            logging.warning("Use of the keyword argument names (flag_name, default_value, "
                            "docstring) is deprecated, please use (name, default, help) "
                            "instead.")
        return define(*args, **kwargs)
    return wrapper


DEFINE_string = _old_names(_absl.DEFINE_string)
DEFINE_boolean = _old_names(_absl.DEFINE_boolean)
DEFINE_bool = DEFINE_boolean
DEFINE_float = _old_names(_absl.DEFINE_float)
DEFINE_integer = _old_names(_absl.DEFINE_integer)


class _FlagValuesWrapper:
    """absl's FLAGS, parsing ``sys.argv`` when a flag is read before anything parsed."""

    def __init__(self, flags_object: FlagValues) -> None:
        self.__dict__["_wrapped"] = flags_object

    def __getattribute__(self, name: str) -> Any:
        if name == "__dict__":
            return super().__getattribute__(name)
        return self.__dict__["_wrapped"].__getattribute__(name)    # methods: no parsing

    def __getattr__(self, name: str) -> Any:
        wrapped = self.__dict__["_wrapped"]     # a flag's value: parse sys.argv first
        if not wrapped.is_parsed():
            wrapped(sys.argv)
        return wrapped.__getattr__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.__dict__["_wrapped"], name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self.__dict__["_wrapped"], name)

    def __dir__(self) -> list[str]:
        return dir(self.__dict__["_wrapped"])

    def __getitem__(self, name: str) -> Any:
        return self.__dict__["_wrapped"][name]

    def __setitem__(self, name: str, flag: Any) -> None:
        self.__dict__["_wrapped"][name] = flag

    def __contains__(self, name: str) -> bool:
        return name in self.__dict__["_wrapped"]

    def __len__(self) -> int:
        return len(self.__dict__["_wrapped"])

    def __iter__(self) -> Any:
        return iter(self.__dict__["_wrapped"])

    def __str__(self) -> str:
        return str(self.__dict__["_wrapped"])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["_wrapped"](*args, **kwargs)


FLAGS = _FlagValuesWrapper(_absl.FLAGS)

"""Checking lesson exercises, with feedback a learner can act on.

    from tfteach.lessons import check, check_placement
    check_placement(_placement, {"product": "/gpu:1", "total": "/cpu:0"},
                    value=[[44, 56], [98, 128]])
    check(answer, 3, what="the number of GPUs")
    check(rows_for_slow_gpu, exercise="5.2")      # a lesson's exercise: progressive feedback
    solution("5.2")                               # its solution, on request
    quiz("8.Q1")                                  # a "why" question (``notebook.quizzes``)

Each returns a ``Feedback``: truthy when the answer is right, shown in a notebook as a green
(correct) or red (not yet) box listing each problem with a ``Hint:``. A device may be written
any way TF accepts (``GPU:1``, ``/gpu:1``, ``/device:GPU:1`` or a full name); only the parts
given are compared.

A check that names its ``exercise`` takes what it checks, its hints and its expected value
from the package (``tfteach.notebook.exercises``; a predict exercise's answer comes from a
graph the package builds, ``exercise_checks.PREDICTED``), and counts the learner's wrong
tries: the first names the wrong part and the kind of mistake (too high or too low only for
quantities), the second the idea and the lesson's section that teaches it, the third and
later a worked hint; the answer only on request (``solution``). A build exercise's check
(``"kind": "build"``) takes what the learner built (a function, graph, config, server or
``%%placement`` result), runs it on hidden inputs (``exercise_checks.BUILD_CHECKS``) and
refuses typed numbers. Without ``exercise`` a check has no state and says at once what was
expected.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfteach.errors import with_hint
from tfteach.framework.device_spec import DeviceSpec
from tfteach.i18n import tr
from tfteach.notebook import exercise_checks, exercises, quizzes

_FROM_EXERCISE: Any = object()      # "the exercise's answer, from the package"


@dataclass
class Feedback:
    """The outcome of a check: what was checked, what is wrong, and hints."""

    what: str
    problems: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def __bool__(self) -> bool:
        return self.passed

    def text(self) -> str:
        what = tr(self.what)  # i18n: dynamic
        if self.passed:
            return tr("Correct: {what}. Well done!", what=what)
        lines = [tr("Not yet: {what}.", what=what)] + [f"- {p}" for p in self.problems]
        return with_hint("\n".join(lines), *dict.fromkeys(self.hints))

    def html(self) -> str:
        """The box: themed colours (``palette.feedback_style``), `code` in hints as code."""
        from tfteach.notebook.palette import feedback_style
        from tfteach.notebook.style import inline_code

        style = feedback_style("success" if self.passed else "error")
        body = "<br>".join(inline_code(line) for line in self.text().split("\n"))
        return f"<div class='tfteach-check' style='{style}'>{body}</div>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/html": self.html(), "text/plain": self.text()}

    def __repr__(self) -> str:
        return self.text()


def check(actual: Any, expected: Any = _FROM_EXERCISE, what: str | None = None, hint: str = "",
          atol: float = 1e-6, exercise: str | None = None, cluster: Any = None) -> Feedback:
    """Compare ``actual`` with ``expected`` (numbers and arrays within ``atol``).

    With ``exercise`` (e.g. ``"5.2"``) the feedback is progressive, and ``expected`` may be
    left out: the exercise's answer is kept in the package. A build exercise's ``actual`` is
    what the learner built; ``cluster`` is the lesson's LocalCluster where its check runs
    there."""
    if exercise is not None:
        return _check_exercise(exercise, actual, expected, atol, {"cluster": cluster})
    if expected is _FROM_EXERCISE:
        raise TypeError("check() needs the expected value, or exercise='lesson.number'")
    feedback = Feedback(what or "the answer")
    if not _same(actual, expected, atol):
        feedback.problems.append(_expected_got(expected, actual))
        if hint:
            feedback.hints.append(tr(hint))  # i18n: dynamic
    return feedback


def _same(actual: Any, expected: Any, atol: float) -> bool:
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        # element by element: the parts may be arrays of different shapes
        return len(actual) == len(expected) and all(
            _same(a, e, atol) for a, e in zip(actual, expected, strict=True))
    try:
        a, e = np.asarray(actual), np.asarray(expected)
        if a.dtype.kind in "fiub" and e.dtype.kind in "fiub":
            return a.shape == e.shape and bool(np.allclose(a, e, atol=atol))
    except (TypeError, ValueError):
        pass
    return _plain(actual) == _plain(expected)


def _plain(value: Any) -> Any:
    """Tuples as lists, at any depth: an answer kept as JSON compares equal to a tuple."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def solution(exercise: str) -> exercises.Solution:
    """The solution of a lesson's exercise (e.g. ``"10.2"``): its cells and its answer."""
    return exercises.solution(exercise)


def quiz(name: str, answer: str | None = None) -> quizzes.Quiz | quizzes.Verdict:
    """A lesson's "why" question (e.g. ``"8.Q1"``): shown with radio buttons, or graded
    when ``answer`` (a choice's letter) is given."""
    return quizzes.quiz(name, answer)


def _check_exercise(name: str, actual: Any, expected: Any, atol: float,
                    context: dict | None = None) -> Feedback:
    info = exercises.exercise(name)
    feedback = Feedback(info["what"])
    if info.get("kind") == "build":
        if _is_typed(actual):
            feedback.problems.append(tr("this check wants {wants}, not typed values: pass it "
                                        "what you built", wants=tr(info["wants"])))  # i18n: dynamic
            return feedback
        if name not in exercise_checks.DERIVED and name not in exercise_checks.BUILD_CHECKS:
            return check_placement(actual, exercise=name)       # a %%placement exercise
        try:
            if name in exercise_checks.BUILD_CHECKS:
                feedback.problems.extend(exercise_checks.BUILD_CHECKS[name](actual,
                                                                            context or {}))
                return _counted(feedback, name, feedback.passed, actual)
            actual, expected = exercise_checks.DERIVED[name](actual), info["answer"]
        except exercise_checks.WrongKind:
            feedback.problems.append(tr("this check wants {wants}, not {kind}",
                                        wants=tr(info["wants"]),  # i18n: dynamic
                                        kind=type(actual).__name__))
            return feedback
    elif name in exercise_checks.PREDICTED:
        expected = exercise_checks.PREDICTED[name]()
    elif expected is _FROM_EXERCISE:
        expected = info["answer"]
    passed = _same_answer(actual, expected, atol, info)
    if not passed:
        feedback.problems.extend(_directions(actual, expected, atol, info))
    return _counted(feedback, name, passed, actual)


def _counted(feedback: Feedback, name: str, passed: bool, submitted: Any) -> Feedback:
    """Count the try (unless it repeats the last one or the starter) and add its hints."""
    tries = exercises.count_try(name, passed, exercises.fingerprint(submitted))
    if not passed:
        _add_hints(feedback, name, exercises.exercise(name), tries)
    return feedback


def _is_typed(value: Any) -> bool:
    """Whether ``value`` is a typed answer: a number, text, or plain lists/dicts of them."""
    if value is None or isinstance(value, (bool, int, float, str, np.number, np.ndarray)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_typed(v) for v in value)
    if isinstance(value, dict):
        return all(_is_typed(v) for v in value.values())
    return False


def _same_answer(actual: Any, expected: Any, atol: float, info: dict) -> bool:
    if info.get("devices"):
        return _same_devices(actual, expected)
    return _same(actual, expected, atol)


def _same_devices(actual: Any, expected: Any) -> bool:
    """Device answers, compared as DeviceSpecs (``/gpu:1`` is ``/device:GPU:1``)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and set(actual) == set(expected) and all(
            _same_devices(actual[k], v) for k, v in expected.items())
    try:
        return DeviceSpec.from_string(actual).to_string() == \
            DeviceSpec.from_string(expected).to_string()
    except (TypeError, ValueError):
        return False


def _add_hints(feedback: Feedback, name: str, info: dict, tries: int) -> None:
    """The hints for the ``tries``-th wrong try: a direction, then the idea and the section
    that teaches it, then a worked hint; the answer never (only ``solution``)."""
    ask = f"`tfteach.lessons.solution('{name}')`"
    if tries <= 1:
        feedback.hints.append(tr(info["direction"]))  # i18n: dynamic
        feedback.hints.append(tr("a stronger hint comes with the next wrong try; the "
                                 "solution only when you ask for it: {ask}", ask=ask)
                              if exercises.solutions_allowed()
                              else tr("a stronger hint comes with the next wrong try"))
    elif tries < exercises.TRIES_BEFORE_WORKED_HINT:
        feedback.hints.append(tr("the idea: {concept}; the section \"{section}\" of this "
                                 "lesson teaches it", concept=tr(info["concept"]),  # i18n: dynamic
                                 section=tr(info["section"])))  # i18n: dynamic
        feedback.hints.append(tr("a worked hint comes with the next wrong try"))
    else:
        feedback.hints.append(tr(info["hint"]))  # i18n: dynamic
        if exercises.solutions_allowed():
            feedback.hints.append(tr("the whole solution, only if you want it: {ask}", ask=ask))


def _directions(actual: Any, expected: Any, atol: float, info: dict) -> list[str]:
    """What is wrong, without the expected value: which parts, and (quantities only) too high
    or too low."""
    quantity = not info.get("categorical") and not info.get("devices")
    same = (lambda a, e: _same_answer(a, e, atol, info))
    if isinstance(expected, dict) and isinstance(actual, dict):
        missing = [tr("there is no answer for {key}", key=repr(k))
                   for k in expected if k not in actual]
        extra = [tr("{key} is not asked for", key=repr(k)) for k in actual if k not in expected]
        wrong = [_one_direction(repr(k), actual[k], v, quantity)
                 for k, v in expected.items() if k in actual and not same(actual[k], v)]
        return missing + wrong + extra
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        if len(actual) != len(expected):
            return [tr("give {expected} values, not {actual}", expected=len(expected),
                       actual=len(actual))]
        pairs = enumerate(zip(actual, expected, strict=True))
        return [_one_direction(tr("value {n}", n=i + 1), a, e, quantity) for i, (a, e) in pairs
                if not same(a, e)]
    return [_one_direction(tr("the answer"), actual, expected, quantity)]


def _one_direction(label: str, actual: Any, expected: Any, quantity: bool = True) -> str:
    if quantity and _is_number(actual) and _is_number(expected):
        if actual > expected:
            return tr("{label}, {value}, is too high", label=label, value=_show(actual))
        return tr("{label}, {value}, is too low", label=label, value=_show(actual))
    return tr("{label}, {value}, is not right yet", label=label, value=_show(actual))


def _expected_got(expected: Any, actual: Any) -> str:
    return tr("expected {expected}, got {actual}", expected=_show(expected), actual=_show(actual))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def _show(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return np.array2string(value, separator=", ").replace("\n", "")
    return repr(value)


def device_matches(assigned: str, wanted: str) -> bool:
    """Whether the full device name ``assigned`` has every field ``wanted`` names."""
    return _spec(wanted).matches(DeviceSpec.from_string(assigned))


def _spec(text: str) -> DeviceSpec:
    text = text.strip()
    if not text.startswith("/"):
        text = "/device:" + text
    return DeviceSpec.from_string(text)


def check_placement(result: Any, expected: dict[str, str] = _FROM_EXERCISE, value: Any = None,
                    what: str | None = None, atol: float = 1e-6,
                    exercise: str | None = None) -> Feedback:
    """Check where ops were placed (op name -> device) and, optionally, the fetched value.

    ``result`` is what ``%%placement`` leaves in ``_placement`` (or any object with a
    ``view.devices``/``devices`` mapping of op names to device names, and ``values``).
    With ``exercise``, the placement and value asked for come from the package when not
    given, ``result`` must be a cell's result (a typed mapping is refused), and the
    feedback is progressive; it never shows the wanted devices or value.
    """
    info = exercises.exercise(exercise) if exercise is not None else {}
    if expected is _FROM_EXERCISE:
        expected = info["answer"] if info else {}
    value = info.get("value") if value is None else value
    atol = info.get("atol", atol)
    feedback = Feedback(what or info.get("what", "the placement"))
    if info and _is_typed(result):
        feedback.problems.append(tr("this check wants {wants}, not typed values: pass it "
                                    "what you built", wants=tr(info["wants"])))  # i18n: dynamic
        return feedback
    _check_placed(feedback, result, expected, value, atol, reveal=not info)
    if info:
        seen = exercises.fingerprint([_full_devices(result), getattr(result, "values", None)])
        tries = exercises.count_try(exercise, feedback.passed, seen)
        if not feedback.passed:
            _add_hints(feedback, exercise, info, tries)
    return feedback


def _check_placed(feedback: Feedback, result: Any, expected: dict[str, str], value: Any,
                  atol: float, reveal: bool) -> None:
    error = getattr(result, "error", None)
    if error is not None:
        feedback.problems.append(tr("the cell failed with {error}", error=type(error).__name__))
        feedback.hints.append(getattr(error, "hint", None) or str(error))
        return
    placed = _full_devices(result)
    for name, wanted in expected.items():
        _check_one(feedback, placed, name, wanted, reveal)
    if value is not None:
        _check_value(feedback, getattr(result, "values", None), value, atol, reveal)


def _full_devices(result: Any) -> dict[str, str]:
    view = getattr(result, "view", None)
    if view is not None:
        return dict(view.devices)
    return dict(getattr(result, "devices", result) or {})


def _check_one(feedback: Feedback, placed: dict[str, str], name: str, wanted: str,
               reveal: bool = True) -> None:
    if name not in placed:
        feedback.problems.append(tr("there is no op named '{name}'", name=name))
        feedback.hints.append(tr("create it with name='{name}', e.g. "
                                 "tf.matmul(a, b, name='{name}'), in the %%placement cell",
                                 name=name))
    elif not device_matches(placed[name], wanted):
        if not reveal:
            feedback.problems.append(tr("'{name}' is on {device}, not where the exercise asks",
                                        name=name, device=_short(placed[name])))
            return
        feedback.problems.append(tr("'{name}' is on {device}, not on {wanted}", name=name,
                                    device=_short(placed[name]), wanted=wanted))
        feedback.hints.append(tr("create '{name}' inside `with tf.device('{wanted}'):`",
                                 name=name, wanted=wanted))


def _check_value(feedback: Feedback, values: dict | None, expected: Any, atol: float,
                 reveal: bool = True) -> None:
    if not values:
        feedback.problems.append(tr("the cell computed no value"))
        feedback.hints.append(tr("add --run to the %%placement line and end the cell with the "
                                 "tensor to compute"))
        return
    got = list(values.values())[-1]
    if not _same(got, expected, atol):
        feedback.problems.append(
            tr("the value is {got}, expected {expected}", got=_show(got), expected=_show(expected))
            if reveal else tr("the value, {got}, is not right yet", got=_show(got)))
        feedback.hints.append(tr("end the cell with the tensor whose value is asked for"))


def _short(device: str) -> str:
    from tfteach.timeline import short_device

    return short_device(device)

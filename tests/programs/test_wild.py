"""The corpus of learners' programs (``wild/``) behaves on tfteach as it did on TensorFlow.

Each program runs as processes on tfteach and is compared with TensorFlow's recorded run
(``wild/expected/<name>.json``, re-recorded by ``python tests/programs/wild/record.py``):
exit statuses, the exception that ended a process, printed lines (numbers within the
program's tolerance) and, where the program logs them, device placements. A few programs
(``live_tf``) also run live on TensorFlow, to check that the recording still holds.
A program that needs what tfteach lacks yet is an expected failure that must flip when it
lands (``strict``)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from harness import has_tensorflow

sys.path.insert(0, str(Path(__file__).resolve().parent / "wild"))

from corpus import PROGRAMS  # noqa: E402
from runner import differences, run  # noqa: E402

EXPECTED = Path(__file__).resolve().parent / "wild" / "expected"


def _params(programs):
    for p in programs:
        marks = [pytest.mark.cluster] if p.ps or p.workers or p.ports else []
        if p.pending:
            marks.append(pytest.mark.xfail(strict=True, reason=p.pending))
        yield pytest.param(p, id=p.name, marks=marks)


def _expected(program) -> dict:
    return json.loads((EXPECTED / f"{program.name}.json").read_text())["processes"]


@pytest.mark.parametrize("program", list(_params(PROGRAMS)))
def test_the_program_behaves_on_tfteach_as_on_tensorflow(program, tmp_path):
    assert differences(program, _expected(program), run(program, "tfteach", tmp_path)) == []


@pytest.mark.conformance
@pytest.mark.skipif(not has_tensorflow(), reason="TensorFlow is not installed "
                    "(pip install -e '.[conformance]')")
@pytest.mark.parametrize("program", [pytest.param(p, id=p.name)
                                     for p in PROGRAMS if p.live_tf])
def test_tensorflow_still_behaves_as_recorded(program, tmp_path):
    assert differences(program, _expected(program), run(program, "tensorflow", tmp_path)) == []


def test_every_program_has_a_recording_and_a_file():
    here = EXPECTED.parent
    assert sorted(p.name for p in PROGRAMS) == sorted(f.stem for f in EXPECTED.glob("*.json"))
    assert all((here / p.file).is_file() for p in PROGRAMS)
    assert len(PROGRAMS) >= 12


def test_the_comparison_sees_numbers_text_statuses_and_placements_that_differ():
    from corpus import Program
    program = Program("example", "a test", rtol=1e-3, placements=True)
    base = {"main": {"status": 0, "stdout": ["step 1 loss 2.000"], "error": None,
                     "placements": ["a: (Const): /job:localhost/replica:0/task:0/device:CPU:0"]}}

    def changed(**fields):
        return {"main": {**base["main"], **fields}}
    assert differences(program, base, changed(stdout=["step 1 loss 2.001"])) == []
    assert differences(program, base, changed(stdout=["step 1 loss 2.01"])) != []
    assert differences(program, base, changed(stdout=["step 1 cost 2.000"])) != []
    assert differences(program, base, changed(stdout=[])) != []
    assert differences(program, base, changed(status=1, error="InvalidArgumentError")) != []
    assert differences(program, base, changed(placements=[])) != []

"""Progress for long runs: ETA from an injected clock, interruption, live updates."""
from __future__ import annotations

from nbkernel import one

from tfteach.notebook.progress import Progress, format_seconds


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_rate_and_eta_follow_the_steps_done():
    clock = FakeClock()
    progress = Progress(total=100, label="training", clock=clock, display=False)
    assert progress.eta() is None
    clock.now = 10.0
    progress.update(25, loss=0.5)
    assert progress.rate() == 2.5 and progress.eta() == 30.0
    assert progress.text() == "training: 25/100 (25%), 2.5 steps/s, ETA 30 s, loss 0.5"


def test_unknown_total_has_no_eta():
    clock = FakeClock()
    progress = Progress(clock=clock, display=False)
    clock.now = 2.0
    progress.update()
    progress.update()
    assert progress.eta() is None and progress.text() == "steps: 2, 1 steps/s"


def test_stop_button_interrupt_is_recorded_and_swallowed():
    clock = FakeClock()
    with Progress(total=10, clock=clock, display=False) as progress:
        for step in range(10):
            clock.now += 1
            progress.update(step + 1)
            if step == 3:
                raise KeyboardInterrupt
    assert progress.interrupted and progress.done == 4
    assert "Stopped by you after step 4" in progress.text()
    assert "ETA" not in progress.text()


def test_interrupt_can_be_passed_on():
    progress = Progress(total=3, swallow_interrupt=False, display=False)
    try:
        with progress:
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("KeyboardInterrupt should propagate")
    assert progress.interrupted


def test_other_errors_are_not_swallowed():
    progress = Progress(total=3, display=False)
    try:
        with progress:
            raise ValueError("boom")
    except ValueError:
        pass
    assert not progress.interrupted


def test_seconds_are_readable():
    assert [format_seconds(s) for s in (5, 75, 7380)] == ["5 s", "1 min 15 s", "2 h 3 min"]


def test_progress_updates_one_output_in_a_kernel(kernel):
    outputs = kernel.run(
        "from tfteach.notebook import Progress\n"
        "with Progress(total=50, label='steps', min_interval_s=0) as p:\n"
        "    for i in range(50):\n"
        "        p.update(i + 1, loss=1 / (i + 1))")
    assert len(outputs) == 1
    assert one(outputs, "text/plain").startswith("steps: 50/50 (100%), ")
    assert "loss 0.02" in one(outputs, "text/plain")
    assert "width:100.0%" in one(outputs, "text/html")

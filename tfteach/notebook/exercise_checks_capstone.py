"""12.5: the learner's whole trainer, run as a real cluster of processes through a ps crash.

The learner writes ``trainer.py`` (a ``%%writefile`` cell) and passes its path. The check
starts it as three processes on loopback, on free ports, in this kernel's environment: one ps
and two workers, with ``--ps_hosts --worker_hosts --job_name --task_index``, a fresh
``--checkpoint_dir`` and ``--steps N`` (a number it picks). While they train it reads the
live ``global_step`` from the ps with a session of its own (``_Probe``). Once a checkpoint
exists and the global step passed a point it picks, it kills the ps with SIGKILL and starts
it again on the same port; then it waits for the workers to end. It never trusts the
trainer's print alone: it reads the newest checkpoint with ``tf.train.load_variable`` for the
final global step and the weights, and recomputes the accuracy on hidden test digits.

What is diagnosed, by behaviour: a process that exits with an error (its stderr's tail), one
that hangs (named, after a deadline), no checkpoint in ``--checkpoint_dir``, variables that
never appear on the ps (no ``replica_device_setter``), a global step that went back after the
restart (nothing restored), gradients not aggregated (the workers' local steps, as printed,
against the global steps: a ``SyncReplicasOptimizer`` over two workers takes two gradients
per step), too few steps, and a low accuracy. Every process is killed when the check ends,
fails or is interrupted (and, on Linux, when the kernel dies: ``PR_SET_PDEATHSIG``).
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfteach.i18n import tr

START_DEADLINE_S = 45.0         # from the launch to the ps crash
FINISH_DEADLINE_S = 45.0        # from the restart to both workers' end
POLL_S = 0.05
LAST_STEPS = 60                 # no crash this close to --steps
WAITING_S = 5.0                 # at most, for worker 1 to listen before the chief starts
MIN_ACCURACY = 0.85
WORKER_LINE = re.compile(r"worker (\d+): local steps (\d+)")
CHIEF_LINE = re.compile(r"global step: (\d+), accuracy: ([0-9.]+)")


class Failed(Exception):
    """The check found a problem that ends the run (its text is the problem)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


# Runs the trainer as ``__main__`` after asking Linux for SIGKILL when the kernel that started
# it dies (PR_SET_PDEATHSIG), in the new process itself: a preexec_fn would run Python
# between fork and exec in a kernel that has gRPC threads, which can crash the child.
_LAUNCHER = ("import ctypes, runpy, sys\n"
             "try:\n"
             "    ctypes.CDLL('libc.so.6').prctl(1, 9, 0, 0, 0)\n"
             "except (OSError, AttributeError):\n"
             "    pass\n"
             "sys.argv = sys.argv[1:]\n"
             "runpy.run_path(sys.argv[0], run_name='__main__')\n")


@dataclass
class _Run:
    """The trainer's processes, their log files and the checkpoint folder."""

    trainer: Path
    steps: int
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="tfteach-12.5-")))
    hosts: dict = field(default_factory=dict)
    processes: dict = field(default_factory=dict)      # (job, task) -> Popen

    def __post_init__(self) -> None:
        ports = [_free_port() for _ in range(3)]
        self.hosts = {"ps": [f"localhost:{ports[0]}"],
                      "worker": [f"localhost:{p}" for p in ports[1:]]}

    @property
    def checkpoint_dir(self) -> Path:
        return self.folder / "checkpoints"

    def start(self, job: str, task: int) -> None:
        argv = [sys.executable, "-c", _LAUNCHER, str(self.trainer), "--ps_hosts=" + ",".join(self.hosts["ps"]),
                "--worker_hosts=" + ",".join(self.hosts["worker"]), f"--job_name={job}",
                f"--task_index={task}", f"--checkpoint_dir={self.checkpoint_dir}",
                f"--steps={self.steps}"]
        out, err = (open(self.log(job, task, kind), "a") for kind in ("out", "err"))
        with out, err:
            self.processes[job, task] = subprocess.Popen(
                argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=_environment(),
                cwd=str(self.trainer.parent))

    def log(self, job: str, task: int, kind: str) -> Path:
        return self.folder / f"{job}{task}.{kind}"

    def tail(self, job: str, task: int, lines: int = 8) -> str:
        text = self.log(job, task, "err").read_text(errors="replace").strip().splitlines()
        return "\n".join(text[-lines:])

    def workers(self) -> list:
        return [self.processes["worker", i] for i in range(2)]

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
            process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _environment() -> dict:
    """This kernel's environment, with this tfteach first on the path."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class _Probe:
    """The check's own session to the ps: reads the live ``global_step`` there."""

    def __init__(self, ps_address: str) -> None:
        import tfteach as tf

        self._target = f"grpc://{ps_address}"
        self._graph = tf.Graph()
        with self._graph.as_default(), tf.device("/job:ps/task:0"):
            self._step = tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False)
        self._config = tf.ConfigProto(device_filters=["/job:ps"],
                                      operation_timeout_in_ms=2000)

    def global_step(self) -> int | str:
        """The ps's global step, or the name of the error reading it raised."""
        import tfteach as tf

        try:
            with tf.Session(self._target, graph=self._graph, config=self._config) as sess:
                return int(sess.run(self._step))
        except Exception as error:         # a ps down or without the variable: a state
            return type(error).__name__


def _latest_step(folder: Path) -> int | None:
    """The global step of the newest checkpoint in ``folder`` (None: none there)."""
    import tfteach as tf

    if not folder.is_dir() or tf.train.latest_checkpoint(str(folder)) is None:
        return None
    try:
        return int(tf.train.load_variable(str(folder), "global_step"))
    except Exception as error:             # the learner's checkpoint: any error is feedback
        raise Failed(tr("the checkpoint in --checkpoint_dir has no variable global_step "
                        "({error}): create it with tf.train.get_or_create_global_step()",
                        error=type(error).__name__)) from None


def _exited_badly(run: _Run) -> None:
    """Fail for the first process (ps, worker 0, worker 1) that ended with an error, showing
    its stderr's tail; a moment's wait first, so that tasks failing together read the same."""
    def failed() -> list:
        return [(job, task, p.poll()) for (job, task), p in sorted(run.processes.items())
                if p.poll() not in (None, 0) and not (job == "ps" and p.poll() == -signal.SIGKILL)]
    if not failed():
        return
    time.sleep(0.5)
    job, task, code = failed()[0]
    raise Failed(tr("the {job} task {task} exited with code {code}; the end of its stderr:\n"
                    "{tail}", job=job, task=task, code=code, tail=run.tail(job, task)))


def _hung(run: _Run, seconds: float) -> Failed:
    hung = [(job, task) for (job, task), p in sorted(run.processes.items())
            if job == "worker" and p.poll() is None]
    return Failed(tr("{names} did not finish within {seconds:.0f} s and were stopped as hung; "
                     "the end of {first}'s stderr:\n{tail}",
                     names=", ".join(f"{job} {task}" for job, task in hung), seconds=seconds,
                     first=" ".join(map(str, hung[0])), tail=run.tail(*hung[0])))


def _until_crash_point(run: _Run, probe: _Probe, crash_at: int) -> tuple[int, int]:
    """Wait until a checkpoint after the start exists and the live global step passed
    ``crash_at`` (but is not in the last ``LAST_STEPS``); return the newest checkpoint's
    step and the live one."""
    started = time.monotonic()
    first_checkpoint = None
    while time.monotonic() < started + START_DEADLINE_S:
        _exited_badly(run)
        step, saved = probe.global_step(), _latest_step(run.checkpoint_dir)
        if isinstance(step, int) and crash_at <= step <= run.steps - LAST_STEPS and saved:
            return saved, step           # not near the end: the chief's last reads need the ps
        if saved is not None and first_checkpoint is None:
            first_checkpoint = time.monotonic()
        _early_problem(step, saved, crash_at, first_checkpoint)
        if all(p.poll() is not None for p in run.workers()):
            _exited_badly(run)                 # they may have ended since the last look
            raise _ended_early(run, step, saved)
        time.sleep(POLL_S)
    raise _hung(run, START_DEADLINE_S)


def _early_problem(step: Any, saved: int | None, crash_at: int,
                   first_checkpoint: float | None) -> None:
    """What shows before the crash: no variables on the ps, no checkpoint."""
    if not isinstance(step, int):
        if first_checkpoint and time.monotonic() - first_checkpoint > 3.0:
            raise Failed(tr("the chief saved a checkpoint, but the ps holds no global_step: "
                            "the variables are not on the ps (build the model under "
                            "tf.device(tf.train.replica_device_setter(...)))"))
    elif step >= crash_at + 20 and saved is None:
        raise Failed(tr("the global step passed {step} and --checkpoint_dir holds no "
                        "checkpoint: after a crash nothing could be restored (pass "
                        "checkpoint_dir= to MonitoredTrainingSession)", step=step))


def _ended_early(run: _Run, step: Any, saved: int | None) -> Failed:
    """Why training was over before the check could kill the ps."""
    if not isinstance(step, int):
        return Failed(tr("the workers ended, and the ps never held a global_step: the "
                         "variables are not on the ps (replica_device_setter)"))
    if saved is None:
        return Failed(tr("the workers ended, and --checkpoint_dir holds no checkpoint (pass "
                         "checkpoint_dir= to MonitoredTrainingSession)"))
    local = _local_steps(run)
    if local is not None and sum(local) < 1.6 * step:
        return Failed(_not_aggregated(sum(local), step))
    if step < run.steps:
        return Failed(tr("the workers ended at global step {step}, before the --steps the "
                         "check gave them", step=step))
    if not [n for n in _saved_steps(run.checkpoint_dir) if 0 < n < step]:
        return Failed(tr("--checkpoint_dir holds checkpoints of the start and the end only: a "
                         "crash would lose every step between (save every 10 steps: "
                         "save_checkpoint_steps=10)"))
    return Failed(tr("training was over (global step {step}) before the check could kill the "
                     "ps; run the check again", step=step))


def _saved_steps(folder: Path) -> list[int]:
    """The global steps of the checkpoints the state file of ``folder`` lists."""
    import tfteach as tf

    state = tf.train.get_checkpoint_state(str(folder))
    paths = list(state.all_model_checkpoint_paths) if state else []
    return [int(m.group(1)) for m in (re.search(r"-(\d+)$", p) for p in paths) if m]


def _not_aggregated(local: int, steps: int) -> str:
    return tr("the workers made {local} local steps for {steps} global steps: each gradient "
              "was applied on its own, not aggregated (wrap the optimizer in "
              "tf.train.SyncReplicasOptimizer)", local=local, steps=steps)


def _after_restart(run: _Run, probe: _Probe) -> int | None:
    """Wait for both workers to end; the first global step the new ps held (None: none)."""
    deadline, first = time.monotonic() + FINISH_DEADLINE_S, None
    while time.monotonic() < deadline:
        _exited_badly(run)
        step = probe.global_step()
        if first is None and isinstance(step, int):
            first = step
        if all(p.poll() is not None for p in run.workers()):
            _exited_badly(run)
            return first
        time.sleep(POLL_S)
    raise _hung(run, FINISH_DEADLINE_S)


def _crash_and_restart(run: _Run) -> None:
    ps = run.processes["ps", 0]
    ps.send_signal(signal.SIGKILL)
    ps.wait()
    run.start("ps", 0)


def _local_steps(run: _Run) -> list[int] | None:
    """The local steps each worker printed (None: a worker printed no such line)."""
    local = []
    for i in range(2):
        found = WORKER_LINE.findall(run.log("worker", i, "out").read_text(errors="replace"))
        mine = [int(n) for task, n in found if int(task) == i]
        if not mine:
            return None
        local.append(mine[-1])
    return local


def _printed(run: _Run) -> tuple[list[int], tuple[int, float]]:
    """The local steps each worker printed, and the chief's global step and accuracy."""
    local = _local_steps(run)
    if local is None:
        raise Failed(tr("a worker did not print the line 'worker <task_index>: local steps N' "
                        "the lesson asks for"))
    chief = CHIEF_LINE.findall(run.log("worker", 0, "out").read_text(errors="replace"))
    if not chief:
        raise Failed(tr("the chief did not print the line 'global step: N, accuracy: A' the "
                        "lesson asks for"))
    return local, (int(chief[-1][0]), float(chief[-1][1]))


def _hidden_accuracy(folder: Path) -> tuple[float, float]:
    """The checkpoint's softmax regression on the lesson's test digits: the accuracy on a
    hidden random part of them, and on all of them."""
    import tfteach as tf
    from tfteach.data import load_digits

    try:
        weights = tf.train.load_variable(str(folder), "weights")
        biases = tf.train.load_variable(str(folder), "biases")
    except Exception as error:             # the learner's checkpoint: any error is feedback
        raise Failed(tr("the checkpoint has no weights [64, 10] and biases [10] ({error}): "
                        "name the variables as the lesson asks", error=type(error).__name__)
                     ) from None
    _, (x, y) = load_digits()
    if np.shape(weights) != (64, 10) or np.shape(biases) != (10,):
        raise Failed(tr("the checkpoint's weights or biases do not have the shapes [64, 10] "
                        "and [10]"))
    right = np.argmax(x / 16.0 @ weights + biases, axis=1) == y
    hidden = np.random.default_rng().choice(len(y), size=len(y) // 2, replace=False)
    return float(right[hidden].mean()), float(right.mean())


def _judge(run: _Run, crash: tuple[int, int], first_after: int | None) -> list[str]:
    """Recovery, steps, aggregation and accuracy, from the checkpoint (the prints only for
    the local steps, and compared with the checkpoint)."""
    saved_at_crash, live_at_crash = crash
    final = _latest_step(run.checkpoint_dir)
    if first_after is None or final is None:
        return [tr("after the ps restarted, the ps never held a global_step again: the chief "
                   "did not create a new session (use MonitoredTrainingSession, which "
                   "recovers)")]
    if first_after < saved_at_crash:
        return [tr("after the ps restarted, the global step went back to {got}, below the "
                   "checkpoint's {saved}: the chief did not restore the checkpoint (give "
                   "MonitoredTrainingSession the checkpoint_dir: a new session restores the "
                   "newest checkpoint there)", got=first_after,
                   saved=saved_at_crash)]
    if final < run.steps:
        return [tr("the newest checkpoint is at global step {got}: training stopped before "
                   "the --steps the check gave", got=final)]
    local, (printed_step, printed_accuracy) = _printed(run)
    problems = []
    trained = final + max(0, live_at_crash - saved_at_crash)
    if sum(local) < 1.6 * trained:
        problems.append(_not_aggregated(sum(local), trained))
    hidden, whole = _hidden_accuracy(run.checkpoint_dir)
    if hidden < MIN_ACCURACY:
        problems.append(tr("the checkpoint's weights classify {accuracy:.0%} of the hidden test "
                           "digits right, below {wanted:.0%}", accuracy=hidden,
                           wanted=MIN_ACCURACY))
    if abs(printed_accuracy - whole) > 0.02 or abs(printed_step - final) > 2:
        problems.append(tr("the chief's printed global step or accuracy is not what its newest "
                           "checkpoint holds"))
    return problems


def _start_in_turn(run: _Run, probe: _Probe) -> None:
    """The ps; once it listens, worker 1, which waits for the chief (as a TF worker waits
    for its chief); once worker 1 listens (or after ``WAITING_S``), the chief. So worker 1
    is in the cluster before training starts, and a crash never meets it still starting."""
    run.start("ps", 0)
    deadline = time.monotonic() + START_DEADLINE_S
    while probe.global_step() == "UnavailableError":
        _exited_badly(run)
        if time.monotonic() > deadline:
            raise Failed(tr("the ps task did not start a server at its address from "
                            "--ps_hosts within {seconds:.0f} s", seconds=START_DEADLINE_S))
        time.sleep(POLL_S)
    run.start("worker", 1)
    waited = time.monotonic() + WAITING_S
    while time.monotonic() < waited and not _listening(run.hosts["worker"][1]):
        _exited_badly(run)
        time.sleep(POLL_S)
    run.start("worker", 0)


def _listening(address: str) -> bool:
    """Whether a server listens at ``host:port`` (worker 1's: it then builds its graph and
    asks the ps whether the chief has initialized the variables)."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.2):
            return True
    except OSError:
        return False


def trainer_problems(trainer: Path) -> list[str]:
    """Run ``trainer`` as 1 ps + 2 workers, crash and restart the ps, judge (see module)."""
    if not trainer.is_file():
        return [tr("there is no file {path}: run the %%writefile cell first", path=str(trainer))]
    rng = np.random.default_rng()
    run = _Run(trainer.resolve(), steps=int(rng.integers(200, 260)))
    atexit.register(run.close)
    try:
        probe = _Probe(run.hosts["ps"][0])
        _start_in_turn(run, probe)
        crash = _until_crash_point(run, probe, int(rng.integers(40, 70)))
        _crash_and_restart(run)
        return _judge(run, crash, _after_restart(run, probe))
    except Failed as problem:
        return [str(problem)]
    finally:
        run.close()
        atexit.unregister(run.close)

"""Run whole TF1 programs as processes, on tfteach and (where installed) on real TensorFlow.

A program in ``scripts/`` is written as a learner writes it, with ``import tfteach as tf``.
``program(name, *args, backend=...)`` starts it as its own process (on ``"tensorflow"`` a
copy whose import line reads ``import tensorflow.compat.v1 as tf``), with unbuffered output
read line by line as it comes, so a test can wait for a line, signal the process, and see
when it exited after its last output. ``Process.leftovers()`` lists what a finished tfteach
program left behind: live processes it started, and /dev/shm segments it created.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"
TF_IMPORT = "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()"
TF_QUIET = {"TF_ENABLE_ONEDNN_OPTS": "0",
            "CUDA_VISIBLE_DEVICES": ""}


def has_tensorflow() -> bool:
    """Whether real TensorFlow is importable here (checked without importing it)."""
    import importlib.util
    return importlib.util.find_spec("tensorflow") is not None


def script_for(name: str, backend: str, workdir: Path) -> Path:
    """The program to run: the script itself, or its TensorFlow copy in ``workdir``."""
    path = SCRIPTS / name
    if backend == "tfteach":
        return path
    text = path.read_text()
    assert "import tfteach as tf" in text, f"{name} does not import tfteach as tf"
    copy = workdir / f"tf_{name}"
    # written whole, then renamed: a task of the same program may be starting from it now
    # (rewritten in place, a ps once read it empty, ran nothing and exited 0)
    staged = workdir / f".tf_{name}.{os.getpid()}.{threading.get_ident()}"
    staged.write_text(text.replace("import tfteach as tf", TF_IMPORT))
    os.replace(staged, copy)
    return copy


@dataclass
class Process:
    """A running program: its output lines with the time each arrived."""

    popen: subprocess.Popen
    backend: str
    lines: list = field(default_factory=list)        # [(monotonic time, "out"|"err", text)]
    exited_at: float | None = None

    def __post_init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(stream, tag), daemon=True)
                         for stream, tag in ((self.popen.stdout, "out"),
                                             (self.popen.stderr, "err"))]
        for reader in self._readers:
            reader.start()
        threading.Thread(target=self._note_exit, daemon=True).start()

    def _note_exit(self) -> None:
        self.popen.wait()
        self.exited_at = time.monotonic()

    def _read(self, stream, tag: str) -> None:
        for line in iter(stream.readline, ""):
            with self._changed:
                self.lines.append((time.monotonic(), tag, line.rstrip("\n")))
                self._changed.notify_all()
        stream.close()

    @property
    def stdout(self) -> str:
        return "\n".join(text for _, tag, text in self.lines if tag == "out")

    @property
    def stderr(self) -> str:
        return "\n".join(text for _, tag, text in self.lines if tag == "err")

    def wait_for(self, pattern: str, timeout: float = 60.0) -> str:
        """Wait until a line of stdout or stderr matches ``pattern``; return that line."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for _, _, text in self.lines:
                    if regex.search(text):
                        return text
                left = deadline - time.monotonic()
                if left <= 0 or self.popen.poll() is not None and not self._reading():
                    raise AssertionError(f"no line matching {pattern!r} in {left + timeout:.0f}"
                                         f" s:\n{self.transcript()}")
                self._changed.wait(min(left, 0.2))

    def _reading(self) -> bool:
        return any(reader.is_alive() for reader in self._readers)

    def wait(self, timeout: float) -> int:
        """Wait for the exit (killing the process after ``timeout``); return its status."""
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"still running after {timeout} s:\n{self.transcript()}") \
                from None
        for reader in self._readers:
            reader.join(5)
        return self.popen.returncode

    def exit_delay(self) -> float:
        """Seconds from the program's last line of stdout to its exit."""
        out = [t for t, tag, _ in self.lines if tag == "out"]
        while self.exited_at is None:       # the exit was seen; its time is a moment away
            time.sleep(0.01)
        assert out
        return self.exited_at - max(out)

    def signal(self, signum: int) -> None:
        self.popen.send_signal(signum)

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(10)

    def transcript(self) -> str:
        return "\n".join(f"[{tag}] {text}" for _, tag, text in self.lines)[-6000:]

    def leftovers(self) -> list[str]:
        """Processes this program started that still run, and its /dev/shm segments."""
        from tfteach.distributed.transport import shm

        pid = self.popen.pid
        return [f"process {child}" for child in _processes_of(pid)] + \
            [f"segment {name}" for name in shm.list_segments() if shm.owner_pid(name) == pid]


def program(name: str, *args: str, backend: str = "tfteach", cwd: Path | None = None,
            env: dict | None = None) -> Process:
    """Start ``scripts/name`` with ``args`` as its own process."""
    workdir = Path(cwd or os.getcwd())
    return start_file(script_for(name, backend, workdir), *args, backend=backend, cwd=workdir,
                      env=env)


def start_file(path: Path, *args: str, backend: str = "tfteach", cwd: Path | None = None,
               env: dict | None = None) -> Process:
    """Start the program at ``path`` with ``args`` as its own process, on ``backend``'s
    environment (it imports what it imports: ``scripts/`` programs get their copy from
    ``program``, the corpus of ``wild/`` picks its runtime from ``WILD_BACKEND``)."""
    workdir = Path(cwd or os.getcwd())
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", TFTEACH_VIRTUAL_GPUS="0",
                    PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    if backend == "tensorflow":
        full_env.update(TF_QUIET)
        full_env.pop("GRPC_VERBOSITY", None)    # importing tfteach set it: TF then logs nothing
    full_env.update(env or {})
    argv = [sys.executable, str(path), *map(str, args)]
    popen = subprocess.Popen(argv, cwd=workdir, env=full_env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace")
    return Process(popen, backend)


def write_cluster(path: Path, jobs: dict) -> Path:
    path.write_text(json.dumps(jobs))
    return path


def _processes_of(pid: int) -> list[int]:
    """Live processes whose parent is ``pid`` or whose environment names it as owner."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        owner = f"TFTEACH_PARENT_PID={pid}".encode() in environ.split(b"\0")
        if state != "Z" and (ppid == pid or owner):
            found.append(int(entry.name))
    return found


def stop(*processes: Process, timeout: float = 10.0) -> None:
    """SIGTERM long-running tasks (a ps serves forever), then make sure they are gone."""
    for proc in processes:
        if proc.popen.poll() is None:
            proc.signal(signal.SIGTERM)
    for proc in processes:
        try:
            proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()

"""Record TensorFlow's behaviour for the corpus into ``expected/<name>.json``.

    .venv/bin/python tests/programs/wild/record.py              # every program
    .venv/bin/python tests/programs/wild/record.py mnist_deep   # some

Run it after changing a program (it needs TensorFlow installed; ``layers_classifier``
also needs ``tf_keras``, from which TF 2.16+ serves ``tf.compat.v1.layers``: install it, or
put it on PYTHONPATH, for that one). CI compares tfteach with these files and runs
TensorFlow live only for the programs marked ``live_tf``.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import BY_NAME, PROGRAMS  # noqa: E402
from runner import run  # noqa: E402

EXPECTED = HERE / "expected"


def record(name: str) -> dict:
    program = BY_NAME[name]
    with tempfile.TemporaryDirectory() as workdir:
        outcome = run(program, "tensorflow", Path(workdir))
    stored = {"follows": program.follows, "tensorflow": _tf_version(),
              "processes": outcome}
    EXPECTED.mkdir(exist_ok=True)
    (EXPECTED / f"{name}.json").write_text(json.dumps(stored, indent=1) + "\n")
    return stored


def _tf_version() -> str:
    from importlib import metadata
    for dist in ("tensorflow", "tensorflow-cpu", "tensorflow-intel"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def main(names: list[str]) -> None:
    for name in names or [p.name for p in PROGRAMS]:
        stored = record(name)
        statuses = {role: o["status"] for role, o in stored["processes"].items()}
        print(f"{name}: {statuses}")


if __name__ == "__main__":
    main(sys.argv[1:])

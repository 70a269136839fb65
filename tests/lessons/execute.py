"""Execute lesson notebooks in a real Jupyter kernel and store their outputs in place.

    python tests/lessons/execute.py lessons/NN_name.ipynb [lessons/MM_other.ipynb ...]

Run it from the repository root after changing a lesson. Each notebook runs top to bottom in
a fresh kernel started in the notebook's folder, in the environment the lesson tests use
(this checkout first on PYTHONPATH; CUDA_VISIBLE_DEVICES, TFTEACH_VIRTUAL_GPUS,
TFTEACH_DEVICE_SPEED and TFTEACH_CLUSTER_TOKEN unset; TFTEACH_LANG the notebook's language,
from its metadata: any language's set runs, e.g. ``lessons/ko/*.ipynb``), so the stored
outputs are the ones nbval later compares against. The solution cells run too
(``TFTEACH_RUN_SOLUTIONS=1``; a learner's Run All skips them), so the stored lesson shows each
solution passing its check, and a solution that does not pass fails its cell. Live widget outputs (the views' controls)
are dropped: they work only with the kernel that made them and nbval ignores them, so the
saved notebook keeps the static pictures that GitHub, nbconvert and nbval see. A notebook with a failing cell is
left as it was; the script then exits with status 1 after trying the others.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from lesson_tools import lesson_env, notebook_lang
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RUN_SOLUTIONS = "TFTEACH_RUN_SOLUTIONS"


def execute(notebook: Path, timeout: int = 600) -> None:
    """Run every cell of ``notebook`` and write it back with the new outputs."""
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(nb, timeout=timeout, coalesce_streams=True,
                            store_widget_state=False,
                            resources={"metadata": {"path": str(notebook.parent)}})
    client.execute(env={**lesson_env(lang=notebook_lang(notebook)), RUN_SOLUTIONS: "1"})
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if _static(o)]
    nbformat.write(nb, notebook)


def _static(output) -> bool:
    """Drop the live widget view from ``output``; keep it if a static form remains."""
    data = output.get("data")
    if data is None or WIDGET_VIEW not in data:
        return True
    del data[WIDGET_VIEW]
    return bool(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help="lesson notebooks (.ipynb)")
    parser.add_argument("--timeout", type=int, default=600,
                        help="seconds one cell may run (default 600)")
    args = parser.parse_args(argv)
    for notebook in args.notebooks:
        if notebook.suffix != ".ipynb" or not notebook.is_file():
            parser.error(f"{notebook}: no such notebook")
    failed = 0
    for notebook in args.notebooks:
        try:
            execute(notebook.resolve(), args.timeout)
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:
            failed += 1
            print(f"{notebook}: a cell failed; the notebook is unchanged.\n{error}",
                  file=sys.stderr)
        else:
            print(f"{notebook}: executed, outputs stored")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

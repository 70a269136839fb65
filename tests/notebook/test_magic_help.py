"""--help of %%placement and %tfteach, in a real Jupyter kernel: every option, no UsageError."""
from __future__ import annotations

import pytest
from nbkernel import kinds, stream_text

from tfteach.notebook.magics import TfteachMagics, tfteach_help

PLACEMENT_OPTIONS = ("--soft", "--log", "--run", "--trace", "--virtual-gpus", "--target",
                     "--config", "--backend", "--gpus-as-cpus")
TFTEACH_COMMANDS = ("devices", "errors", "cluster start", "cluster status", "cluster stop",
                    "cluster kill", "cluster restart", "--ps", "--workers", "--gpus-per-task",
                    "--speeds", "--virtual-gpus")


@pytest.fixture(scope="module")
def loaded(kernel):
    kernel.run("%load_ext tfteach")
    return kernel


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_placement_help_prints_every_option(loaded, flag):
    outputs = loaded.run(f"%%placement {flag}\nx = 1")
    assert "error" not in kinds(outputs)
    text = stream_text(outputs)
    assert all(option in text for option in PLACEMENT_OPTIONS), text


@pytest.mark.parametrize("line", ["%tfteach --help", "%tfteach -h", "%tfteach"])
def test_tfteach_help_prints_every_subcommand_and_option(loaded, line):
    outputs = loaded.run(line)
    assert "error" not in kinds(outputs)
    text = stream_text(outputs)
    assert all(f"%tfteach {c}" in text or c in text for c in TFTEACH_COMMANDS), text


def test_tfteach_question_mark_shows_the_full_help():
    assert TfteachMagics.tfteach.__doc__ == tfteach_help()
    assert all(c in tfteach_help() for c in TFTEACH_COMMANDS)

"""The repository documents itself: no tracked file points at a document outside it, and
docs/ARCHITECTURE.md names every layer (subpackage) and every hook between layers."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"

# Spelled in pieces so that this file does not match its own patterns.
OUTSIDE_REFERENCES = re.compile("|".join([
    re.escape("DESIGN" + ".md"),
    re.escape("TF_" + "REFERENCE"),
    re.escape("STYLE" + ".md"),
    re.escape(".." + "/shared"),
    r"\b" + "iss" + r"ue\s+#?[0-9]+\b",
]), re.IGNORECASE)

HOOKS = ["register_operator", "_default_session_lookup", "register_tensor_conversion",
         "register_target_factory", "_late.TRAIN", "lifetime.closing", "engine_api"]


def _tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = []
    for name in out.decode().split("\0"):
        path = ROOT / name
        if not name or name.startswith(".ci/") or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" not in data[:8192]:
            files.append(path)
    return files


def _subpackages() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "tfteach").glob("*/__init__.py"))


def test_no_tracked_file_refers_to_documents_outside_the_repository():
    found = []
    for path in _tracked_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            match = OUTSIDE_REFERENCES.search(line)
            if match:
                found.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r}")
    assert not found, "\n".join(found)


def test_architecture_names_every_subpackage_of_tfteach():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    subpackages = _subpackages()
    assert "framework" in subpackages and "distributed" in subpackages
    assert [name for name in subpackages if f"tfteach/{name}" not in text] == []


def test_architecture_names_every_hook_between_layers():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert [hook for hook in HOOKS if hook not in text] == []

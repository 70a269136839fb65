"""%tfteach cluster start/status/kill/restart/stop in a real kernel, with real task processes."""
from __future__ import annotations

import re

import pytest
from conftest import WIDGET_VIEW, data_outputs, one, stream_text

try:
    from tfteach.distributed.local_cluster import LocalCluster  # noqa: F401
except ImportError as exc:  # the cluster runtime is another issue's work
    pytest.skip(f"tfteach.distributed.local_cluster.LocalCluster is not available ({exc})",
                allow_module_level=True)

pytestmark = pytest.mark.cluster


def _rows(text: str) -> dict[str, list[str]]:
    """task -> the other columns of the status table's text form."""
    rows = {}
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if re.fullmatch(r"(ps|worker):\d+", cells[0]):
            rows[cells[0]] = cells[1:]
    return rows


def test_cluster_lifecycle_from_magics(kernel):
    started = kernel.run("%tfteach cluster start --ps 1 --workers 2 --speeds 1,0.5")
    text = one(started, "text/plain")
    rows = _rows(text)
    assert sorted(rows) == ["ps:0", "worker:0", "worker:1"]
    assert all(re.fullmatch(r"localhost:\d+", r[0]) for r in rows.values())
    assert all(r[1] == "CPU:0" and r[2] == "alive" for r in rows.values())
    assert data_outputs(started, WIDGET_VIEW), "a live status widget comes with the table"
    assert "alive" in one(started, "text/html")

    bound = kernel.run("print(cluster.target('worker', 1))")
    assert stream_text(bound).strip() == f"grpc://{rows['worker:1'][0]}"

    killed = _rows(one(kernel.run("%tfteach cluster kill worker:1"), "text/plain"))
    assert killed["worker:1"][2] == "DEAD" and killed["worker:0"][2] == "alive"
    assert stream_text(kernel.run("print(cluster.alive('worker', 1))")).strip() == "False"

    restarted = _rows(one(kernel.run("%tfteach cluster restart worker:1"), "text/plain"))
    assert restarted["worker:1"][2] == "alive"
    assert restarted["worker:1"][0] == rows["worker:1"][0], "same address after restart"

    status = one(kernel.run("%tfteach cluster status"), "text/plain")
    assert status.startswith("Cluster status")

    stopped = kernel.run("%tfteach cluster stop")
    assert all(r[2] == "DEAD" for r in _rows(one(stopped, "text/plain")).values())
    assert stream_text(kernel.run("print(cluster.alive('ps', 0))")).strip() == "False"


def test_cluster_commands_without_a_cluster_explain_what_to_do(kernel):
    text = one(kernel.run("%tfteach cluster kill worker:0"), "text/plain")
    assert text.startswith("RuntimeError while running %tfteach cluster kill:")
    assert "Hint: start one with `%tfteach cluster start" in text
    assert stream_text(kernel.run("%tfteach cluster stop")).strip() == "No cluster is running."


def test_bad_task_names_and_speeds_are_explained(kernel):
    text = one(kernel.run("%tfteach cluster kill worker"), "text/plain")
    assert "Hint: write it as job:index" in text
    printed = stream_text(kernel.run("%tfteach cluster start --speeds fast", allow_error=True))
    assert "--speeds takes numbers separated by commas" in printed
    mismatch = one(kernel.run("%tfteach cluster start --workers 2 --speeds 1"), "text/plain")
    assert "worker_speeds has 1 entries for 2 workers" in mismatch

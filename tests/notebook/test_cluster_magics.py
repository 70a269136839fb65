"""%tfteach cluster start/status/kill/restart/stop in a real kernel, with real task processes."""
from __future__ import annotations

import re

import pytest
from nbkernel import WIDGET_VIEW, data_outputs, one, stream_text

try:
    from tfteach.distributed.local.local_cluster import LocalCluster
except ImportError as exc:  # the cluster runtime is another issue's work
    pytest.skip(f"tfteach.distributed.local.local_cluster.LocalCluster is not available ({exc})",
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
    assert killed["worker:1"][2] == "stopped" and killed["worker:0"][2] == "alive"
    assert stream_text(kernel.run("print(cluster.alive('worker', 1))")).strip() == "False"

    restarted = _rows(one(kernel.run("%tfteach cluster restart worker:1"), "text/plain"))
    assert restarted["worker:1"][2] == "alive"
    assert restarted["worker:1"][0] == rows["worker:1"][0], "same address after restart"

    status = one(kernel.run("%tfteach cluster status"), "text/plain")
    assert status.startswith("Cluster status")

    stopped = kernel.run("%tfteach cluster stop")
    assert all(r[2] == "stopped" for r in _rows(one(stopped, "text/plain")).values())
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


def test_a_cluster_on_a_modelled_network_says_so_and_unknown_networks_are_listed(kernel):
    wrong = one(kernel.run('%tfteach cluster start --network "56k modem"'), "text/plain")
    assert wrong.startswith("InvalidArgumentError while running %tfteach cluster start:")
    assert "Known networks:" in wrong and "'1 Gbit Ethernet'" in wrong
    started = one(kernel.run('%tfteach cluster start --ps 1 --workers 1 '
                             '--network "2 hosts x 2 V100, 10 Gbit"'), "text/plain")
    try:
        assert started.startswith("Started a cluster: 1 ps, 1 worker (network between tasks "
                                  "modelled as 10 Gbit Ethernet)")
        bound = kernel.run("print(cluster.network.bandwidth * 8 / 1e9)")
        assert stream_text(bound).strip() == "10.0"
        status = one(kernel.run("%tfteach cluster status"), "text/plain")
        assert "modelled as 10 Gbit Ethernet" in status.splitlines()[0]
    finally:
        kernel.run("%tfteach cluster stop")


def test_placement_on_a_cluster_target_runs_and_shows_tasks():
    import tfteach as tf
    from tfteach.notebook.placement_cell import PlacementOptions, run_placement_cell

    source = ("with tf.device('/job:ps/task:0'):\n    v = tf.Variable(2.0, name='v')\n"
              "with tf.device('/job:worker/task:0'):\n"
              "    y = tf.multiply(v, tf.constant(3.0, name='three'), name='y')\ny")
    with LocalCluster(ps=1, workers=1) as cluster:
        target = cluster.target("worker", 0)
        unplaced = run_placement_cell(source, PlacementOptions(target=target), {"tf": tf})
        assert unplaced.view is None and unplaced.error is None, "placed on first run only"
        unplaced.close()
        result = run_placement_cell(source, PlacementOptions(run=True, target=target),
                                    {"tf": tf})
        try:
            assert result.error is None, result.error
            assert float(result.values["y:0"]) == 6.0
            lines = result.view.text().splitlines()
            assert "v (VariableV2) -> ps:0/CPU:0" in lines and "y (Mul) -> worker:0/CPU:0" in lines
            cross = [(e["src"], e["dst"]) for e in result.view.data["edges"] if e["cross_device"]]
            assert cross == [("v/read", "y")]
            assert "subgraph \"cluster_task_" in result.view.dot(), "boxed by job and task"
            assert [d["short"] for d in result.timeline.data["devices"]] == \
                ["ps:0/CPU:0", "worker:0/CPU:0"]
        finally:
            result.close()


def test_the_cluster_stops_when_the_kernel_shuts_down(tmp_path):
    import time

    import nbformat
    from nbkernel import KernelSession
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        session = KernelSession(client, nb)
        session.run("%load_ext tfteach\n%tfteach cluster start --ps 1 --workers 1")
        printed = session.run("from tfteach.distributed.local import task_registry as registry\n"
                              "print(*[t['pid'] for t in registry.read_entry(cluster.id)"
                              "['tasks']])")
        pids = [int(p) for p in stream_text(printed).split()]
        assert len(pids) == 2 and all(_running(p) for p in pids)
    deadline = time.monotonic() + 60
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_running(p) for p in pids), f"tasks {pids} outlived their kernel"


def _running(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return True


def test_live_status_widget_refreshes_when_a_task_dies():
    import time

    pytest.importorskip("ipywidgets")
    from tfteach.notebook.cluster_view import ClusterStatus

    with LocalCluster(ps=1, workers=1) as cluster:
        status = ClusterStatus(cluster, refresh_s=0.2)
        try:
            widget = status.widget()
            assert "stopped" not in widget.value
            cluster.kill("worker", 0)
            deadline = time.monotonic() + 30
            while "stopped" not in widget.value and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _rows(status.text())["worker:0"][2] == "stopped"
            assert "stopped" in widget.value
        finally:
            status.stop()


def test_stop_button_ends_a_long_run_and_leaves_the_cluster_usable(kernel):
    import os
    import signal
    import threading
    import time

    flag = kernel.workdir / "loop-started"
    kernel.run("%tfteach cluster start --ps 1 --workers 1")
    kernel.run("with tf.device('/job:ps/task:0'):\n    counter = tf.Variable(0, name='counter')\n"
               "step = tf.assign_add(counter, 1)\n"
               "sess = tf.Session(cluster.target('worker', 0))\n"
               "sess.run(counter.initializer)")

    kernel_pid = int(stream_text(kernel.run("import os\nprint(os.getpid())")))

    def press_stop() -> None:
        """What the stop button does: SIGINT to the kernel, once the loop runs."""
        deadline = time.monotonic() + 60
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        os.kill(kernel_pid, signal.SIGINT)

    threading.Thread(target=press_stop, daemon=True).start()
    outputs = kernel.run(
        "import pathlib, time\nfrom tfteach.notebook import Progress\n"
        "with Progress(total=100000, label='training', min_interval_s=0) as progress:\n"
        f"    pathlib.Path({str(flag)!r}).touch()\n"
        "    for i in range(100000):\n"
        "        done = sess.run(step)\n"
        "        progress.update(i + 1)\n"
        "        time.sleep(0.01)")
    text = one(outputs, "text/plain")
    assert "Stopped by you after step" in text and "100000 (100%)" not in text
    after = stream_text(kernel.run("before = sess.run(counter)\nprint(sess.run(step) - before)"))
    assert after.strip() == "1", "the cluster and its variables still work"
    kernel.run("sess.close()\n%tfteach cluster stop")

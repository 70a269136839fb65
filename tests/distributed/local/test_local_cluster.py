"""LocalCluster: real task processes on loopback that start fast, show their logs, can be
killed and restarted, never leak their token and never outlive their owner."""
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dist_helpers import ENGINE, TESTS_DIR, tfteach_segments

from tfteach import errors
from tfteach.distributed.local import task_registry as registry
from tfteach.distributed.transport import shm
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.local.local_cluster import LocalCluster
from tfteach.distributed.engine.probe_engine import run_probe
from tfteach.distributed.transport.processes import pid_alive

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def _pids(cluster):
    return {(r["job"], r["task"]): r["pid"] for r in registry.read_entry(cluster.id)["tasks"]}


def test_all_tasks_answer_and_the_spec_names_them(cluster):
    assert cluster.spec.jobs == ["ps", "worker"]
    assert cluster.spec.num_tasks("worker") == 2
    client = ClusterClient(cluster.token)
    for job, task in [("ps", 0), ("worker", 0), ("worker", 1)]:
        assert cluster.alive(job, task)
        status = client.worker(cluster.target(job, task)).get_status(timeout=10)
        assert status["task"] == f"/job:{job}/replica:0/task:{task}"
    client.close()


def test_target_and_logs_show_each_task(cluster):
    target = cluster.target("worker", 1)
    assert target == "grpc://" + cluster.spec.task_address("worker", 1)
    assert f"Started server with target: {target}" in cluster.logs("worker", 1)


def test_the_token_is_in_no_repr_argv_or_log(cluster):
    texts = [repr(cluster), str(cluster)] + [cluster.logs(job, task) for job, task in
                                             [("ps", 0), ("worker", 0), ("worker", 1)]]
    for pid in _pids(cluster).values():
        texts.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode())
    assert all(cluster.token not in text for text in texts)
    assert len(cluster.token) >= 32


def test_registry_file_is_private_and_lists_every_task(cluster):
    path = registry.registry_dir() / f"{cluster.id}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    entry = json.loads(path.read_text())
    assert entry["owner_pid"] == os.getpid() and entry["token"] == cluster.token
    assert [(t["job"], t["task"]) for t in entry["tasks"]] == [("ps", 0), ("worker", 0),
                                                              ("worker", 1)]
    assert all(cluster.token not in " ".join(t["argv"]) for t in entry["tasks"])


def test_list_clusters_hides_the_token(cluster):
    listed = [c for c in registry.list_clusters() if c["id"] == cluster.id]
    assert len(listed) == 1 and "token" not in listed[0]
    assert cluster.token not in json.dumps(listed)


def test_task_health_reports_devices_and_last_step(cluster):
    client = ClusterClient(cluster.token)
    run_probe(client.worker(cluster.target("ps", 0)), 17,
              {"probe": "produce", "key": "k", "shape": [2]})
    client.close()
    health = registry.task_health(cluster.id, "ps", 0)
    assert health["alive"] and health["last_step"] == 17
    assert health["devices"][0]["name"] == "/job:ps/replica:0/task:0/device:CPU:0"


def test_settings_reach_each_task_engine(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", TESTS_DIR)
    with LocalCluster(ps=1, workers=2, gpus_per_task=2, worker_speeds=[1.0, 0.25],
                      engine=ENGINE) as cluster:
        client = ClusterClient(cluster.token)
        settings = {}
        for job, task in [("ps", 0), ("worker", 0), ("worker", 1)]:
            device = client.worker(cluster.target(job, task)).get_status(10)["devices"][0]
            settings[job, task] = json.loads(device["physical_device_desc"])
        client.close()
    assert {s["TFTEACH_VIRTUAL_GPUS"] for s in settings.values()} == {"2"}
    assert settings["worker", 1]["TFTEACH_DEVICE_SPEED"] == "0.25"
    assert settings["ps", 0]["TFTEACH_DEVICE_SPEED"] is None


def test_kill_and_restart_keep_the_address():
    with LocalCluster(ps=1, workers=1) as cluster:
        client = ClusterClient(cluster.token)
        worker = client.worker(cluster.target("worker", 0), "/job:worker/replica:0/task:0")
        old_pid = _pids(cluster)["worker", 0]
        cluster.kill("worker", 0)
        assert not cluster.alive("worker", 0) and not pid_alive(old_pid)
        with pytest.raises(errors.UnavailableError, match="/job:worker/replica:0/task:0"):
            worker.get_status(timeout=3)
        cluster.restart("worker", 0)
        assert cluster.alive("worker", 0) and _pids(cluster)["worker", 0] != old_pid
        assert worker.get_status(timeout=10)["task"] == "/job:worker/replica:0/task:0"
        assert cluster.logs("worker", 0).count("Started server with target") == 2
        client.close()


def test_extension_functions_control_a_cluster_they_do_not_own():
    cluster = LocalCluster(ps=0, workers=1)
    try:
        registry.kill_task(cluster.id, "worker", 0)
        assert registry.task_health(cluster.id, "worker", 0)["alive"] is False
        assert not cluster.alive("worker", 0)
        new_pid = registry.restart_task(cluster.id, "worker", 0)
        assert cluster.alive("worker", 0) and _pids(cluster)["worker", 0] == new_pid
        registry.stop_cluster(cluster.id)
        assert not pid_alive(new_pid)
        assert all(c["id"] != cluster.id for c in registry.list_clusters())
    finally:
        cluster.close()


def test_close_stops_everything_and_keeps_the_logs():
    cluster = LocalCluster(ps=1, workers=1)
    pids = set(_pids(cluster).values())
    cluster.close()
    assert not any(pid_alive(pid) for pid in pids)
    assert not any(shm.owner_pid(name) in pids for name in tfteach_segments())
    assert "Started server with target" in cluster.logs("ps", 0)
    assert "closed" in repr(cluster)
    with pytest.raises(errors.NotFoundError):
        registry.read_entry(cluster.id)


def test_entries_of_dead_owners_are_dropped():
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    registry.write_entry({"id": "dead-owner", "owner_pid": int(dead), "owner_uid": 0,
                          "created": 0, "token": "t", "tasks": []})
    assert all(c["id"] != "dead-owner" for c in registry.list_clusters())
    assert not (registry.registry_dir() / "dead-owner.json").exists()


def test_tasks_exit_when_their_owner_is_killed(tmp_path):
    script = ("import json, time; from tfteach.distributed.local.local_cluster import LocalCluster; "
              "from tfteach.distributed.local import task_registry as registry; c = LocalCluster(ps=1, workers=1); "
              "print(json.dumps([t['pid'] for t in registry.read_entry(c.id)['tasks']]), "
              "flush=True); time.sleep(60)")
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).parents[3])
    try:
        pids = json.loads(owner.stdout.readline())
        assert all(pid_alive(pid) for pid in pids)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        deadline = time.monotonic() + 20
        while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(pid_alive(pid) for pid in pids)
    finally:
        owner.kill()
        owner.wait()


def test_a_task_that_cannot_start_fails_the_cluster_with_its_output():
    with pytest.raises(errors.UnavailableError, match="exited while starting") as info:
        LocalCluster(ps=0, workers=1, engine="no_such_module:factory")
    assert "Cannot load the engine factory 'no_such_module:factory'" in info.value.message
    assert "Hint:" in str(info.value)
    assert not [c for c in registry.list_clusters() if any(
        t["env"].get("TFTEACH_ENGINE") == "no_such_module:factory" for t in c["tasks"])]


def test_bad_sizes_are_value_errors():
    with pytest.raises(ValueError, match="one speed per worker"):
        LocalCluster(workers=2, worker_speeds=[1.0])
    with pytest.raises(ValueError, match="at least one task"):
        LocalCluster(ps=0, workers=0)


def test_a_process_reaped_between_the_two_checks_is_not_alive(monkeypatch):
    """pid_alive asks kill(pid, 0), then /proc for zombies; a task reaped in between (its
    /proc entry gone) is dead, not 'alive because /proc cannot tell'."""
    from tfteach.distributed.transport import processes

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()                                   # reaped: no /proc entry any more
    monkeypatch.setattr(processes.os, "kill", lambda pid, sig: None)   # kill(0) said "there"
    assert not processes.pid_alive(proc.pid)
    assert not processes.runs(proc.pid, [sys.executable, "-c", "pass"])


def _task_env(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.decode().partition("=")[::2] for p in pairs if p)


def test_tasks_share_the_cores_as_blas_threads_unless_the_environment_says(monkeypatch):
    for name in registry.BLAS_THREAD_ENVS:
        monkeypatch.delenv(name, raising=False)
    share = max(1, len(os.sched_getaffinity(0)) // 2)
    with LocalCluster(ps=1, workers=1) as cluster:
        envs = [_task_env(pid) for pid in _pids(cluster).values()]
    assert [env["OPENBLAS_NUM_THREADS"] for env in envs] == [str(share)] * 2
    assert all(env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == str(share) for env in envs)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    with LocalCluster(ps=1, workers=1) as cluster:
        envs = [_task_env(pid) for pid in _pids(cluster).values()]
    assert [env["OPENBLAS_NUM_THREADS"] for env in envs] == ["3", "3"]
    assert all("OMP_NUM_THREADS" not in env for env in envs)

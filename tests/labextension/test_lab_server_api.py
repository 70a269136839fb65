"""The tfteach server extension, called over HTTP on a real jupyter_server subprocess."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest
from labharness import REPO, JupyterServer, fake_entry, write_entry, write_notebook


@pytest.fixture(scope="module")
def module_server(tmp_path_factory, module_registry):
    env = {"TFTEACH_REGISTRY_DIR": str(module_registry)}
    with JupyterServer(tmp_path_factory.mktemp("server"), env=env) as running:
        yield running


@pytest.fixture
def server(module_server, module_registry):
    """The module's server with an empty registry and no lessons folder."""
    yield module_server
    for path in module_registry.glob("*.json"):
        path.unlink()
    shutil.rmtree(module_server.root_dir / "lessons", ignore_errors=True)


def sleeper() -> subprocess.Popen:
    """A stand-in task process in its own process group (as LocalCluster starts them)."""
    return subprocess.Popen(["sleep", "120"], start_new_session=True)


def test_cluster_list_shows_a_registered_cluster_and_its_tasks(server):
    entry = fake_entry()
    write_entry(entry)
    status, body, _ = server.api("GET", "tfteach/api/clusters")
    assert status == 200
    [cluster] = body["clusters"]
    assert cluster["id"] == entry["id"]
    assert cluster["mine"] is True
    assert cluster["owner_pid"] == os.getpid()
    assert [(t["job"], t["task"], t["address"]) for t in cluster["tasks"]] == [
        ("worker", 0, entry["tasks"][0]["address"]), ("worker", 1, entry["tasks"][1]["address"])]
    assert all(t["alive"] is False and t["devices"] == [] for t in cluster["tasks"])
    assert [t["state"] for t in cluster["tasks"]] == ["stopped", "stopped"]
    assert cluster["notebook"] is None, "this test process is no kernel of the server"


def test_a_task_whose_process_runs_but_never_answered_is_starting(server):
    proc = sleeper()
    try:
        entry = fake_entry(tasks=1)
        entry["tasks"][0].update(pid=proc.pid, argv=["sleep", "120"])
        write_entry(entry)
        [cluster] = server.api("GET", "tfteach/api/clusters")[1]["clusters"]
        assert cluster["tasks"][0]["state"] == "starting"
    finally:
        proc.kill()
        proc.wait()


def test_task_states_go_starting_alive_unreachable_and_start_again_with_a_new_pid():
    from tfteach.notebook.lab_handlers import task_state

    key = ("c-states", "worker", 0, 111)
    assert task_state(key, running=True, alive=False) == "starting"
    assert task_state(key, running=True, alive=True) == "alive"
    assert task_state(key, running=True, alive=False) == "unreachable"
    assert task_state(key, running=False, alive=False) == "stopped"
    assert task_state(key[:3] + (222,), running=True, alive=False) == "starting"


def test_cluster_list_says_which_runtime_runs_the_tasks(server):
    old_entry, tf_entry = fake_entry(), fake_entry()
    old_entry.pop("backend", None)          # written before clusters recorded their backend
    tf_entry["backend"] = "tensorflow"
    write_entry(old_entry)
    write_entry(tf_entry)
    status, body, _ = server.api("GET", "tfteach/api/clusters")
    assert status == 200
    backends = {c["id"]: c["backend"] for c in body["clusters"]}
    assert backends == {old_entry["id"]: "tfteach", tf_entry["id"]: "tensorflow"}


def test_cluster_list_names_a_modelled_network(server):
    plain, modelled = fake_entry(), fake_entry(network="1 Gbit Ethernet")
    write_entry(plain)
    write_entry(modelled)
    status, body, _ = server.api("GET", "tfteach/api/clusters")
    assert status == 200
    networks = {c["id"]: c["network"] for c in body["clusters"]}
    assert networks[plain["id"]] is None and networks[modelled["id"]] == "1 Gbit Ethernet"


def test_cluster_list_never_contains_the_token_argv_or_env(server):
    entry = fake_entry()
    write_entry(entry)
    status, body, raw = server.api("GET", "tfteach/api/clusters")
    assert status == 200 and body["clusters"]
    assert entry["token"] not in raw
    assert "token" not in body["clusters"][0]
    assert all("argv" not in t and "env" not in t for t in body["clusters"][0]["tasks"])


def test_cluster_list_is_empty_without_clusters(server):
    status, body, _ = server.api("GET", "tfteach/api/clusters")
    assert status == 200
    assert body == {"clusters": [], "message": None}


def test_api_refuses_requests_without_the_server_token(server):
    write_entry(fake_entry())
    assert server.api("GET", "tfteach/api/clusters", token=False)[0] == 403


def test_a_foreign_users_cluster_is_listed_but_cannot_be_changed(server):
    entry = fake_entry(owner_uid=os.getuid() + 4242)
    path = write_entry(entry)
    status, body, _ = server.api("GET", "tfteach/api/clusters")
    assert status == 200 and body["clusters"][0]["mine"] is False
    kill = server.api("POST", f"tfteach/api/clusters/{entry['id']}/tasks/worker/0/kill")
    stop = server.api("POST", f"tfteach/api/clusters/{entry['id']}/stop")
    assert kill[0] == 403 and stop[0] == 403
    assert "only its owner" in kill[1]["message"]
    assert path.exists()


def test_actions_on_an_unknown_cluster_are_not_found(server):
    status, body, _ = server.api("POST", "tfteach/api/clusters/nope/stop")
    assert status == 404
    assert "Hint:" in body["message"]


def test_kill_stops_the_task_process(server):
    proc = sleeper()
    try:
        entry = fake_entry(tasks=1)
        entry["tasks"][0].update(pid=proc.pid, argv=["sleep", "120"])
        write_entry(entry)
        status, body, _ = server.api(
            "POST", f"tfteach/api/clusters/{entry['id']}/tasks/worker/0/kill")
        assert status == 200, body
        assert proc.wait(timeout=10) == -9
    finally:
        proc.kill()
        proc.wait()


def test_stop_ends_every_task_and_forgets_the_cluster(server):
    procs = [sleeper(), sleeper()]
    try:
        entry = fake_entry(tasks=2)
        for record, proc in zip(entry["tasks"], procs):
            record.update(pid=proc.pid, argv=["sleep", "120"])
        path = write_entry(entry)
        status, body, _ = server.api("POST", f"tfteach/api/clusters/{entry['id']}/stop")
        assert status == 200, body
        assert [p.wait(timeout=10) for p in procs] == [-15, -15]
        assert not path.exists()
        assert server.api("GET", "tfteach/api/clusters")[1]["clusters"] == []
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_lessons_point_at_the_first_lesson_under_the_root(server):
    write_notebook(server.root_dir / "lessons" / "02_clusters.ipynb", "1")
    write_notebook(server.root_dir / "lessons" / "01_device_placement.ipynb", "1")
    status, body, _ = server.api("GET", "tfteach/api/lessons")
    assert status == 200
    assert body["dir"] == "lessons"
    assert body["first"] == "lessons/01_device_placement.ipynb"


def test_lessons_in_a_language_point_at_its_folders_first_lesson(server):
    write_notebook(server.root_dir / "lessons" / "01_device_placement.ipynb", "1")
    write_notebook(server.root_dir / "lessons" / "ko" / "01_device_placement.ipynb", "1")
    status, body, _ = server.api("GET", "tfteach/api/lessons?lang=ko")
    assert status == 200
    assert body["dir"] == "lessons/ko"
    assert body["first"] == "lessons/ko/01_device_placement.ipynb"


def test_lessons_in_a_language_without_its_folder_say_so(server):
    write_notebook(server.root_dir / "lessons" / "01_device_placement.ipynb", "1")
    status, body, _ = server.api("GET", "tfteach/api/lessons?lang=ru")
    assert status == 200
    assert body["dir"] is None and body["first"] is None
    assert "lessons/ru/" in body["message"] and "\nПодсказка: " in body["message"], \
        "the hint in the language the lessons were asked in"


def test_lessons_in_an_unknown_language_are_a_bad_request(server):
    write_notebook(server.root_dir / "lessons" / "01_device_placement.ipynb", "1")
    status, body, _ = server.api("GET", "tfteach/api/lessons?lang=xx")
    assert status == 400
    assert "'xx'" in body["message"] and "ko" in body["message"]


def test_lessons_without_a_lessons_folder_explain_how_to_get_them(server):
    status, body, _ = server.api("GET", "tfteach/api/lessons")
    assert status == 200
    assert body["dir"] is None and body["first"] is None
    assert "Hint:" in body["message"] and "tfteach lessons copy" in body["message"]


def test_importing_the_server_extension_does_not_load_ipywidgets():
    code = ("import sys, tfteach.notebook.lab_handlers as s; "
            "print(json.dumps([callable(s._load_jupyter_server_extension), "
            "'ipywidgets' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [True, False]


def test_a_missing_registry_module_gives_no_clusters_and_a_hint(monkeypatch):
    import tfteach.distributed.local
    from tfteach.notebook import lab_handlers as extension

    monkeypatch.delattr(tfteach.distributed.local, "task_registry", raising=False)
    monkeypatch.setitem(sys.modules, "tfteach.distributed.local.task_registry", None)
    registry, why = extension._load_registry()
    assert registry is None
    assert "no LocalCluster can be listed" in why and "\nHint:" in why


def test_health_devices_become_names():
    from tfteach.notebook.lab_handlers import device_names

    assert device_names([{"name": "/job:ps/replica:0/task:0/device:CPU:0", "device_type": "CPU"},
                         "/job:worker/replica:0/task:0/device:CPU:0", ]) == [
        "/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0"]
    assert device_names(None) == []


@pytest.fixture
def local_cluster(server):
    from tfteach.distributed import LocalCluster

    cluster = LocalCluster(ps=1, workers=1)
    yield cluster
    cluster.close()


def tasks_by_name(server) -> tuple[dict, str]:
    status, body, raw = server.api("GET", "tfteach/api/clusters")
    assert status == 200, raw
    [cluster] = body["clusters"]
    return {f"{t['job']}:{t['task']}": t for t in cluster["tasks"]}, cluster["id"]


@pytest.mark.cluster
def test_a_running_local_cluster_is_listed_alive_with_device_names(server, local_cluster):
    tasks, _ = tasks_by_name(server)
    assert sorted(tasks) == ["ps:0", "worker:0"]
    assert all(t["alive"] and t["error"] is None for t in tasks.values())
    assert tasks["worker:0"]["devices"] == ["/job:worker/replica:0/task:0/device:CPU:0"]


@pytest.mark.cluster
def test_killed_task_reads_stopped_until_it_is_restarted(server, local_cluster):
    _, cluster_id = tasks_by_name(server)
    url = f"tfteach/api/clusters/{cluster_id}/tasks/worker/0/"
    assert server.api("POST", url + "kill")[0] == 200
    worker = tasks_by_name(server)[0]["worker:0"]
    assert worker["alive"] is False and worker["state"] == "stopped"
    status, body, _ = server.api("POST", url + "restart")
    assert status == 200, body
    tasks, _ = tasks_by_name(server)
    assert [tasks[t]["state"] for t in ("ps:0", "worker:0")] == ["alive", "alive"]


@pytest.mark.cluster
def test_a_task_that_stops_answering_reads_unreachable_then_alive_again(server, local_cluster):
    assert tasks_by_name(server)[0]["worker:0"]["state"] == "alive"
    pid = _task_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        assert tasks_by_name(server)[0]["worker:0"]["state"] == "unreachable"
    finally:
        os.kill(pid, signal.SIGCONT)
    assert tasks_by_name(server)[0]["worker:0"]["state"] == "alive"


def _task_pid() -> int:
    """The pid of the one registered cluster's worker 0."""
    from tfteach.distributed.local import task_registry as registry

    [entry] = registry.list_clusters()
    return registry.task_pid(registry.find_task(entry, "worker", 0))


@pytest.mark.cluster
def test_health_checks_leave_the_callers_malloc_settings_alone(local_cluster):
    from tfteach.distributed.local import task_registry as registry

    [entry] = registry.list_clusters()
    code = ("import sys; from tfteach.distributed.local import task_registry as registry\n"
            "from tfteach.runtime import host_memory\n"
            f"assert registry.task_health({entry['id']!r}, 'worker', 0)['alive']\n"
            "print(host_memory._state['done'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_lessons_at_the_server_root_itself_are_found(server):
    write_notebook(server.root_dir / "01_device_placement.ipynb", "1")
    write_notebook(server.root_dir / "02_placing_by_hand.ipynb", "1")
    status, body, _ = server.api("GET", "tfteach/api/lessons")
    assert status == 200
    assert body["dir"] == "" and body["first"] == "01_device_placement.ipynb"
    assert body["message"] == "2 lesson notebooks in the server's root folder"


def test_find_lessons_prefers_a_lessons_folder_over_notebooks_at_the_root(tmp_path):
    from tfteach.notebook.lab_handlers import find_lessons

    write_notebook(tmp_path / "01_device_placement.ipynb", "1")
    write_notebook(tmp_path / "lessons" / "01_device_placement.ipynb", "1")
    assert find_lessons(tmp_path)["first"] == "lessons/01_device_placement.ipynb"
    assert find_lessons(tmp_path / "lessons")["first"] == "01_device_placement.ipynb"
    assert find_lessons(tmp_path / "nothing")["dir"] is None


def test_find_lessons_in_a_language_at_the_server_root_itself(tmp_path):
    from tfteach.notebook.lab_handlers import find_lessons

    write_notebook(tmp_path / "01_device_placement.ipynb", "1")
    write_notebook(tmp_path / "zh" / "01_device_placement.ipynb", "1")
    assert find_lessons(tmp_path, "zh")["first"] == "zh/01_device_placement.ipynb"

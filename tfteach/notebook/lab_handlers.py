"""The server side of the tfteach JupyterLab extension: REST handlers under /tfteach/api/.

    GET  /tfteach/api/clusters                                   live LocalClusters + state
    POST /tfteach/api/clusters/<id>/tasks/<job>/<task>/kill      SIGKILL one task
    POST /tfteach/api/clusters/<id>/tasks/<job>/<task>/restart   start it again, same port
    POST /tfteach/api/clusters/<id>/stop                         stop every task
    GET  /tfteach/api/lessons[?lang=ko|zh|ru]                    where the lessons are (in a
                                                                 language: lessons/<lang>/)

The cluster data comes from ``tfteach.distributed.local.task_registry`` (imported lazily, so a
missing or broken registry gives an empty list and a message, not a dead server). Each task
has a ``state``: ``starting`` (its process runs but has not answered yet), ``alive``
(answers its health check), ``unreachable`` (answered before, not now) or ``stopped`` (no
process); each cluster names the ``notebook`` whose kernel started it (from this server's
sessions, matched by the kernel's pid; null when no kernel of this server owns it).
The health checks leave the server process's allocator alone (``ClusterClient``'s
``status_only``).
Invariants: no cluster token (and no task argv or env, which might carry secrets) is ever
sent to the browser: clusters are rebuilt from a whitelist of fields; only clusters whose
``owner_uid`` is this server's uid can be changed (403 otherwise); every handler is behind
the server's own authentication and XSRF checks (``APIHandler`` + ``authenticated``).
Blocking registry calls (files, gRPC health checks, signals) run in a thread pool.
State: the tasks (cluster, job, task, pid) that have answered once, so a restarted process
starts again as ``starting``. Importing this module loads neither ipywidgets nor the
engine's heavy parts.
"""
from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from tfteach.errors import with_hint
from tfteach.i18n import LANGUAGES, hint_line, join, tr

API_ROOT = "tfteach/api"
FIRST_LESSON = "01_device_placement.ipynb"
_TASK_FIELDS = ("job", "task", "address", "pid")
_CLUSTER_FIELDS = ("id", "owner_pid", "owner_uid", "created", "backend")
_DEAD = {"alive": False, "devices": [], "last_step": None}
STATES = ("starting", "alive", "unreachable", "stopped")
_answered: set[tuple] = set()   # (cluster id, job, task, pid) of tasks that answered once


def _load_registry() -> tuple[Any, str | None]:
    """The registry module, or (None, why it cannot be used)."""
    try:
        from tfteach.distributed.local import task_registry as registry
    except ImportError as exc:
        return None, with_hint(
            "tfteach's cluster registry is not available in this server's Python "
            f"({exc}), so no LocalCluster can be listed.",
            tr("install tfteach with its distributed runtime into the environment running "
               "Jupyter."))
    return registry, None


async def _blocking(func: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking registry call in the default thread pool."""
    return await asyncio.get_running_loop().run_in_executor(
        None, functools.partial(func, *args))


def public_cluster(entry: dict[str, Any], uid: int) -> dict[str, Any]:
    """The fields of a registry entry that may reach a browser (whitelisted), with
    ``mine`` telling whether ``uid`` owns it, ``backend`` which runtime runs its tasks
    (``"tfteach"`` or ``"tensorflow"``) and ``network`` the modelled link between them
    (None: this machine's loopback)."""
    cluster = {key: entry.get(key) for key in _CLUSTER_FIELDS}
    cluster["id"] = str(cluster["id"])
    cluster["backend"] = str(cluster["backend"] or "tfteach")
    cluster["network"] = str(entry["network"]) if entry.get("network") else None
    cluster["mine"] = entry.get("owner_uid") == uid
    cluster["tasks"] = [{key: task.get(key) for key in _TASK_FIELDS}
                        for task in entry.get("tasks", [])]
    return cluster


def device_names(devices: Any) -> list[str]:
    """Device names from a health answer, whose devices may be names or attribute dicts
    (``{"name", "device_type", ...}``)."""
    return [str(d.get("name", "")) if isinstance(d, dict) else str(d) for d in devices or []]


def task_state(key: tuple, running: bool, alive: bool) -> str:
    """One of ``STATES`` for a task whose process runs (or not) and that answered now (or
    not); remembers which tasks have answered, by ``key`` (cluster, job, task, pid)."""
    if alive:
        _answered.add(key)
        return "alive"
    if not running:
        return "stopped"
    return "unreachable" if key in _answered else "starting"


def _check_task(registry: Any, cluster: dict[str, Any], record: dict[str, Any]) -> dict:
    """Blocking: whether the task's process runs, and its health if it does."""
    running = registry.task_pid(record) is not None
    health = registry.task_health(cluster, record["job"], record["task"]) if running else _DEAD
    return {"running": running, **health}


async def _task_health(registry: Any, cluster: dict[str, Any], task: dict[str, Any],
                       record: dict[str, Any]) -> dict:
    """A task's health and state; a failing check reads as not answering, with the reason."""
    key = (cluster["id"], task["job"], task["task"], task["pid"])
    try:
        health = await _blocking(_check_task, registry, cluster, record)
    except Exception as exc:  # noqa: BLE001 (a broken entry must not break the list)
        return dict(_DEAD, state=task_state(key, True, False),
                    error=f"{type(exc).__name__}: {exc}")
    alive = bool(health.get("alive"))
    return {"alive": alive, "state": task_state(key, health["running"], alive),
            "devices": device_names(health.get("devices")),
            "last_step": health.get("last_step"), "error": None}


async def describe_clusters(registry: Any, uid: int,
                            notebooks: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """Every live cluster, public fields only, each task with its health and state, and
    the notebook (from ``notebooks``: kernel pid -> path) whose kernel started it."""
    entries = await _blocking(registry.list_clusters)
    clusters = [public_cluster(entry, uid) for entry in entries]
    checks = [_task_health(registry, c, t, r) for c, e in zip(clusters, entries, strict=True)
              for t, r in zip(c["tasks"], e.get("tasks", []), strict=True)]
    healths = iter(await asyncio.gather(*checks))
    for cluster in clusters:
        cluster["notebook"] = (notebooks or {}).get(cluster["owner_pid"])
        for task in cluster["tasks"]:
            task.update(next(healths))
    return clusters


class _Base(APIHandler):
    """Shared checks: the registry is there, the cluster exists and is ours."""

    def _registry(self) -> Any:
        registry, why = _load_registry()
        if registry is None:
            raise tornado.web.HTTPError(503, why)
        return registry

    async def _owned(self, registry: Any, cluster_id: str) -> dict[str, Any]:
        for entry in await _blocking(registry.list_clusters):
            if str(entry.get("id")) != cluster_id:
                continue
            if entry.get("owner_uid") != os.getuid():
                raise tornado.web.HTTPError(403, with_hint(
                    f"LocalCluster {cluster_id} belongs to uid {entry.get('owner_uid')}, "
                    f"not to this server's uid {os.getuid()}; only its owner may change it.",
                    tr("stop it from the notebook that started it.")))
            return entry
        raise tornado.web.HTTPError(404, with_hint(
            f"No running LocalCluster with id {cluster_id!r}.",
            tr("it may have been closed, or its notebook kernel stopped; refresh the list.")))

    async def _act(self, func: Callable[..., Any], *args: Any) -> Any:
        """Run a registry action; OpErrors become HTTP errors carrying their message."""
        from tfteach import errors

        try:
            return await _blocking(func, *args)
        except errors.NotFoundError as exc:
            raise tornado.web.HTTPError(404, str(exc)) from exc
        except errors.OpError as exc:
            raise tornado.web.HTTPError(500, str(exc)) from exc


class ClustersHandler(_Base):
    @tornado.web.authenticated
    async def get(self) -> None:
        registry, why = _load_registry()
        clusters = [] if registry is None else await describe_clusters(
            registry, os.getuid(), await self._kernel_notebooks())
        self.finish(json.dumps({"clusters": clusters, "message": why}))

    async def _kernel_notebooks(self) -> dict[int, str]:
        """Kernel process id -> the path of the notebook its session belongs to."""
        try:
            sessions = await self.session_manager.list_sessions()
        except Exception:  # noqa: BLE001 (no sessions: clusters show their pid)
            return {}
        out = {}
        for session in sessions:
            kernel_id = (session.get("kernel") or {}).get("id")
            try:
                kernel = self.kernel_manager.get_kernel(kernel_id)
            except KeyError:
                continue
            pid = getattr(getattr(kernel, "provisioner", None), "pid", None)
            if pid:
                out[int(pid)] = session.get("path") or session.get("name") or ""
        return out


class TaskActionHandler(_Base):
    @tornado.web.authenticated
    async def post(self, cluster_id: str, job: str, task: str, action: str) -> None:
        registry = self._registry()
        await self._owned(registry, cluster_id)
        func = registry.kill_task if action == "kill" else registry.restart_task
        await self._act(func, cluster_id, job, int(task))
        self.finish(json.dumps({"ok": True, "action": action, "cluster": cluster_id,
                                "task": f"/job:{job}/task:{task}"}))


class StopClusterHandler(_Base):
    @tornado.web.authenticated
    async def post(self, cluster_id: str) -> None:
        registry = self._registry()
        await self._owned(registry, cluster_id)
        await self._act(registry.stop_cluster, cluster_id)
        self.finish(json.dumps({"ok": True, "action": "stop", "cluster": cluster_id}))


def find_lessons(root: Path, lang: str = "en") -> dict[str, Any]:
    """Where the lessons are under the server root: ``{dir, first, message}`` with paths
    relative to ``root`` (``first`` prefers 01_device_placement.ipynb). They are in its
    ``lessons/`` folder (JupyterLab started at the repository root or above a working copy),
    or the root holds them itself (started with ``jupyter lab lessons/``): then ``dir`` is
    ``""``. A ``lang`` other than English looks in that folder's ``<lang>/`` subfolder."""
    folder = root / "lessons"
    if folder.is_dir():
        return _lessons_in(folder, "lessons/", "lessons/", lang)
    if (root / FIRST_LESSON).is_file() or any(root.glob("[0-9][0-9]_*.ipynb")):
        return _lessons_in(root, "", "the server's root folder", lang)
    return {"dir": None, "first": None, "message": (
        f"There is no lessons/ folder in the server's root folder {root}.\n" + hint_line(tr(
            "run `tfteach lessons copy lessons` in a terminal there, or copy the lessons/ "
            "folder of the tfteach repository into it, then try again.", lang=lang), lang))}


def _lessons_in(folder: Path, prefix: str, where: str, lang: str = "en") -> dict[str, Any]:
    if lang != "en":
        folder, prefix, where = folder / lang, f"{prefix}{lang}/", f"{prefix}{lang}/"
        if not folder.is_dir():
            return {"dir": None, "first": None, "message": (
                f"There is no {prefix} folder: these lessons have no {lang!r} translation.\n"
                + hint_line(tr("run `tfteach lessons copy lessons` again to get the translated "
                               "lessons, or open the English ones.", lang=lang), lang))}
    notebooks = sorted(p.name for p in folder.glob("*.ipynb"))
    first = FIRST_LESSON if FIRST_LESSON in notebooks else (notebooks[0] if notebooks else None)
    return {"dir": prefix.rstrip("/"), "first": f"{prefix}{first}" if first else None,
            "message": f"{len(notebooks)} lesson notebooks in {where}"}


class LessonsHandler(APIHandler):
    @tornado.web.authenticated
    def get(self) -> None:
        root = getattr(self.contents_manager, "root_dir", None) or self.settings.get(
            "server_root_dir", os.getcwd())
        lang = self.get_query_argument("lang", "en")
        if lang not in LANGUAGES:
            raise tornado.web.HTTPError(400, with_hint(
                f"There are no lessons in the language {lang!r}.",
                tr("ask for one of {languages}.", languages=join(LANGUAGES))))
        self.finish(json.dumps(find_lessons(Path(os.path.expanduser(root)), lang)))


def handlers(base_url: str) -> list[tuple[str, type]]:
    """The URL patterns of the API under ``base_url``."""
    api = url_path_join(base_url, API_ROOT)
    return [
        (url_path_join(api, "clusters"), ClustersHandler),
        (url_path_join(api, r"clusters/([^/]+)/tasks/([^/]+)/(\d+)/(kill|restart)"),
         TaskActionHandler),
        (url_path_join(api, r"clusters/([^/]+)/stop"), StopClusterHandler),
        (url_path_join(api, "lessons"), LessonsHandler),
    ]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "tfteach.notebook.lab_handlers"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Add the tfteach API to a running jupyter_server."""
    web_app = serverapp.web_app
    web_app.add_handlers(".*$", handlers(web_app.settings["base_url"]))
    serverapp.log.info("tfteach server extension loaded: /%s", API_ROOT)

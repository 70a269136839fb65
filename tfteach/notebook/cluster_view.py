"""The cluster status view and the kernel's one LocalCluster behind ``%tfteach cluster``.

``ClusterStatus(cluster)`` shows, per task: its name (``worker:1``), address, devices,
alive/dead and the last step it ran, asked over gRPC through
``tfteach.distributed.local.task_registry.task_health`` (falling back to ``cluster.alive`` when the
registry cannot answer). Its MIME bundle is a static HTML/text table, plus, in a kernel with
ipywidgets, a live widget that a daemon thread refreshes every ``refresh_s`` seconds until
``stop()`` or until the cluster has closed.

``ClusterController`` owns at most one LocalCluster per kernel (state: ``cluster``, ``status``)
and stops it at interpreter exit; a cluster on a modelled network (``--network``) says so in
every status title. ``tfteach.distributed`` is imported only when a cluster is
started, so the notebook layer works without the cluster runtime.
"""
from __future__ import annotations

import atexit
import threading
from typing import Any, Sequence

from tfteach.errors import with_hint
from tfteach.i18n import N_, clauses, tr, trn
from tfteach.notebook.style import html_escape, kernel_running, text_table
from tfteach.notebook.view import widget_only_bundle
from tfteach.timeline import short_device

_HEAD = (N_("task"), N_("address"), N_("devices"), N_("state"), N_("last step"))


def task_rows(cluster: Any) -> list[dict[str, Any]]:
    """One row per task, jobs in ClusterSpec order, tasks by index."""
    rows = []
    for job, addresses in cluster.spec.as_dict().items():
        for index, address in enumerate(addresses):
            health = _health(cluster, job, index)
            rows.append({"task": f"{job}:{index}", "address": address,
                         "devices": [_device_short(d) for d in health["devices"]],
                         "alive": bool(health["alive"]), "last_step": health["last_step"]})
    return rows


def _device_short(device: Any) -> str:
    """``CPU:0`` from a device attribute dict or a full device name."""
    name = device.get("name", "") if isinstance(device, dict) else str(device)
    return short_device(name).rsplit("/", 1)[-1]


def _health(cluster: Any, job: str, index: int) -> dict[str, Any]:
    try:
        from tfteach.distributed.local import task_registry as registry

        return registry.task_health(cluster.id, job, index)
    except Exception:  # noqa: BLE001 - no registry answer: fall back to the process table
        return {"alive": cluster.alive(job, index), "devices": [], "last_step": None}


def _cells(row: dict[str, Any]) -> tuple[str, ...]:
    return (row["task"], row["address"], clauses(row["devices"]) or "-",
            tr("alive") if row["alive"] else tr("stopped"),
            "-" if row["last_step"] is None else str(row["last_step"]))


def rows_text(rows: list[dict[str, Any]]) -> str:
    return text_table([tuple(tr(h) for h in _HEAD)] + [_cells(r) for r in rows])  # i18n: dynamic


def rows_html(rows: list[dict[str, Any]]) -> str:
    head = "".join(f"<th style='text-align:left'>{tr(h)}</th>" for h in _HEAD)  # i18n: dynamic
    body = ""
    for r in rows:
        color = ("var(--jp-success-color1,#1E8449)" if r["alive"]
                 else "var(--jp-error-color1,#C0392B)")
        cells = [html_escape(c) for c in _cells(r)]
        cells[3] = f"<b style='color:{color}'>{cells[3]}</b>"
        body += "<tr>" + "".join(f"<td style='text-align:left'>{c}</td>" for c in cells) + "</tr>"
    return (f"<table class='tfteach-cluster'><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>")


class ClusterStatus:
    """A snapshot table of a cluster's tasks, with a live widget in a kernel."""

    def __init__(self, cluster: Any, refresh_s: float = 2.0, title: str = "",
                 live: bool = True) -> None:
        self.cluster = cluster
        self.refresh_s = refresh_s
        self.live = live
        self.title = title
        self.rows = task_rows(cluster)
        self._widget: Any = None
        self._stop = threading.Event()

    def refresh(self) -> None:
        self.rows = task_rows(self.cluster)
        if self._widget is not None:
            self._widget.value = self.html()

    def text(self) -> str:
        return (f"{self.title}\n" if self.title else "") + rows_text(self.rows)

    def html(self) -> str:
        title = f"<p><b>{html_escape(self.title)}</b></p>" if self.title else ""
        return title + rows_html(self.rows)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle = {"text/html": self.html(), "text/plain": self.text()}
        if self.live and kernel_running():
            widget = self.widget()
            if widget is not None:
                bundle.update(widget_only_bundle(widget))
        return bundle

    def widget(self) -> Any:
        """The live HTML widget (None without ipywidgets); the first call starts the thread
        that refreshes it every ``refresh_s`` seconds."""
        try:
            import ipywidgets as w
        except ImportError:
            return None
        if self._widget is None:
            self._widget = w.HTML(value=self.html())
            threading.Thread(target=self._refresh_loop, name="tfteach-cluster-status",
                             daemon=True).start()
        return self._widget

    def _refresh_loop(self) -> None:
        while not self._stop.wait(self.refresh_s):
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 - a failed refresh keeps the last table
                continue

    def stop(self) -> None:
        """Stop refreshing (the table stays as it was)."""
        self._stop.set()


class ClusterController:
    """The kernel's LocalCluster: start, status, kill, restart, stop."""

    def __init__(self) -> None:
        self.cluster: Any = None
        self.status: ClusterStatus | None = None
        atexit.register(self.stop)

    def start(self, ps: int = 1, workers: int = 2, gpus_per_task: int = 0,
              speeds: Sequence[float] | None = None, network: Any = None) -> ClusterStatus:
        if self.cluster is not None:
            raise RuntimeError(with_hint(
                tr("A cluster is already running in this kernel."),
                tr("run `%tfteach cluster stop` first, or use it as it is.")))
        local_cluster = load_local_cluster()
        self.cluster = local_cluster(ps=ps, workers=workers, gpus_per_task=gpus_per_task,
                                     worker_speeds=list(speeds) if speeds else None,
                                     network=network)
        return self.show(trn("Started a cluster: {ps} ps, {n} worker",
                             "Started a cluster: {ps} ps, {n} workers", workers, ps=ps))

    def require(self) -> Any:
        if self.cluster is None:
            raise RuntimeError(with_hint(
                tr("No cluster is running in this kernel."),
                tr("start one with `%tfteach cluster start --ps 1 --workers 2`.")))
        return self.cluster

    def show(self, title: str = "") -> ClusterStatus:
        self.require()
        if self.status is not None:
            self.status.stop()
        link = getattr(self.cluster, "network", None)
        if link is not None:
            title += tr(" (network between tasks modelled as {link})", link=link.name)
        self.status = ClusterStatus(self.cluster, title=title)
        return self.status

    def kill(self, job: str, task: int) -> ClusterStatus:
        self.require().kill(job, task)
        return self.show(tr("Killed {task}", task=f"{job}:{task}"))

    def restart(self, job: str, task: int) -> ClusterStatus:
        self.require().restart(job, task)
        return self.show(tr("Restarted {task}", task=f"{job}:{task}"))

    def stop(self) -> ClusterStatus | None:
        if self.cluster is None:
            return None
        cluster, self.cluster = self.cluster, None
        if self.status is not None:
            self.status.stop()
        cluster.close()
        self.status = None
        return ClusterStatus(cluster, title=tr("Stopped the cluster"), live=False)


def load_local_cluster() -> Any:
    """``tfteach.distributed.local.local_cluster.LocalCluster``, or a learner-friendly error."""
    try:
        from tfteach.distributed.local.local_cluster import LocalCluster
    except ImportError as exc:
        raise RuntimeError(with_hint(
            tr("The cluster runtime is not available ({error}).", error=exc),
            tr("install tfteach with its distributed extras and restart the kernel."))
        ) from None
    return LocalCluster


def parse_task(text: str) -> tuple[str, int]:
    """``worker:1`` or ``/job:worker/task:1`` -> ("worker", 1)."""
    text = text.strip()
    if text.startswith("/"):
        fields = dict(p.split(":", 1) for p in text.strip("/").split("/") if ":" in p)
        job, task = fields.get("job"), fields.get("task", "0")
    else:
        job, _, task = text.partition(":")
    if not job or not str(task).isdigit():
        raise ValueError(with_hint(tr("Cannot read the task {task}.", task=repr(text)),
                                   tr("write it as job:index, e.g. worker:1 or ps:0.")))
    return job, int(task)

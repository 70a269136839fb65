"""Helpers for testing the JupyterLab extension against real servers and a real browser.

Reusable pieces (import them from ``labharness``; the fixtures are in conftest.py):
  * ``JupyterServer``: a real ``jupyter server`` / ``jupyter lab`` subprocess on a free
    loopback port with a token, an isolated config/data/runtime dir, the tfteach server
    extension enabled and this checkout's built labextension in front of any installed one;
    ``.api(method, path)`` calls its REST API, ``.set_lab_setting`` writes a user setting
    (the display language, say).
  * ``write_notebook``: a notebook file from code cells.
  * ``LabPage``: a Playwright page on that server: open a file, run all cells or one cell
    (found by its source), wait for the kernel, find a launcher card, take a screenshot into
    test-artifacts/.
  * ``fake_entry`` / ``write_entry``: a registry entry written through the real registry.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
LABEXTENSION_SRC = REPO / "labextension"
LABEXTENSION_BUILD = REPO / "tfteach" / "labextension"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SERVER_EXTENSION = "tfteach.notebook.lab_handlers"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_npm(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run npm in labextension/ and return the finished process (output captured)."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH; the labextension needs node >= 18 and npm to build")
    return subprocess.run([npm, *args], cwd=LABEXTENSION_SRC, capture_output=True, text=True,
                          timeout=timeout, check=False)


def ensure_node_modules() -> None:
    """Install the labextension's npm dependencies from its lock file if they are missing."""
    if not (LABEXTENSION_SRC / "node_modules" / ".package-lock.json").exists():
        done = run_npm("ci")
        assert done.returncode == 0, done.stdout + done.stderr


def _newest_source_mtime() -> float:
    """When the labextension's sources (src/, style/, package.json) last changed."""
    files = [LABEXTENSION_SRC / "package.json"]
    files += [p for d in ("src", "style") for p in (LABEXTENSION_SRC / d).rglob("*")
              if p.is_file()]
    return max(p.stat().st_mtime for p in files)


def ensure_labextension_built() -> Path:
    """This checkout's built labextension (built here if `pip install` has not yet, or
    rebuilt if a source changed since the last build)."""
    built = LABEXTENSION_BUILD / "package.json"
    if not built.exists() or built.stat().st_mtime < _newest_source_mtime():
        ensure_node_modules()
        done = run_npm("run", "build:prod")
        assert done.returncode == 0, done.stdout + done.stderr
    return LABEXTENSION_BUILD


def _quiet_lab_settings(settings_dir: Path) -> None:
    """Lab user settings that keep news and update pop-ups out of the screenshots."""
    folder = settings_dir / "@jupyterlab" / "apputils-extension"
    folder.mkdir(parents=True)
    (folder / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))


class JupyterServer:
    """A real Jupyter server subprocess; use as a context manager or call stop()."""

    def __init__(self, workdir: Path, app: str = "server", env: dict[str, str] | None = None,
                 root_dir: Path | None = None) -> None:
        self.workdir = workdir
        self.root_dir = root_dir or workdir / "root"
        self.root_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.token = uuid.uuid4().hex
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = workdir / f"jupyter-{app}.log"
        self.settings_dir = workdir / "lab-settings"
        self.proc = subprocess.Popen(self._argv(app), env=self._env(env or {}), cwd=workdir,
                                     stdout=self.log_path.open("wb"), stderr=subprocess.STDOUT)
        self._wait_ready(timeout=90)

    def _argv(self, app: str) -> list[str]:
        argv = [sys.executable, "-m", "jupyter", app, "--no-browser", f"--port={self.port}",
                "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root_dir}"]
        if os.getuid() == 0:
            argv.append("--allow-root")
        if app == "lab":
            ext_dir = self.workdir / "labextensions"
            ext_dir.mkdir(exist_ok=True)
            (ext_dir / "tfteach").symlink_to(ensure_labextension_built(), target_is_directory=True)
            settings = self.settings_dir
            _quiet_lab_settings(settings)
            argv += [f"--LabApp.extra_labextensions_path={ext_dir}",
                     f"--LabApp.user_settings_dir={settings}",
                     f"--LabApp.workspaces_dir={self.workdir / 'workspaces'}",
                     "--LabApp.expose_app_in_browser=True"]
        return argv

    def _env(self, extra: dict[str, str]) -> dict[str, str]:
        config = self.workdir / "config"
        config.mkdir(exist_ok=True)
        (config / "jupyter_server_config.json").write_text(json.dumps(
            {"ServerApp": {"jpserver_extensions": {SERVER_EXTENSION: True}}}))
        env = dict(os.environ)
        env.update({
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_DATA_DIR": str(self.workdir / "data"),
            "JUPYTER_RUNTIME_DIR": str(self.workdir / "runtime"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
        })
        env.update(extra)
        return env

    def set_lab_setting(self, plugin: str, values: dict[str, Any]) -> Path:
        """Write a lab user setting (``plugin`` as ``@scope/package:name``), read by the next
        page opened, e.g. ``("@jupyterlab/translation-extension:plugin", {"locale": "ko_KR"})``
        for JupyterLab's display language."""
        package, name = plugin.split(":")
        path = self.settings_dir / package / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
        return path

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"jupyter exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.api("GET", "api/status")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        pytest.fail(f"jupyter did not answer in {timeout} s:\n{self.log_tail()}")

    def api(self, method: str, path: str, body: Any = None, token: bool = True
            ) -> tuple[int, Any, str]:
        """Call the server: returns (status, parsed JSON or None, raw body)."""
        data = None if body is None else json.dumps(body).encode()
        if method == "POST" and data is None:
            data = b"{}"
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if token:
            request.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read().decode()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return status, parsed, raw

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.api("POST", "api/shutdown")
                self.proc.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()

    def __enter__(self) -> JupyterServer:  # noqa: PYI034 (Self needs Python 3.11)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def write_notebook(path: Path, *cells: str) -> Path:
    """Write a Python 3 notebook with the given code cells (no outputs)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def fake_entry(owner_uid: int | None = None, tasks: int = 2, **extra: Any) -> dict[str, Any]:
    """A registry entry owned by this test process with tasks that are not running
    (pid None), and a token that must never reach a browser."""
    cluster_id = f"test-{uuid.uuid4().hex[:8]}"
    token = f"secret-{uuid.uuid4().hex}"
    entry = {
        "id": cluster_id, "owner_pid": os.getpid(),
        "owner_uid": os.getuid() if owner_uid is None else owner_uid,
        "created": time.time(), "token": token,
        "tasks": [{"job": "worker", "task": i, "address": f"127.0.0.1:{free_port()}",
                   "pid": None, "argv": ["tfteach-server", "--token", token],
                   "env": {"TFTEACH_SECRET_PROBE": token}, "log": os.devnull}
                  for i in range(tasks)],
    }
    entry.update(extra)
    return entry


def write_entry(entry: dict[str, Any]) -> Path:
    """Write ``entry`` with the real registry module (into $TFTEACH_REGISTRY_DIR)."""
    from tfteach.distributed.local import task_registry as registry

    return registry.write_entry(entry)


# ---------------------------------------------------------------- browser helpers


class LabPage:
    """A JupyterLab tab in the browser, with the few moves the tests need."""

    def __init__(self, browser: Any, server: JupyterServer,
                 viewport: tuple[int, int] = (1400, 900)) -> None:
        self.server = server
        self.context = browser.new_context(viewport={"width": viewport[0],
                                                     "height": viewport[1]})
        self.page = self.context.new_page()
        self.console: list[str] = []
        self.page.on("console", lambda msg: self.console.append(f"{msg.type}: {msg.text}"))

    def open(self, path: str = "", timeout_ms: int = 60000) -> None:
        """Open JupyterLab with a fresh workspace (showing ``path`` if given) and wait
        until the app has started."""
        where = f"lab/tree/{path}" if path else "lab"
        url = f"{self.server.url}{where}?reset&token={self.server.token}"
        self.page.goto(url)
        self.page.wait_for_function("() => !!window.jupyterapp", timeout=timeout_ms)
        self.page.evaluate("() => window.jupyterapp.restored")
        # A fresh workspace settles when its first main-area widget is shown: the file
        # asked for, or else the launcher.
        first = f".lm-DockPanel-tabBar .lm-TabBar-tab[title*='{path.rsplit('/', 1)[-1]}']" \
            if path else ".jp-Launcher"
        self.page.wait_for_selector(first, timeout=timeout_ms)

    def launcher_card(self, label: str) -> Any:
        """A locator of the launcher card whose label is exactly ``label``."""
        return self.page.locator(".jp-LauncherCard").filter(
            has=self.page.get_by_text(label, exact=True))

    def command(self, command: str, args: dict[str, Any] | None = None) -> Any:
        """Run a JupyterLab command by id (the app is exposed to the page)."""
        return self.page.evaluate(
            "([c, a]) => window.jupyterapp.commands.execute(c, a)", [command, args or {}])

    def wait_kernel_idle(self, timeout_ms: int = 60000) -> None:
        """Wait until the current notebook's kernel has started and is idle."""
        self.page.wait_for_function(
            "() => { const w = window.jupyterapp.shell.currentWidget;"
            " const k = w && w.sessionContext && w.sessionContext.session"
            " && w.sessionContext.session.kernel; return !!k && k.status === 'idle'; }",
            timeout=timeout_ms)

    def run_all_cells(self, timeout_ms: int = 60000) -> None:
        """Run every cell of the open notebook and wait for the last to finish."""
        self.page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=timeout_ms)
        self.wait_kernel_idle(timeout_ms)
        self.command("notebook:run-all-cells")
        self.page.wait_for_function(
            "() => { const p = [...document.querySelectorAll('.jp-InputPrompt')];"
            " return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent)); }",
            timeout=timeout_ms)

    def cell_index(self, text: str) -> int:
        """Index of the open notebook's first code cell whose source contains ``text``."""
        index = self.page.evaluate(
            "t => { const m = window.jupyterapp.shell.currentWidget.content.model;"
            " for (let i = 0; i < m.cells.length; i++) { const c = m.cells.get(i);"
            "   if (c.type === 'code' && c.sharedModel.getSource().includes(t)) { return i; } }"
            " return -1; }", text)
        assert index >= 0, f"no code cell of the open notebook contains {text!r}"
        return index

    def run_cell(self, text: str, timeout_ms: int = 120000) -> Any:
        """Run the open notebook's first code cell containing ``text``, wait until it has
        finished and the kernel is idle; returns a locator of that cell."""
        index = self.cell_index(text)
        self.page.evaluate(
            "i => { const nb = window.jupyterapp.shell.currentWidget.content;"
            " nb.model.cells.get(i).executionCount = null; nb.activeCellIndex = i;"
            " void window.jupyterapp.commands.execute('notebook:run-cell'); }", index)
        self.page.wait_for_function(
            "i => { const w = window.jupyterapp.shell.currentWidget;"
            " const k = w.sessionContext.session && w.sessionContext.session.kernel;"
            " return !!w.content.model.cells.get(i).executionCount && !!k"
            " && k.status === 'idle'; }", arg=index, timeout=timeout_ms)
        return self.cell(index)

    def cell(self, index: int) -> Any:
        """A locator of the open notebook's cell ``index`` (scrolled into the DOM first,
        since JupyterLab may attach only the cells in view)."""
        self.page.evaluate("i => window.jupyterapp.shell.currentWidget.content"
                           ".scrollToItem(i, 'start')", index)
        return self.page.locator(
            f".jp-NotebookPanel:visible .jp-Cell[data-windowed-list-index='{index}']")

    def screenshot(self, name: str, selector: str | None = None) -> Path:
        """Save a PNG under test-artifacts/ (of one element when ``selector`` is given)."""
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        target = self.page.locator(selector).first if selector else self.page
        target.screenshot(path=str(path))
        return path

    def close(self) -> None:
        self.context.close()

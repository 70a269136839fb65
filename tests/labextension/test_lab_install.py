"""Packaging: the wheel carries the prebuilt labextension and the server-extension config
where Jupyter finds them, and an installed tfteach shows up as enabled."""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from labharness import REPO

ANSI = re.compile(r"\x1b\[[0-9;]*m")
DATA = "tfteach-{version}.data/data/"


def jupyter(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "jupyter", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120,
                          check=False, cwd=REPO.parent)
    return ANSI.sub("", done.stdout + done.stderr)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(out), str(REPO)], capture_output=True, text=True, timeout=900,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = out.glob("tfteach-*.whl")
    return path


@pytest.mark.slow
def test_wheel_holds_the_labextension_and_the_server_config(wheel):
    version = wheel.name.split("-")[1]
    data = DATA.format(version=version)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        package = json.loads(zf.read(f"{data}share/jupyter/labextensions/tfteach/package.json"))
        config = json.loads(zf.read(f"{data}etc/jupyter/jupyter_server_config.d/tfteach.json"))
        install = json.loads(zf.read(f"{data}share/jupyter/labextensions/tfteach/install.json"))
    assert package["name"] == "tfteach" and "_build" in package["jupyterlab"]
    assert f"{data}share/jupyter/labextensions/tfteach/{package['jupyterlab']['_build']['load']}" \
        in names
    assert config == {"ServerApp": {"jpserver_extensions": {"tfteach.notebook.lab_handlers": True}}}
    assert install["packageName"] == "tfteach"
    assert "tfteach/notebook/lab_handlers.py" in names


@pytest.mark.slow
def test_wheel_ships_the_labels_translations_for_jupyterlab(wheel):
    version = wheel.name.split("-")[1]
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = zf.read(f"tfteach-{version}.dist-info/entry_points.txt").decode()
    assert "[jupyterlab.locale]\ntfteach = tfteach.notebook.lab_locale" in entry_points
    for locale in ("ko_KR", "zh_CN", "ru_RU"):
        assert f"tfteach/notebook/lab_locale/locale/{locale}/LC_MESSAGES/tfteach.json" in names


@pytest.mark.slow
def test_installed_wheel_is_listed_as_enabled_by_jupyter(wheel, tmp_path):
    prefix = tmp_path / "prefix"
    # --ignore-installed: otherwise pip first uninstalls this environment's tfteach
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                           "--ignore-installed", "--prefix", str(prefix), str(wheel)],
                          capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    purelib = sysconfig.get_path("purelib", vars={"base": str(prefix)})
    env = {"JUPYTER_PATH": str(prefix / "share" / "jupyter"),
           "JUPYTER_CONFIG_DIR": str(prefix / "etc" / "jupyter"), "PYTHONPATH": purelib}
    labext = jupyter("labextension", "list", env=env)
    assert re.search(r"tfteach v\S+ enabled\s+OK", labext), labext
    server = jupyter("server", "extension", "list", env=env)
    assert re.search(r"tfteach\.notebook\.lab_handlers enabled", server), server
    assert re.search(r"tfteach\.notebook\.lab_handlers \S* ?OK", server), server


def test_this_environments_tfteach_install_is_enabled_in_jupyter():
    try:
        importlib.metadata.distribution("tfteach")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("tfteach is not pip-installed here (pip install -e . installs it)")
    labext = jupyter("labextension", "list")
    assert re.search(r"tfteach v\S+ enabled\s+OK", labext), labext
    server = jupyter("server", "extension", "list")
    assert re.search(r"tfteach\.notebook\.lab_handlers enabled", server), server

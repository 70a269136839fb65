"""Shipped profiles, profile files, and the ``python -m tfteach.hardware`` command."""
from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from tfteach.errors import NotFoundError
from tfteach.hardware import SHIPPED, get, load
from tfteach.hardware.profiles import GB, TFLOPS


def test_every_shipped_profile_says_where_its_figures_come_from():
    assert len(SHIPPED) >= 5
    for profile in SHIPPED.values():
        assert profile.sources, profile.name
        assert profile.gpu.peak("float32") > profile.cpu.peak("float32")


def test_shipped_figures_are_the_datasheets():
    v100 = SHIPPED["8x V100 NVLink"]
    assert v100.gpu.peak("float32") == 15.7 * TFLOPS and v100.gpu.mem_bandwidth == 900 * GB
    assert v100.gpus_per_host == 8 and v100.host_link.bandwidth == 15.75 * GB
    h200 = SHIPPED["H200"]
    assert h200.gpu.peak("float32") == 67 * TFLOPS and h200.gpu.mem_bandwidth == 4800 * GB
    assert SHIPPED["2 hosts x 2 V100, 100 Gbit"].network.bandwidth == 12.5 * GB
    # a dtype the profile has no figure for takes float32's
    assert h200.gpu.peak("int32") == h200.gpu.peak("float32")


def test_a_profile_survives_a_file(tmp_path):
    original = replace(SHIPPED["8x V100 NVLink"], name="my cluster", hosts=4)
    path = tmp_path / "cluster.json"
    original.save(path)
    assert load(path) == original
    assert get(str(path)) == original


def test_an_unknown_profile_name_lists_the_shipped_ones():
    with pytest.raises(NotFoundError, match="8x V100 NVLink") as info:
        get("V100 x 1000")
    assert "calibrate" in str(info.value)


def test_the_command_shows_the_profiles():
    out = subprocess.run([sys.executable, "-m", "tfteach.hardware", "show", "H200"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "H200 SXM" in out and "4800 GB/s" in out and "datasheet" in out


def test_calibrate_describes_this_machine_as_a_profile(tmp_path):
    from tfteach.hardware import calibrate

    profile = calibrate()
    assert profile.gpus_per_host == 2 and profile.shares_host_memory     # two virtual GPUs
    assert profile.gpu.peak("float32") > 0 and profile.gpu.mem_bandwidth > 0
    assert profile.gpu.cache_bytes > 0 and profile.loopback.bandwidth > 0
    assert {"MatMul", "Sum", "ApplyGradientDescent", "Const"} <= set(profile.gpu.op_launch_s)
    profile.save(tmp_path / "here.json")
    assert load(tmp_path / "here.json") == profile

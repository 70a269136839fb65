"""The host allocator setting: applied once per process on glibc, and can be turned off."""
import os
import platform
import subprocess
import sys

import pytest

PROBE = ("import tfteach as tf; from tfteach.runtime import host_memory as h; "
         "tf.Session(); print(h._state['done'], h._state['applied'])")


def _probe(**env: str) -> str:
    run_env = {**os.environ, **env}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         env=run_env, timeout=120, check=True)
    return out.stdout.strip()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only")
def test_a_session_keeps_freed_host_memory_on_glibc():
    assert _probe(TFTEACH_HOST_ALLOCATOR="") == "True True"


def test_the_setting_can_be_left_to_the_system():
    assert _probe(TFTEACH_HOST_ALLOCATOR="system") == "True False"

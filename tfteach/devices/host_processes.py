"""Whether a process of this host is alive: the one fact about other processes that both
device bookkeeping (the virtual-GPU memory ledger shared by processes) and the cluster runtime
(task processes, shared-memory owners) need. A zombie counts as dead: it holds nothing."""
from __future__ import annotations

import os
from pathlib import Path

HAS_PROC = Path("/proc/self/stat").exists()


PID_MAX = 1 << 22        # Linux's largest pid (PID_MAX_LIMIT): no process has a larger one


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie. Only the kernel's "no such
    process" means gone: a process whose /proc entry cannot be read for want of file
    descriptors (EMFILE, ENFILE) is alive, as signal 0 says."""
    if not 0 < pid <= PID_MAX:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):     # reaped since kill(0)
        return False
    except OSError:         # out of descriptors, or no /proc to ask: signal 0 said alive
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"

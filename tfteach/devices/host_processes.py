"""Whether a process of this host is alive: the one fact about other processes that both
device bookkeeping (the virtual-GPU memory ledger shared by processes) and the cluster runtime
(task processes, shared-memory owners) need. A zombie counts as dead: it holds nothing."""
from __future__ import annotations

import os
from pathlib import Path

HAS_PROC = Path("/proc/self/stat").exists()


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:         # reaped since kill(0), unless there is no /proc to ask
        return not HAS_PROC
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"

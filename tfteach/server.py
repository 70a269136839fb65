"""``python -m tfteach.server``: run one cluster task (same as ``tfteach-server``)."""
from tfteach.distributed.local.server_cli import main

if __name__ == "__main__":
    raise SystemExit(main())

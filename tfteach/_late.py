"""Names a lower layer shows but a higher layer provides (``tf.train.Server`` comes from
``tfteach.distributed``, which ``tfteach.train`` may not import). The top-level package
registers loaders here; ``tfteach.train.__getattr__`` calls them on first use."""
from __future__ import annotations

from typing import Any, Callable

TRAIN: dict[str, Callable[[], Any]] = {}

"""``tfteach.timeline.Timeline``: step stats to Chrome trace JSON (as ``tensorflow.python.client.timeline``)."""
from tfteach.runtime.step_trace import Timeline, short_device

__all__ = ["Timeline", "short_device"]

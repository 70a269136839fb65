"""tfteach.hardware: modelled hardware, so a placement can be seen running on real GPUs and
networks from a laptop. Profiles of devices and links (``profiles``), this machine's profile
measured (``calibrate``), and ``predict``: a deterministic discrete-event schedule of the
placed, partitioned graph with a roofline cost per op and per transfer; ``network_link``
and ``LinkLedger``, the link a ``LocalCluster(network=...)`` slows its transfers to.
Modelled time is always labelled as modelled; measured timelines show this machine.

Layer: above ``train`` (its validation graphs train models), below ``distributed``; it
imports runtime (placer, plan), ops and train, never distributed or notebook.
"""
from __future__ import annotations

from tfteach.hardware.calibration import calibrate
from tfteach.hardware.collectives import (parameter_server_time, ring_allreduce,
                                          ring_allreduce_time)
from tfteach.hardware.network import NETWORKS, LinkLedger, network_link
from tfteach.hardware.predict import Estimate, predict
from tfteach.hardware.profiles import (SHIPPED, DeviceProfile, LinkProfile, MachineProfile,
                                       get, load)


__all__ = ["NETWORKS", "SHIPPED", "DeviceProfile", "Estimate", "LinkLedger", "LinkProfile",
           "MachineProfile", "calibrate", "get", "load", "network_link", "parameter_server_time",
           "predict", "ring_allreduce", "ring_allreduce_time"]

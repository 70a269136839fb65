"""tfteach-only cluster helpers: ``LocalCluster`` runs a real multi-process cluster on
this machine (see ``tfteach.distributed.local.local_cluster``)."""
from tfteach.distributed.local.local_cluster import LocalCluster

__all__ = ["LocalCluster"]

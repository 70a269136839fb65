"""tfteach.runtime: prune, place, partition and execute a graph; Session, ConfigProto, RunMetadata
and step stats (this layer's place: docs/ARCHITECTURE.md)."""

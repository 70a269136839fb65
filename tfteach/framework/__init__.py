"""tfteach.framework: graphs (Graph, Operation, Tensor), dtypes, shapes, DeviceSpec and the op
registry (this layer's place: docs/ARCHITECTURE.md)."""

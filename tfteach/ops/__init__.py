"""tfteach.ops: the op families, each op registered with its constructor, shape function, kernels
and gradient (this layer's place: docs/ARCHITECTURE.md)."""

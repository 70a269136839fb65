"""tfteach.devices: CPU (NumPy), real GPU (CuPy) and virtual GPU devices, their memory budgets and
discovery (this layer's place: docs/ARCHITECTURE.md)."""

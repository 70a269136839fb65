"""tfteach.devices (see DESIGN.md for this layer's role)."""

"""tfteach.ops (see DESIGN.md for this layer's role)."""

"""tfteach.runtime (see DESIGN.md for this layer's role)."""

"""tfteach.framework (see DESIGN.md for this layer's role)."""

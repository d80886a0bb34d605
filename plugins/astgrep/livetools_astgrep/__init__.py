"""livetools plugin astgrep: not implemented yet (see its README)."""

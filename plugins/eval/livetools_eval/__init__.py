"""livetools plugin eval: not implemented yet (see its README)."""

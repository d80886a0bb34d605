"""livetools plugin ask: not implemented yet (see its README)."""

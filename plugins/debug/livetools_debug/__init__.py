"""livetools plugin debug: not implemented yet (see its README)."""

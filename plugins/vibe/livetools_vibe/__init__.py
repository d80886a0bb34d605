"""livetools plugin vibe: not implemented yet (see its README)."""

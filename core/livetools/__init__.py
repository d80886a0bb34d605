"""livetools."""

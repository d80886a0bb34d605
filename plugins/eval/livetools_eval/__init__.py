"""livetools plugin: Persistent interpreters: eval (not implemented yet)."""

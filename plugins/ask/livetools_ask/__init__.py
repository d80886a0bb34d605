"""livetools plugin: Asking the human: ask_user (not implemented yet)."""

"""livetools plugin: Background workers: vibe_spawn, vibe_send, vibe_wait, vibe_kill, vibe_list (not implemented yet)."""

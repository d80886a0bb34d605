"""livetools plugin: Debugger over the Debug Adapter Protocol: debug (not implemented yet)."""

"""livetools plugin lsp: not implemented yet (see its README)."""

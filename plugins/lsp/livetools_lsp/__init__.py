"""livetools plugin: Language servers: lsp, lsp_rename and diagnostics on write (not implemented yet)."""

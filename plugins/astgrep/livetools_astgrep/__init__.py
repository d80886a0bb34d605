"""livetools plugin: Structural search and rewrite: ast_grep, ast_edit, resolve (not implemented yet)."""

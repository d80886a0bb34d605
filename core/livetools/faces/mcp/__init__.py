"""The MCP face: `server` (one run's tools, tiers, results and list_changed as an MCP server),
`elicit` (ask_user as elicitation in both protocol eras), `stdio` (the stdio transport of
`livetools serve`) and `http/` (`livetools serve --http`, runs addressed by URL).

Imports `mcp` only when a module here is imported, which only `livetools serve` does; nothing
here imports the command line (`faces.cli` imports this package to serve; the surface both
resolve is in `faces.surface`)."""

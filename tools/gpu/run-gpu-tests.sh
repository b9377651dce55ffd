#!/usr/bin/env bash
# Run every Criterion suite on a GPU machine (from `make gpu-bundle`). Exit non-zero on any failure.
#   build/run-gpu-tests.sh [criterion options]
#   SANITIZE=memcheck|racecheck build/run-gpu-tests.sh   (small grids, under compute-sanitizer)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
echo "ladder bundle: commit $(cat "$here/COMMIT")"
nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not found"
"$here/bin/ladder" list
if [[ -n ${SANITIZE:-} ]]; then
    export LADDER_TEST_SMALL=1
    # Criterion runs each test in a child process: follow them all
    exec compute-sanitizer --tool "$SANITIZE" --error-exitcode 1 --target-processes all \
        "$here/bin/ladder-tests" --filter '*gpu*/*' "$@"
fi
"$here/bin/ladder" run all || exit 1
exec "$here/bin/ladder-tests" "$@"

#!/usr/bin/env bash
# tests/test_make.sh: what `make bench` and `make test` tell their reader must be true.
#  - `make bench` in a git checkout reports the commit it measured, not "commit unknown";
#  - without a GPU, `make test` (tests/run.sh) says how to run the GPU cases: build/run-gpu-tests.sh exists only
#    after `make gpu-bundle`, so the line must name that step.
# Exit 0 when both hold, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
wrong() {
    echo "test_make.sh: WRONG: $*"
    failed=1
}

if head=$(git rev-parse HEAD 2>/dev/null); then
    [[ $(tools/commit.sh) == "$head"* ]] || wrong "tools/commit.sh says '$(tools/commit.sh)', not HEAD $head"
    # the recipe, run with a stand-in for the program that prints the commit it was given
    printf '#!/usr/bin/env bash\necho "commit ${LADDER_COMMIT:-unknown}"\n' >"$tmp/ladder"
    chmod 755 "$tmp/ladder"
    out=$(env -u LADDER_COMMIT make --no-print-directory -s -o "$tmp/ladder" bench LADDER="$tmp/ladder" 2>&1)
    [[ $out == *"commit $head"* ]] || wrong "make bench reports '$out', not the commit $head"
fi

printf '#!/usr/bin/env bash\necho "gpu: none (no driver)"\n' >"$tmp/ladder-list"
chmod 755 "$tmp/ladder-list"
out=$(tests/run.sh true "$tmp/ladder-list" 2>&1)
[[ $out == *"make gpu-bundle"*"build/run-gpu-tests.sh"* ]] ||
    wrong "without a GPU tests/run.sh says '$out': it must name make gpu-bundle before build/run-gpu-tests.sh"

((failed == 0)) && echo "test_make.sh: make bench names its commit; make test says how to run the GPU cases"
exit $failed

#!/usr/bin/env bash
# Run the Criterion suites: tests/run.sh TESTS_BIN LADDER_BIN [criterion options...]
#
# Criterion's synthesis line does not count skipped tests, so when this
# machine has no CUDA GPU (as `LADDER_BIN list` reports it with a line
# "gpu: none (<reason>)"; a missing or failing tool counts as no GPU) one plain
# line says so first. Then the suites run, with any extra arguments passed
# through, and this script exits with their status (or 1 after a sanitizer report).
set -uo pipefail

if (($# < 2)); then
    echo "usage: $0 TESTS_BIN LADDER_BIN [criterion options...]" >&2
    exit 2
fi
tests_bin=$1
ladder_bin=$2
shift 2

reason=
if [[ ! -x $ladder_bin ]]; then
    reason="$ladder_bin is not built, so no GPU was looked for"
elif ! listing=$("$ladder_bin" list 2>&1); then
    reason="'$ladder_bin list' failed"
else
    gpu_line=$(grep -m1 '^gpu:' <<<"$listing" || true)
    if [[ -z $gpu_line ]]; then
        reason="'$ladder_bin list' names no GPU"
    elif [[ $gpu_line == "gpu: none"* ]]; then
        reason=${gpu_line#gpu: none}
        reason=${reason# }
        reason=${reason#(}
        reason=${reason%)}
        [[ -n $reason ]] || reason="none found"
    fi
fi
if [[ -n $reason ]]; then
    echo "GPU cases skipped: no CUDA GPU here ($reason); to run them, make gpu-bundle here, then build/run-gpu-tests.sh on a GPU machine"
fi

# Under SANITIZE=1 a sanitizer report, a leak among them, is printed but does not by itself fail a Criterion
# test (LeakSanitizer speaks when a test process exits, after its result is in). So the reports go to files
# and any report fails the run.
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$reports/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$reports/ubsan"
"$tests_bin" "$@"
status=$?
if compgen -G "$reports/*" >/dev/null; then
    cat "$reports"/* >&2
    echo "FAIL: the sanitizer reports above (a leak counts) fail the run" >&2
    status=1
fi
exit $status

#!/usr/bin/env bash
# Run every Criterion suite on a GPU machine (from `make gpu-bundle`). Exit non-zero on any failure,
# and also when there is no usable GPU or no test ran: both would otherwise pass without testing a kernel.
#   build/run-gpu-tests.sh [criterion options]
#   SANITIZE=memcheck|racecheck|synccheck build/run-gpu-tests.sh   (every GPU test on the small grids, with two
#                                                                   determinism repeats at gpu_tiled and in bf16,
#                                                                   under compute-sanitizer)
#   LADDER_TEST_ALGO=recurrent build/run-gpu-tests.sh     (the generic suites' cases of these algorithms only)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# the bundle carries the library gzipped (tools/make-gpu-bundle.sh)
[[ -f $here/lib/libladder.so ]] || gzip -dkf "$here/lib/libladder.so.gz"
fail() {
    echo "run-gpu-tests: FAIL: $*" >&2
    exit 1
}

echo "ladder bundle: commit $(cat "$here/COMMIT")"
nvidia-smi -L 2>/dev/null || echo "nvidia-smi: not found"
listing=$("$here/bin/ladder" list) || fail "'ladder list' failed (exit $?)"
echo "$listing"
gpu=$(grep -m1 '^gpu:' <<<"$listing")
[[ -n $gpu ]] || fail "'ladder list' names no GPU"
[[ $gpu != "gpu: none"* ]] || fail "no usable GPU ('ladder list' says \"$gpu\"), so every GPU case would skip"

# Criterion runs its jobs (-jN, --jobs N; by default one per core) as processes side by side, and OpenMP gives
# the cpu rung's loops in each of them every core of the machine. On the lent H100's 16 cores the whole suites
# at -j12 did not finish in 200 s; as three filtered runs at once with OMP_NUM_THREADS=4 they finished in 137 s
# (2026-11-24, docs/results/h100-2026-11-24-run.md). So, unless the caller set it, each job gets its share.
cores=$(nproc) n_jobs=$(nproc)
for ((i = 1; i <= $#; i++)); do
    arg=${!i}
    case $arg in
    -j?*) n_jobs=${arg#-j} ;;
    --jobs=*) n_jobs=${arg#--jobs=} ;;
    -j | --jobs) i=$((i + 1)) n_jobs=${!i:-} ;;
    esac
done
[[ $n_jobs =~ ^[1-9][0-9]*$ ]] || n_jobs=$cores
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$((cores / n_jobs > 1 ? cores / n_jobs : 1))}
echo "OpenMP threads a test: $OMP_NUM_THREADS ($n_jobs jobs)"

# The suites, their output shown and kept, so that a run that tested nothing (Criterion's synthesis line
# reads "Tested: 0", or is missing) fails even though the suites exit 0.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
suites() {
    "$@" 2>&1 | tee "$log"
    local status=${PIPESTATUS[0]} tested
    # colours, if any, are dropped before the count is read
    tested=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | sed -n 's/.*Synthesis: Tested: \([0-9]*\).*/\1/p' | tail -1)
    [[ -n $tested ]] || fail "no test ran (Criterion printed no synthesis line)"
    ((tested > 0)) || fail "no test ran (Criterion's synthesis line reads Tested: $tested)"
    return "$status"
}
if [[ -n ${SANITIZE:-} ]]; then
    export LADDER_TEST_SMALL=1
    # racecheck finds hazards in shared memory, and over every GPU test it ran past 5 minutes on an H200
    # (docs/results/sanitizers.md). The naive rung's kernels (gpu_naive/*.cu, each named *_naive_kernel) declare
    # none, so it leaves them and their suite alone; and of the tensor-core rung's two dtypes it takes bf16, whose
    # kernels are fp16's with another element type, the same shared-memory traffic and barriers. memcheck and
    # synccheck run every GPU test.
    exclude=() tests='*gpu*/*'
    if [[ $SANITIZE == racecheck ]]; then
        exclude=(--kernel-name-exclude kns=_naive_kernel)
        tests='@(gpu/*|gpu_tiled/*|gpu_tensorcore/bf16*|gpu_tensorcore_f32/*|gpu_tensorcore_paths/*)'
    fi
    # Criterion runs each test in a child process: follow them all
    suites compute-sanitizer --tool "$SANITIZE" "${exclude[@]}" --error-exitcode 1 --target-processes all \
        "$here/bin/ladder-tests" --filter "$tests" "$@"
    exit
fi
# the demo run first, then the suites even when it failed (one GPU call then reports both); either failing fails
"$here/bin/ladder" run all
demo=$?
suites "$here/bin/ladder-tests" "$@"
status=$?
((demo == 0)) || echo "run-gpu-tests: FAIL: 'ladder run all' exited $demo" >&2
((demo == 0 && status == 0))

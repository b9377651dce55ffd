#!/usr/bin/env bash
# tests/test_run_gpu_tests.sh LADDER_BIN: build/run-gpu-tests.sh (tools/gpu/run-gpu-tests.sh) must fail, with a
# clear line, when it finds no usable GPU or when no test ran, and pass only when tests ran and passed on a GPU.
# Each case runs the script in a throwaway bundle: the first around LADDER_BIN itself (no GPU here, or a build
# without CUDA), the others with stand-ins for `ladder` and `ladder-tests` that print what they would print on
# a GPU machine. Exit 0 when every case behaves, 1 otherwise.
set -uo pipefail
if (($# != 1)); then
    echo "usage: $0 LADDER_BIN" >&2
    exit 2
fi
script=$(cd "$(dirname "$0")/.." && pwd)/tools/gpu/run-gpu-tests.sh
ladder_bin=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cases=0 failed=0 names=

# bundle NAME LADDER_BODY TESTS_BODY: a bundle in $tmp/NAME whose bin/ladder and bin/ladder-tests run the bodies
bundle() {
    local dir=$tmp/$1
    mkdir -p "$dir/bin"
    install -m 755 "$script" "$dir/run-gpu-tests.sh"
    echo "self-test" >"$dir/COMMIT"
    printf '#!/usr/bin/env bash\n%s\n' "$2" >"$dir/bin/ladder"
    printf '#!/usr/bin/env bash\n%s\n' "$3" >"$dir/bin/ladder-tests"
    chmod 755 "$dir/bin/ladder" "$dir/bin/ladder-tests"
}

# [ENV=...] expect NAME WANT [LINE [ARGS...]]: the script in bundle NAME, given ARGS, must exit 0 (WANT = pass) or
# non-zero (WANT = fail), saying "run-gpu-tests: FAIL: LINE" when LINE is not empty
expect() {
    local out status ok=1
    # without the SANITIZE that `make test SANITIZE=1` exports: to the script it would mean compute-sanitizer
    # and without the caller's OMP_NUM_THREADS; ENV (one VAR=value) sets what a case wants
    out=$(env -u SANITIZE -u OMP_NUM_THREADS ${ENV:+"$ENV"} "$tmp/$1/run-gpu-tests.sh" "${@:4}" 2>&1)
    status=$?
    cases=$((cases + 1)) names+=" $1"
    if [[ $2 == pass ]]; then
        ((status == 0)) || ok=0
    else
        ((status != 0)) || ok=0
        [[ -z ${3:-} ]] || grep -qF "run-gpu-tests: FAIL: $3" <<<"$out" || ok=0
    fi
    if ((!ok)); then
        failed=$((failed + 1))
        echo "run-gpu-tests.sh self-test: $1: WRONG (exit $status; wanted: $2${3:+, saying \"$3\"}); its output:"
        sed 's/^/    /' <<<"$out"
    fi
}

gpu_list='echo "gpu: NVIDIA H100 80GB HBM3"'
# synthesis TESTED FAILING: what ladder-tests prints last, and its exit status
synthesis() {
    echo "echo '[====] Synthesis: Tested: $1 | Passing: $(($1 - $2)) | Failing: $2 | Crashing: 0'; exit $(($2 > 0))"
}

bundle this-machine "exec '$ladder_bin' \"\$@\"" "$(synthesis 120 0)"
if [[ $("$ladder_bin" list 2>/dev/null | grep -m1 '^gpu:') == "gpu: none"* ]]; then
    expect this-machine fail "no usable GPU"
else
    echo "run-gpu-tests.sh self-test: this-machine: skipped (a GPU is here)"
fi
bundle no-test-ran "$gpu_list" "$(synthesis 0 0)"
expect no-test-ran fail "no test ran"
bundle no-synthesis "$gpu_list" "exit 0"
expect no-synthesis fail "no test ran"
bundle tests-passed "$gpu_list" "$(synthesis 120 0)"
expect tests-passed pass
bundle test-failed "$gpu_list" "$(synthesis 120 1)"
expect test-failed fail
# a failed `ladder run all` fails the run, and the suites still run (they leave a mark the stand-in checks)
bundle demo-failed "[[ \$1 == run ]] && exit 1; $gpu_list" "touch \"\$(dirname \"\$0\")/suites-ran\"; $(synthesis 120 0)"
expect demo-failed fail "'ladder run all' exited 1"
cases=$((cases + 1))
[[ -f $tmp/demo-failed/bin/suites-ran ]] || { failed=$((failed + 1)) names="$names demo-failed-suites"; }
# each Criterion job gets its share of the cores for OpenMP (nproc over the jobs, at least 1), unless the caller
# set OMP_NUM_THREADS: each stand-in fails unless it sees the number it wants
# omp_bundle NAME WANT: ladder-tests passes when OMP_NUM_THREADS is WANT
omp_bundle() { bundle "$1" "$gpu_list" "[[ \$OMP_NUM_THREADS == $2 ]] || { $(synthesis 1 1); }; $(synthesis 1 0)"; }
omp_bundle omp-one-job "$(nproc)"
expect omp-one-job pass "" -j1
omp_bundle omp-one-job-long "$(nproc)"
expect omp-one-job-long pass "" --jobs 1
omp_bundle omp-one-job-eq "$(nproc)"
expect omp-one-job-eq pass "" --jobs=1
omp_bundle omp-default 1
expect omp-default pass
omp_bundle omp-caller 7
ENV=OMP_NUM_THREADS=7 expect omp-caller pass "" -j1

echo "run-gpu-tests.sh self-test: $((cases - failed)) of $cases cases behave:$names"
((failed == 0))

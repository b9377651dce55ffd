#!/usr/bin/env bash
# One call on a lent GPU machine, with build/ from `make gpu-bundle` carried along:
# the full suites, the suites under compute-sanitizer (memcheck, racecheck), the SASS check,
# and the benchmark sweep. Logs go to $OUT/logs.tgz, the benchmark files to $OUT/bench/;
# a summary is printed last.
#   tools/gpu/device-session.sh [tests|sanitize|sass|labs|bench|ab|ncu]...   (default: the first five)
#   ab: AB_ALGO's sweep (default flash) at gpu_tiled and gpu_tensorcore, this bundle and a baseline library in
#   .baseline/ (bin/ladder and lib/libladder.so.xz, carried along) alternately, twice each, in one lease.
#   SAN_ALGOS (default: every algorithm) and SAN_TIMEOUT (seconds per algorithm and tool, default 85) bound
#   the sanitizer step.
set -uo pipefail
out=${OUT:-/tmp/ladder-out}
mkdir -p "$out/bench" /tmp/logs
steps=${*:-tests sanitize sass labs bench}
summary=/tmp/logs/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

say "bundle commit: $(cat build/COMMIT)"
say "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
for step in $steps; do
    case $step in
    tests)
        build/run-gpu-tests.sh -j8 >/tmp/logs/tests.log 2>&1
        say "tests: exit $? | $(grep -a 'Synthesis' /tmp/logs/tests.log | tail -1)"
        grep -a -E '^\[FAIL\]|\[----\].*(FAIL|Assertion)' /tmp/logs/tests.log | head -20 | tee -a "$summary"
        ;;
    sanitize)
        # per algorithm and tool, each bounded by SAN_TIMEOUT seconds (exit 124 when cut off) so that one slow
        # pair cannot eat the call; racecheck looks for shared-memory hazards, so it skips gpu_naive (none)
        # and the determinism repeats (the same kernels ten times)
        for algo in ${SAN_ALGOS:-dynconv recurrent flash}; do
            for tool in memcheck racecheck; do
                rungs='@(gpu_naive|gpu_tiled|gpu_tensorcore)/*'
                [[ $tool == racecheck ]] && rungs='@(gpu_tiled|gpu_tensorcore)/*'
                log=/tmp/logs/$tool-$algo.log
                SANITIZE=$tool LADDER_TEST_ALGO=$algo timeout "${SAN_TIMEOUT:-85}" \
                    build/run-gpu-tests.sh -j4 --filter "$rungs" >"$log" 2>&1
                say "$tool $algo: exit $? | $(grep -a -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sort | uniq -c | tr '\n' ' ') | $(grep -a Synthesis "$log" | tail -1)"
            done
        done
        ;;
    sass)
        cuobjdump -sass build/lib/libladder.so >/tmp/logs/sass.txt 2>&1
        say "sass: HMMA $(grep -c HMMA /tmp/logs/sass.txt), HGMMA $(grep -c HGMMA /tmp/logs/sass.txt), LDL/STL $(grep -c -E 'LDL|STL' /tmp/logs/sass.txt)"
        ;;
    labs)
        # make lab-check's rule for the GPU labs, on the bundle's lab binaries: the solution must PASS (exit 0)
        # and the untouched skeleton FAIL (exit 1)
        for sol in build/labs/solutions/*; do
            lab=$(basename "$sol")
            s_out=$("$sol" 2>&1); s_rc=$?
            k_out=$("build/labs/$lab" 2>&1); k_rc=$?
            verdict="NOT CHECKABLE"; [[ $s_rc == 0 && $k_rc == 1 ]] && verdict=ok
            say "lab-check $lab: $verdict | solution (exit $s_rc): ${s_out:0:160} | skeleton (exit $k_rc): ${k_out:0:160}"
        done
        ;;
    bench)
        build/run-gpu-bench.sh "$out/bench" >/tmp/logs/bench.log 2>&1
        say "bench: exit $?"
        grep -a -E 'TFLOP|copy' /tmp/logs/bench.log | head -3 | tee -a "$summary"
        cat "$out"/bench/*.md 2>/dev/null | tee -a "$summary"
        ;;
    ab)
        mkdir -p /tmp/base/bin /tmp/base/lib "$out/ab"
        cp .baseline/bin/ladder /tmp/base/bin/ && xz -dc .baseline/lib/libladder.so.xz >/tmp/base/lib/libladder.so
        for lib in build/lib/*; do [[ $(basename "$lib") == libladder.so ]] || cp "$lib" /tmp/base/lib/; done
        for round in 1 2; do
            for who in new base; do
                bin=build/bin/ladder
                [[ $who == base ]] && bin=/tmp/base/bin/ladder
                $bin bench "${AB_ALGO:-flash}" --rung gpu_tiled --rung gpu_tensorcore --out "/tmp/ab-$who-$round" \
                    >"/tmp/logs/ab-$who-$round.log" 2>&1
                say "ab $who round $round: exit $?"
                cp "/tmp/ab-$who-$round"/*.csv "$out/ab/$who-$round.csv" 2>/dev/null
            done
        done
        ;;
    ncu)
        # how the tensor-core kernels spend their time: duration, instructions, issue, DRAM, stall reasons
        m=gpu__time_duration.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
        m=$m,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread
        m=$m,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
        for s in long_scoreboard math_pipe_throttle barrier wait not_selected; do
            m=$m,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
        done
        for k in fwd_tc bwd_tc; do
            ncu --kernel-name regex:$k --launch-count 1 --metrics "$m" build/bin/ladder run dynconv \
                --rung gpu_tensorcore --B 8 --T 4096 --D 2048 --W 4 >/tmp/logs/ncu-$k.txt 2>&1
            say "ncu $k: exit $?"
            grep -a -E "^ +[a-z_]+__" /tmp/logs/ncu-$k.txt | sed -E 's/ +/ /g' | tee -a "$summary"
        done
        ;;
    esac
    tar czf "$out/logs.tgz" -C /tmp logs # after every step, so a run cut off at its limit still returns logs
done
echo "==== summary"
cat "$summary"

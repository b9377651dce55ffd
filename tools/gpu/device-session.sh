#!/usr/bin/env bash
# One call on a lent GPU machine, with build/ from `make gpu-bundle` carried along:
# the full suites, the suites under compute-sanitizer (memcheck, racecheck, synccheck), the SASS check,
# the Python module's tests, and the benchmark sweep. Logs go to $OUT/logs.tgz, the benchmark files to $OUT/bench/;
# a summary is printed last.
#   tools/gpu/device-session.sh [tests|sanitize|sass|labs|python|bench|paths|peers|peers_flash|peers_flex|cpu|ab|variants|flex_ab|ncu]...
#   (default: tests sanitize sass labs bench)
#   peers: PyTorch's memory-efficient attention at memeff's bench shapes; peers_flash: its FlashAttention-2 and cuDNN
#   backends at flash's sweep cells (tools/gpu/peers_flash.py); peers_flex: PyTorch's FlexAttention
#   (torch.compile) at flex's tensor-core bench shapes, bf16, frozen buffers only (tools/gpu/peers_flex.py; each case
#   compiles first, a few minutes in all, so give it a device call of its own beside `BENCH_ALGO=flex ... bench`).
#   ab: AB_ALGO's sweep (default flash) at AB_RUNGS (default gpu_tiled gpu_tensorcore), this bundle and a baseline
#   library in .baseline/ (bin/ladder and lib/libladder.so.xz, carried along) alternately, AB_ROUNDS (default 2)
#   times each, in one lease.
#   variants: the libraries of tools/gpu/make-variants.sh (carried as .variants, build/ not needed; where build/ is
#   carried too and .variants/tree.so.xz was deleted, the bundle's library is the tree), each timed
#   VARIANT_ROUNDS (default 2) times in turn with `ladder bench VARIANT_ARGS` (default: flash's tensor-core rung at
#   the paths step's shape), into $OUT/bench/variants.tgz (the `commit` column names the variant).
#   flex_ab: flex's tensor-core bench on the Hopper kernels and on mma.sync, and flash at flex's shape, in turn,
#   FLEX_ROUNDS times (default 2), in one lease: flex beside flash on one kernel, and each path's gain.
#   cpu: every algorithm's cpu rung (its bench problem, CPU_REPS timed runs, default 5) at 1 and CPU_THREADS (default
#   16) OpenMP threads, and PyTorch's CPU attention at flash's shape and the same thread counts, into $OUT/bench/cpu-*;
#   one line for the host (its own parallel efficiency on a multiply-add loop, the ceiling of the rung's), then one
#   per algorithm: times, parallel efficiency, % of the host copy, and flash against PyTorch.
#   SAN_TOOLS (default: memcheck racecheck synccheck), SAN_ALGOS (default: every algorithm) and SAN_TIMEOUT
#   (seconds per tool, default 300) shape the sanitizer step; one device call holds 10 minutes, so the three
#   tools may need a call each.
#   TESTS_TIMEOUT and BENCH_TIMEOUT (seconds, default 420 each) cut off the tests and bench steps (exit 124): a
#   kernel that never returns (a wait nothing satisfies) then costs that step, not the whole call and its logs.
set -uo pipefail
out=${OUT:-/tmp/ladder-out}
mkdir -p "$out/bench" /tmp/logs
steps=${*:-tests sanitize sass labs bench}
summary=/tmp/logs/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
# unxz SRC DST: an .xz file unpacked (the machine has Python's lzma, not xz)
unxz() { python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$1" >"$2"; }

if [[ -d build ]]; then # absent where a call carries .variants alone
    [[ -f build/lib/libladder.so ]] || gzip -dkf build/lib/libladder.so.gz # the bundle carries it gzipped
    say "bundle commit: $(cat build/COMMIT)"
fi
say "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
for step in $steps; do
    case $step in
    tests)
        start=$SECONDS
        timeout "${TESTS_TIMEOUT:-420}" build/run-gpu-tests.sh -j8 >/tmp/logs/tests.log 2>&1
        say "tests: exit $? in $((SECONDS - start)) s | $(grep -a 'Synthesis' /tmp/logs/tests.log | tail -1)"
        grep -a -E '^\[FAIL\]|\[----\].*(FAIL|Assertion)' /tmp/logs/tests.log | head -20 | tee -a "$summary"
        ;;
    sanitize)
        # every GPU test under each tool in turn (SAN_TOOLS, default memcheck racecheck synccheck), on the small
        # grids and two determinism repeats that run-gpu-tests.sh asks for (LADDER_TEST_SMALL=1): each is meant to
        # finish within 5 minutes on an H100, so each is cut off at SAN_TIMEOUT seconds (default 300; exit 124) and
        # its time is reported. SAN_ALGOS keeps those algorithms' cases only (LADDER_TEST_ALGO).
        for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
            log=/tmp/logs/$tool.log
            start=$SECONDS
            SANITIZE=$tool LADDER_TEST_ALGO=${SAN_ALGOS:-} timeout "${SAN_TIMEOUT:-300}" build/run-gpu-tests.sh \
                >"$log" 2>&1
            rc=$?
            say "$tool: exit $rc in $((SECONDS - start)) s | $(grep -a -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | sort | uniq -c | tr '\n' ' ') | $(grep -a Synthesis "$log" | tail -1)"
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
    python)
        # python/ladder at every GPU rung with PyTorch (against scaled_dot_product_attention and autograd), and
        # its cpu-rung tests; the library and the program are the bundle's. The machine has no package index:
        # pytest comes from the wheels make gpu-bundle put in build/wheels when it is missing
        python3 -c 'import pytest' 2>/dev/null || pip install -q --no-index build/wheels/*.whl >/dev/null 2>&1
        LADDER_LIB=build/lib/libladder.so LADDER_BIN=build/bin/ladder PYTHONPATH=python \
            python3 -m pytest -q -rs -p no:cacheprovider python/tests >/tmp/logs/python.log 2>&1
        say "python: exit $? | $(tail -1 /tmp/logs/python.log)"
        grep -a -E '^(FAILED|ERROR|SKIPPED)' /tmp/logs/python.log | head -20 | tee -a "$summary"
        ;;
    bench)
        # BENCH_ALGO (default all): one algorithm's sweep; BENCH_ARGS: more `ladder bench` options (e.g. --rung)
        start=$SECONDS
        # shellcheck disable=SC2086 # BENCH_ARGS is a list of arguments
        timeout "${BENCH_TIMEOUT:-420}" build/run-gpu-bench.sh "$out/bench" ${BENCH_ARGS:-} >/tmp/logs/bench.log 2>&1
        say "bench: exit $? in $((SECONDS - start)) s"
        grep -a -E 'TFLOP|copy' /tmp/logs/bench.log | head -3 | tee -a "$summary"
        cat "$out"/bench/*.md 2>/dev/null | tee -a "$summary"
        ;;
    paths)
        # the tensor-core rung's flash under each LADDER_TC_PATH in PATHS (default: mma and every Hopper idea), at
        # PATHS_ARGS (default: bf16, B=4 H=16 S=4096 D=128; the bench times causal and not), alternating PATHS_ROUNDS
        # times (default 1), into $out/bench/paths-<path>-<round>.csv; one line per run: its forward times
        for ((round = 1; round <= ${PATHS_ROUNDS:-1}; round++)); do
            for p in ${PATHS:-mma wgmma-1 wgmma-2 wgmma-3}; do
                # shellcheck disable=SC2086 # PATHS_ARGS is a list of arguments
                LADDER_TC_PATH=$p LADDER_COMMIT=$(cat build/COMMIT) build/bin/ladder bench flash --rung gpu_tensorcore \
                    ${PATHS_ARGS:---dtype bf16 --B 4 --Hq 16 --Hkv 16 --Sq 4096 --Sk 4096 --D 128 --Dv 128} \
                    --out "/tmp/paths-$p-$round" >"/tmp/logs/paths-$p-$round.log" 2>&1
                rc=$?
                cp "/tmp/paths-$p-$round"/*.csv "$out/bench/paths-$p-$round.csv" 2>/dev/null
                say "paths $p round $round: exit $rc | fwd ms: $(awk -F, '$5 == "fwd" {printf "%s ", $9}' \
                    "$out/bench/paths-$p-$round.csv" 2>/dev/null)"
            done
        done
        ;;
    peers)
        # PyTorch's memory-efficient attention at memeff's bench shapes, in the same lease
        python3 tools/gpu/peers_memeff.py "$out/bench/peers-memeff.csv" >/tmp/logs/peers.log 2>&1
        say "peers: exit $?"
        tee -a "$summary" <"$out/bench/peers-memeff.csv"
        ;;
    peers_flash)
        # PyTorch's FlashAttention-2 and cuDNN backends at flash's sweep cells, in the same lease (under a minute);
        # PEERS_FLASH_D: other head dims (e.g. 64,128,256)
        python3 tools/gpu/peers_flash.py "$out/bench/peers-flash.csv" "${PEERS_FLASH_D:-64,128}" \
            >/tmp/logs/peers-flash.log 2>&1
        say "peers_flash: exit $?"
        tee -a "$summary" <"$out/bench/peers-flash.csv"
        ;;
    peers_flex)
        # PyTorch's FlexAttention at flex's tensor-core bench shapes, in the same lease; a case that fails to compile
        # is one line of the log and a "failed" row
        python3 tools/gpu/peers_flex.py "$out/bench/peers-flex.csv" >/tmp/logs/peers-flex.log 2>&1
        say "peers_flex: exit $?"
        grep -a '^peers_flex:' /tmp/logs/peers-flex.log | tee -a "$summary"
        tee -a "$summary" <"$out/bench/peers-flex.csv"
        ;;
    cpu)
        # about 3 minutes on the 16-core host: at 1 thread each algorithm's cpu problem takes a second or two a run
        # (seven runs: validated, untimed, CPU_REPS timed), the inputs are made once a thread count (dynconv's are
        # 1.6 GB), and flex's block-mask build at 128k tokens runs once
        n=${CPU_THREADS:-16}
        # threads per core says whether 16 threads have 16 cores (the efficiency target) or share 8
        say "cpu:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) processors," \
            "$(lscpu 2>/dev/null | grep -E '^(Thread|Core|Socket)' | tr -s ' ' | paste -sd ';')"
        for t in 1 "$n"; do
            start=$SECONDS
            LADDER_COMMIT=$(cat build/COMMIT) OMP_NUM_THREADS=$t build/bin/ladder bench all --rung cpu \
                --cpu-reps "${CPU_REPS:-5}" \
                --out "$out/bench/cpu-$t" >/tmp/logs/cpu-$t.log 2>&1
            rc=$?
            say "cpu bench at $t threads: exit $rc in $((SECONDS - start)) s | $(grep -a -m1 'host copy' /tmp/logs/cpu-$t.log)"
        done
        python3 tools/gpu/peers_cpu.py "$out/bench/cpu-peers.csv" --threads "1,$n" >/tmp/logs/cpu-peers.log 2>&1
        say "peers_cpu: exit $?"
        python3 tools/gpu/cpu_summary.py "$out/bench/cpu-1" "$out/bench/cpu-$n" "$out/bench/cpu-peers.csv" 2>&1 |
            tee -a "$summary"
        ;;
    ab)
        mkdir -p /tmp/base/bin /tmp/base/lib "$out/ab"
        cp .baseline/bin/ladder /tmp/base/bin/ && unxz .baseline/lib/libladder.so.xz /tmp/base/lib/libladder.so
        for lib in build/lib/*; do [[ $(basename "$lib") == libladder.so ]] || cp "$lib" /tmp/base/lib/; done
        rungs=()
        for r in ${AB_RUNGS:-gpu_tiled gpu_tensorcore}; do rungs+=(--rung "$r"); done
        for ((round = 1; round <= ${AB_ROUNDS:-2}; round++)); do
            for who in new base; do
                bin=build/bin/ladder commit=$(cat build/COMMIT)
                [[ $who == base ]] && bin=/tmp/base/bin/ladder commit=$(cat .baseline/COMMIT 2>/dev/null || echo base)
                LADDER_COMMIT=$commit $bin bench "${AB_ALGO:-flash}" "${rungs[@]}" --out "/tmp/ab-$who-$round" \
                    >"/tmp/logs/ab-$who-$round.log" 2>&1
                say "ab $who round $round: exit $?"
                cp "/tmp/ab-$who-$round"/*.csv "$out/ab/$who-$round.csv" 2>/dev/null
            done
        done
        ;;
    variants)
        mkdir -p /tmp/variants
        names=()
        for x in .variants/*.so.xz; do
            name=$(basename "$x" .so.xz)
            names+=("$name")
            mkdir -p "/tmp/variant-$name/bin" "/tmp/variant-$name/lib"
            cp .variants/ladder "/tmp/variant-$name/bin/" && cp .variants/lib/* "/tmp/variant-$name/lib/"
            unxz "$x" "/tmp/variant-$name/lib/libladder.so"
        done
        if [[ ! -f .variants/tree.so.xz && -f build/lib/libladder.so ]]; then # carried beside build/: its library
            names=(tree "${names[@]}")
            mkdir -p /tmp/variant-tree/bin /tmp/variant-tree/lib
            cp .variants/ladder /tmp/variant-tree/bin/ && cp .variants/lib/* build/lib/libladder.so /tmp/variant-tree/lib/
        fi
        for ((round = 1; round <= ${VARIANT_ROUNDS:-2}; round++)); do
            for name in "${names[@]}"; do
                csv=/tmp/variants/$name-$round.csv
                # shellcheck disable=SC2086 # VARIANT_ARGS is a list of arguments
                LADDER_COMMIT=$name timeout 300 "/tmp/variant-$name/bin/ladder" bench \
                    ${VARIANT_ARGS:-flash --rung gpu_tensorcore --dtype bf16 --B 4 --Hq 16 --Hkv 16 --Sq 4096 --Sk 4096 --D 128 --Dv 128} \
                    --out "/tmp/variant-$name-$round" >"/tmp/logs/variant-$name-$round.log" 2>&1
                rc=$?
                cp "/tmp/variant-$name-$round"/*.csv "$csv" 2>/dev/null
                say "variant $name round $round: exit $rc | pass ms: $(awk -F, 'NR > 1 {printf "%s %s  ", $5, $9}' "$csv" 2>/dev/null)"
            done
        done
        tar czf "$out/bench/variants.tgz" -C /tmp variants
        ;;
    flex_ab)
        # flex's tensor-core bench on the Hopper kernels (LADDER_TC_PATH=auto) and on mma.sync, and flash at flex's
        # bench shape (bf16, B=4 H=16 S=4096 D=128), in turn, FLEX_ROUNDS times (default 2), into
        # $out/bench/flex-<path>-<round>.csv and flash-<round>.csv (under a minute a round); one line per run
        for ((round = 1; round <= ${FLEX_ROUNDS:-2}; round++)); do
            for p in auto mma; do
                LADDER_TC_PATH=$p LADDER_COMMIT=$(cat build/COMMIT) timeout 120 build/bin/ladder bench flex \
                    --rung gpu_tensorcore --out "/tmp/flex-$p-$round" >"/tmp/logs/flex-$p-$round.log" 2>&1
                rc=$?
                cp "/tmp/flex-$p-$round"/*.csv "$out/bench/flex-$p-$round.csv" 2>/dev/null
                say "flex $p round $round: exit $rc | bf16 no mod ms: $(awk -F, '$7 == "bf16" && $8 ~ /score_mod=none/ \
                    {printf "%s %s  ", $5, $9}' "$out/bench/flex-$p-$round.csv" 2>/dev/null)"
            done
            LADDER_COMMIT=$(cat build/COMMIT) timeout 60 build/bin/ladder bench flash --rung gpu_tensorcore --dtype bf16 \
                --B 4 --Hq 16 --Hkv 16 --Sq 4096 --Sk 4096 --D 128 --Dv 128 --out "/tmp/flash-$round" \
                >"/tmp/logs/flash-$round.log" 2>&1
            rc=$?
            cp "/tmp/flash-$round"/*.csv "$out/bench/flash-$round.csv" 2>/dev/null
            say "flash round $round: exit $rc | ms: $(awk -F, 'NR > 1 {printf "%s %s  ", $5, $9}' \
                "$out/bench/flash-$round.csv" 2>/dev/null)"
        done
        ;;
    ncu)
        # how kernels spend their time: duration, instructions, issue, DRAM, tensor pipe, stall reasons
        m=gpu__time_duration.sum,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
        m=$m,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread
        m=$m,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__grid_size
        m=$m,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
        for s in long_scoreboard math_pipe_throttle barrier wait not_selected short_scoreboard mio_throttle lg_throttle; do
            m=$m,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
        done
        # NCU_RUNS: ';'-separated profiles, each "REGEX COUNT ARGS...": the first COUNT kernels whose names match
        # REGEX while `ladder run ARGS...` runs (default: dynconv's forward and backward at its bench size)
        IFS=';' read -ra runs <<<"${NCU_RUNS:-fwd_tc|bwd_tc 2 dynconv --rung gpu_tensorcore --B 8 --T 4096 --D 2048 --W 4}"
        n=0
        for r in "${runs[@]}"; do
            read -r regex count run_args <<<"$r"
            n=$((n + 1))
            # shellcheck disable=SC2086 # run_args is a list of arguments
            ncu --kernel-name "regex:$regex" --launch-count "$count" --metrics "$m" build/bin/ladder run $run_args \
                >"/tmp/logs/ncu-$n.txt" 2>&1
            say "ncu $regex ($run_args): exit $?"
            grep -a -E "^  [a-z_]|^ +[a-z_]+__" "/tmp/logs/ncu-$n.txt" | sed -E 's/ +/ /g' | tee -a "$summary"
        done
        ;;
    esac
    # after every step, so a run cut off at its limit still returns logs; each log cut to its last 8 MB, so that
    # the archive stays under the 16 MB a returned file may have
    for f in /tmp/logs/*; do
        (($(stat -c %s "$f") <= 8000000)) || { tail -c 8000000 "$f" >"$f.tail" && mv "$f.tail" "$f"; }
    done
    tar czf "$out/logs.tgz" -C /tmp logs
done
echo "==== summary"
cat "$summary"

#!/usr/bin/env bash
# The benchmark sweep on a GPU machine (from `make gpu-bundle`): CSV, Markdown and SVG into OUTDIR.
#   build/run-gpu-bench.sh OUTDIR [ladder bench options]
# BENCH_ALGO (default all) names one algorithm's sweep instead of every one.
# The bf16 GEMM ceiling is measured with PyTorch when it is installed (8192^3, median of 20).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# the bundle carries the library gzipped (tools/make-gpu-bundle.sh)
[[ -f $here/lib/libladder.so ]] || gzip -dkf "$here/lib/libladder.so.gz"
out=${1:?usage: run-gpu-bench.sh OUTDIR [options]}
shift
export LADDER_COMMIT=$(cat "$here/COMMIT")
gemm=$(python3 - <<'PY' 2>/dev/null || echo 0
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(3): a @ b
times = []
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); a @ b; e.record(); e.synchronize()
    times.append(s.elapsed_time(e))
times.sort()
print(f"{2 * 8192**3 / (times[10] * 1e-3) / 1e12:.0f}")
PY
)
echo "bf16 GEMM 8192^3 (PyTorch): ${gemm} TFLOP/s"
nvidia-smi -L 2>/dev/null || true
exec "$here/bin/ladder" bench "${BENCH_ALGO:-all}" --out "$out" --gemm-tflops "$gemm" "$@"

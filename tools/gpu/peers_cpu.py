#!/usr/bin/env python3
"""PyTorch's CPU attention (torch.nn.functional.scaled_dot_product_attention on CPU tensors, fp32) at the shape of
ladder's cpu bench problem for flash (common/flash_desc.c: B=1 H=8 S=1024 D=64, not causal), forward and backward
(autograd), at each thread count asked for (torch.set_num_threads): median of 10 wall-clock timings after 2
untimed runs, FLOPs counted as ladder counts them (forward 4*B*H*Sq*Sk*D, backward 2.5x).

    python3 tools/gpu/peers_cpu.py OUT.csv [--threads 1,16]
"""
import argparse
import csv
import platform
import time

import torch
import torch.nn.functional as F

REPS, WARMUP = 10, 2


def median_ms(fn):
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[REPS // 2]


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def case(threads, B=1, H=8, S=1024, D=64, causal=False):
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(B, H, S, D, generator=g, requires_grad=True) for _ in range(3))
    fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    with torch.no_grad():
        fwd_ms = median_ms(fwd)
    out = fwd()
    do = torch.randn(out.shape, generator=g)
    bwd_ms = median_ms(lambda: torch.autograd.grad(out, [q, k, v], do, retain_graph=True))
    flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
    return [f"B={B} H={H} S={S} D={D} causal={int(causal)}", str(torch.get_num_threads()), f"{fwd_ms:.4f}",
            f"{bwd_ms:.4f}", f"{flops / fwd_ms / 1e6:.1f}", f"{2.5 * flops / bwd_ms / 1e6:.1f}", torch.__version__,
            cpu_name()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="the CSV to write")
    ap.add_argument("--threads", default="1,16", help="comma-separated thread counts (default 1,16)")
    args = ap.parse_args()
    rows = [["case", "threads", "fwd_ms", "bwd_ms", "fwd_gflops", "bwd_gflops", "torch", "cpu"]]
    rows += [case(int(t)) for t in args.threads.split(",")]
    with open(args.out, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    for r in rows:
        print(",".join(r))


if __name__ == "__main__":
    main()

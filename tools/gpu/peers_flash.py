#!/usr/bin/env python3
"""PyTorch's FlashAttention-2 (SDPBackend.FLASH_ATTENTION) and cuDNN (SDPBackend.CUDNN_ATTENTION) attention at the
cells of `ladder bench flash`'s sweep (16k tokens a batch, B = 16384/S; hidden 2048, H = 2048/D; D 64 and 128; S
1024, 4096 and 16384; causal and not; bf16), timed in the same lease as ladder: forward and backward, median of 20
CUDA-event timings with L2 flushed before each, FLOPs counted as ladder counts them (forward 4*B*H*S*S*D, halved
when causal; backward 2.5x the forward).

    python3 tools/gpu/peers_flash.py OUT.csv [HEAD_DIMS]

HEAD_DIMS: the head dims to time, comma-separated (default 64,128, the sweep's; 256 gives H = 8).
"""
import csv
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from peers_timing import median_ms


def case(backend, D, S, causal):
    B, H = 16384 // S, 2048 // D
    shape = f"B={B} H={H} S={S} D={D} causal={int(causal)}"
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    with sdpa_kernel([backend]):
        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            out = fwd()
        except RuntimeError as err:
            return [backend.name, shape, "refused", str(err).splitlines()[0][:120], "", "", ""]
        do = torch.randn_like(out)
        fwd_ms = median_ms(fwd)
        out = fwd()
        bwd_ms = median_ms(lambda: torch.autograd.grad(out, [q, k, v], do, retain_graph=True))
    flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
    return [backend.name, shape, f"{fwd_ms:.4f}", f"{bwd_ms:.4f}", f"{flops / fwd_ms / 1e9:.1f}",
            f"{2.5 * flops / bwd_ms / 1e9:.1f}", torch.cuda.get_device_name()]


def main():
    head_dims = [int(d) for d in (sys.argv[2] if len(sys.argv) > 2 else "64,128").split(",")]
    rows = [["backend", "shape", "fwd_ms", "bwd_ms", "fwd_tflops", "bwd_tflops", "device"]]
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        for D in head_dims:
            for S in (1024, 4096, 16384):
                for causal in (False, True):
                    rows.append(case(backend, D, S, causal))
                    print(",".join(rows[-1]), flush=True)
    with open(sys.argv[1], "w", newline="") as f:
        csv.writer(f).writerows(rows)


if __name__ == "__main__":
    main()

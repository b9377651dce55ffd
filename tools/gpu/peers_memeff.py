#!/usr/bin/env python3
"""PyTorch's memory-efficient attention (xformers' CUTLASS kernel, SDPBackend.EFFICIENT_ATTENTION) at the shapes of
`ladder bench memeff`, timed in the same lease as ladder: forward and backward, median of 20 CUDA-event timings
with L2 flushed before each, FLOPs counted as ladder counts them (forward 4*B*H*Sq*Sk*D, backward 2.5x).

    python3 tools/gpu/peers_memeff.py OUT.csv
"""
import csv
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from peers_timing import median_ms


def case(name, B, Hq, Hkv, Sq, Sk, D, bias_shape=None, p=0.0, bias_grad=False):
    dev, dt = "cuda", torch.bfloat16
    q = torch.randn(B, Hq, Sq, D, device=dev, dtype=dt, requires_grad=True)
    k = torch.randn(B, Hkv, Sk, D, device=dev, dtype=dt, requires_grad=True)
    v = torch.randn(B, Hkv, Sk, D, device=dev, dtype=dt, requires_grad=True)
    if Hkv != Hq:  # the efficient backend takes no GQA: expand the key/value heads (a view, as a user would)
        k2 = k.repeat_interleave(Hq // Hkv, dim=1)
        v2 = v.repeat_interleave(Hq // Hkv, dim=1)
    else:
        k2, v2 = k, v
    bias = None
    if bias_shape:
        bias = torch.randn(*bias_shape, device=dev, dtype=dt, requires_grad=bias_grad)
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
        fwd = lambda: F.scaled_dot_product_attention(q, k2, v2, attn_mask=bias, dropout_p=p)
        try:
            out = fwd()
        except RuntimeError as err:
            return [name, "refused", str(err).splitlines()[0][:120], "", "", ""]
        do = torch.randn_like(out)
        fwd_ms = median_ms(fwd)
        out = fwd()

        def bwd():
            torch.autograd.grad(out, [t for t in (q, k, v, bias) if t is not None and t.requires_grad], do,
                                retain_graph=True)
        bwd_ms = median_ms(bwd)
    flops = 4.0 * B * Hq * Sq * Sk * D
    return [name, f"{fwd_ms:.4f}", f"{bwd_ms:.4f}", f"{flops / fwd_ms / 1e9:.1f}", f"{2.5 * flops / bwd_ms / 1e9:.1f}",
            torch.cuda.get_device_name()]


def main():
    rows = [["case", "fwd_ms", "bwd_ms", "fwd_tflops", "bwd_tflops", "device"]]
    rows.append(case("bias+dropout B=4 H=16 S=2048 D=64 full bias with grad p=0.1", 4, 16, 16, 2048, 2048, 64,
                     (4, 16, 2048, 2048), 0.1, True))
    rows.append(case("plain B=4 H=16 S=4096 D=128", 4, 16, 16, 4096, 4096, 128))
    rows.append(case("bias B=4 H=16 S=4096 D=128 [1,16,1,4096] no grad", 4, 16, 16, 4096, 4096, 128,
                     (1, 16, 1, 4096)))
    rows.append(case("decode B=8 Hq=32 Hkv=8 Sq=1 Sk=32768 D=128", 8, 32, 8, 1, 32768, 128))
    with open(sys.argv[1], "w", newline="") as f:
        csv.writer(f).writerows(rows)
    for r in rows:
        print(",".join(r))


if __name__ == "__main__":
    main()

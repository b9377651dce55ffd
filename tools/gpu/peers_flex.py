#!/usr/bin/env python3
"""PyTorch's FlexAttention (torch.nn.attention.flex_attention.flex_attention under torch.compile, block masks from
create_block_mask) at the shapes of `ladder bench flex`'s tensor-core problems, timed in the same lease as ladder:
bf16, forward and backward (dq, dk, dv), median of 20 CUDA-event timings with L2 flushed before each, FLOPs counted
as ladder counts them (common/flex_desc.c: the (i, j) pairs the mask lets through, counted exactly; forward
4*B*H*pairs*D, backward 2.5x).

    python3 tools/gpu/peers_flex.py OUT.csv

Cases (D = 128, H = 16): no mod and causal at B = 4, S = 4096 (flex's and flash's cells); the causal 1024-token sliding
window with ALiBi at B = 2, S = 8192; ALiBi under the causal mask at B = 4, S = 4096. ALiBi's slopes are frozen (a
buffer without requires_grad): PyTorch's learnable-buffer backward is not timed (issue 22: 1.9 s for learnable
slopes; a learnable [H, 2S-1] table does not compile). The forward is timed as training runs it (q, k, v require
grad, so it keeps what the backward reads), the block masks are built once beforehand, as ladder's lists are. A case
that fails (a compile error, out of memory) prints one line and writes a row saying so; the script goes on.
"""
import csv
import sys

import torch
import torch._dynamo
from torch.nn.attention.flex_attention import and_masks, create_block_mask, flex_attention

from peers_timing import median_ms

DEV, DT = "cuda", torch.bfloat16
WINDOW = 1024
# each case is a recompile (its shapes, its score_mod): room for all of them, so that none falls back to the eager
# flex_attention, which writes the whole score matrix
torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
COMPILED = torch.compile(flex_attention, dynamic=False)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def window(b, h, q_idx, kv_idx):
    return q_idx - kv_idx <= WINDOW


def visible_pairs(S, is_causal, left):
    """The (i, j) pairs of one batch row and head that the mask lets through, as ladder counts them: row i sees
    keys max(0, i - left) .. (i with causal, else S - 1); left < 0: no window."""
    pairs = 0
    for i in range(S):
        lo = i - left if left >= 0 and i > left else 0
        hi = i + 1 if is_causal else S
        pairs += max(0, hi - lo)
    return pairs


def case(name, B, H, S, D, mask_mods=(), alibi=False):
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, S, D, device=DEV, dtype=DT, requires_grad=True) for _ in range(3))
    slopes = torch.exp2(-8.0 * torch.arange(1, H + 1, device=DEV, dtype=torch.float32) / H)  # frozen: no grad
    score_mod = None
    if alibi:
        def score_mod(score, b, h, q_idx, kv_idx):  # ladder's alibi: score + slopes[h] * (j - i)
            return score + slopes[h] * (kv_idx - q_idx)
    block_mask = None
    if mask_mods:
        block_mask = create_block_mask(and_masks(*mask_mods), None, None, S, S, device=DEV)
    fwd = lambda: COMPILED(q, k, v, score_mod=score_mod, block_mask=block_mask)
    out = fwd()  # compiles the forward (and, with q, k, v requiring grad, the backward's graph)
    do = torch.randn_like(out)
    fwd_ms = median_ms(fwd)
    out = fwd()

    def bwd():
        torch.autograd.grad(out, [q, k, v], do, retain_graph=True)
    bwd_ms = median_ms(bwd)
    flops = 4.0 * B * H * visible_pairs(S, causal in mask_mods, WINDOW if window in mask_mods else -1) * D
    return [name, f"{fwd_ms:.4f}", f"{bwd_ms:.4f}", f"{flops / fwd_ms / 1e9:.1f}", f"{2.5 * flops / bwd_ms / 1e9:.1f}"]


# the case that issue 22's must-reach names first, so that a call cut short still has it
CASES = [
    ("alibi frozen causal+window 1024 B=2 H=16 S=8192 D=128",
     dict(B=2, H=16, S=8192, D=128, mask_mods=(causal, window), alibi=True)),
    ("no mod B=4 H=16 S=4096 D=128", dict(B=4, H=16, S=4096, D=128)),
    ("causal B=4 H=16 S=4096 D=128", dict(B=4, H=16, S=4096, D=128, mask_mods=(causal,))),
    ("alibi frozen causal B=4 H=16 S=4096 D=128", dict(B=4, H=16, S=4096, D=128, mask_mods=(causal,), alibi=True)),
]


def main():
    device, version = torch.cuda.get_device_name(), torch.__version__
    header = ["case", "fwd_ms", "bwd_ms", "fwd_tflops", "bwd_tflops", "device", "torch"]
    print(",".join(header), flush=True)
    with open(sys.argv[1], "w", newline="") as f:  # a row as each case ends, so that a call cut short keeps them
        out = csv.writer(f)
        out.writerow(header)
        for name, kw in CASES:
            try:
                row = case(name, **kw)
            except Exception as err:  # a compile error, out of memory: say so in one line and go on
                why = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
                print(f"peers_flex: {name}: {type(err).__name__}: {why}", file=sys.stderr)
                row = [name, "failed", why.replace(",", ";"), "", ""]
            torch.cuda.empty_cache()  # the case's tensors are gone by now, a failed one's too
            out.writerow(row + [device, version])
            f.flush()
            print(",".join(row + [device, version]), flush=True)


if __name__ == "__main__":
    main()

/*
 * gpu_tiled/memeff.cu: memory-efficient attention at the tiled rung: the attention family of attention_tiled.cuh
 * with memeff's hooks on (the bias and its gradient, dropout: common/memeff_gpu.cuh).
 *
 * Preconditions: validated by ladder_memeff_fwd/bwd (f32, device pointers, any input strides, the bias any
 * broadcast, contiguous outputs, D and Dv <= 256, Hq and B at most 65535).
 * Run it:  build/bin/ladder run memeff --rung gpu_tiled [--dropout 0.1] [--bias 1,4,1,256]
 */
#include "attention_tiled.cuh"
#include "memeff_gpu.cuh"

static attn_tiled::args pack(const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    attn_tiled::args n = attn_tiled::pack(&p->attn, a->q, a->k, a->v, a->cu_seqlens_q, a->cu_seqlens_k, a->o,
                                          a->lse, a->dout, a->dlse, a->dq, a->dk, a->dv);
    n.hooks = memeff_hooks(p, a);
    return n;
}

extern "C" ladder_status memeff_fwd_gpu_tiled(const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    return attn_tiled::fwd(pack(p, a));
}

extern "C" ladder_status memeff_bwd_gpu_tiled(const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    attn_tiled::args n = pack(p, a);
    return memeff_bwd_with_dbias<float>(n, a, n.hooks, [&] { return attn_tiled::bwd(n, p->deterministic); });
}

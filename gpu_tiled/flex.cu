/*
 * gpu_tiled/flex.cu: flex attention at the tiled rung: the attention family of attention_tiled.cuh with flex's
 * policy (flex<MOD>: the score mod inlined, the mask mods in partial tiles, the key tiles from the block lists) and
 * the deterministic reduction of the buffer gradients around its backward (common/flex_gpu.cuh).
 *
 * What changed since gpu_naive/: the naive rung's threads each walked a row's keys through the lists alone; here a
 * block owns a tile of 32 query rows (or keys) and visits only the 32-wide tiles of its 128-wide block-mask tiles, K
 * and V staged in shared memory once per tile, with chapter 3's online softmax. The backward is the family's three
 * kernels (Delta, dK/dV over the transposed lists, the deterministic dQ pass over the forward's lists); the buffer
 * gradients are no longer one thread per element walking every score: the dQ pass sums each tile's shares along the
 * lines the buffers' elements follow, and two small kernels finish the sums, each in a fixed order.
 *
 * Preconditions: validated by ladder_flex_fwd/bwd, block lists present (f32, device pointers, any input strides,
 * contiguous outputs, D and Dv <= 256, Hq and B at most 65535).
 * Run it:  build/bin/ladder run flex --rung gpu_tiled --score_mod alibi --mask_mod causal
 */
#include "attention_tiled.cuh"

static attn_tiled::args pack(const ladder_flex_problem *p, const ladder_flex_args *a) {
    const ladder_tensor none = {};
    attn_tiled::args n = attn_tiled::pack(&p->attn, a->q, a->k, a->v, none, none, a->o, a->lse, a->dout, a->dlse,
                                          a->dq, a->dk, a->dv);
    n.mask = LADDER_ATTN_NO_MASK; /* flex masks through its lists and mask mods alone (attn.mask is not read) */
    n.flex = ladder_flex_hooks_of(p, a);
    return n;
}

extern "C" ladder_status flex_fwd_gpu_tiled(const ladder_flex_problem *p, const ladder_flex_args *a) {
    return attn_tiled::fwd_flex(pack(p, a), p->score_mod);
}

extern "C" ladder_status flex_bwd_gpu_tiled(const ladder_flex_problem *p, const ladder_flex_args *a) {
    attn_tiled::args n = pack(p, a);
    return ladder_flex_with_mod(p->score_mod, [&](auto m) {
        auto bwd = [&](bool *) { return attn_tiled::bwd_flex(n, p->score_mod); };
        return ladder_flex_bwd_with_dbuf<decltype(m)::value>(p, a, n.flex, attn_tiled::BR, bwd);
    });
}

/*
 * gpu_tiled/flash.cu: flash at the tiled rung: the attention family of attention_tiled.cuh with every hook off.
 *
 * Preconditions: validated by ladder_flash_fwd/bwd (f32, device pointers, any input strides, contiguous
 * outputs, D and Dv <= 256, Hq and B at most 65535).
 * Run it:  build/bin/ladder run flash --rung gpu_tiled [--deterministic 1]
 */
#include "attention_tiled.cuh"
#include "flash_rungs.h"

static attn_tiled::args pack(const ladder_flash_problem *p, const ladder_flash_args *a) {
    return attn_tiled::pack(&p->attn, a->q, a->k, a->v, a->cu_seqlens_q, a->cu_seqlens_k, a->o, a->lse, a->dout,
                            a->dlse, a->dq, a->dk, a->dv);
}

extern "C" ladder_status flash_fwd_gpu_tiled(const ladder_flash_problem *p, const ladder_flash_args *a) {
    return attn_tiled::fwd(pack(p, a));
}

extern "C" ladder_status flash_bwd_gpu_tiled(const ladder_flash_problem *p, const ladder_flash_args *a) {
    return attn_tiled::bwd(pack(p, a), p->deterministic);
}

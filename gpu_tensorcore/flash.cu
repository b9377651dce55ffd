/*
 * gpu_tensorcore/flash.cu: flash at the tensor-core rung: the attention family of attention_tc.cuh with the
 * plain policy (no hook compiled in).
 *
 * Preconditions: validated by ladder_flash_fwd/bwd (q, k, v, do, o, dq, dk, dv all bf16 or all fp16; lse
 * and dlse f32; device pointers; any input strides; contiguous outputs; D, Dv <= 256; Hq, B <= 65535).
 * Run it:  build/bin/ladder run flash --rung gpu_tensorcore [--dtype fp16]
 */
#include "attention_tc.cuh"
#include "flash_rungs.h"

static attn_tc::args pack(const ladder_flash_problem *p, const ladder_flash_args *a) {
    return attn_tc::pack(&p->attn, a->q, a->k, a->v, a->cu_seqlens_q, a->cu_seqlens_k, a->o, a->lse, a->dout,
                         a->dlse, a->dq, a->dk, a->dv);
}

extern "C" ladder_status flash_fwd_gpu_tensorcore(const ladder_flash_problem *p, const ladder_flash_args *a) {
    return attn_tc::fwd<attn_tc::plain>(pack(p, a), a->q.dtype);
}

extern "C" ladder_status flash_bwd_gpu_tensorcore(const ladder_flash_problem *p, const ladder_flash_args *a) {
    return attn_tc::bwd<attn_tc::plain>(pack(p, a), p->deterministic, a->q.dtype);
}

/*
 * gpu_tensorcore/flash.cu: flash at the tensor-core rung: the attention family of attention_tc.cuh with the
 * plain policy (no hook compiled in).
 *
 * Preconditions: validated by ladder_flash_fwd/bwd (q, k, v, do, o, dq, dk, dv all bf16 or all fp16; lse
 * and dlse f32; device pointers; any input strides; contiguous outputs; D, Dv <= 256; Hq, B <= 65535).
 * The forward and the backward's dK/dV pass have two generations (attention_tc_hopper.cuh): the mma.sync kernels
 * (attention_tc_fwd.cuh, attention_tc_bwd.cuh) and, on sm_90 GPUs, the Hopper ones (attention_fwd.sm90a.cu,
 * attention_bwd.sm90a.cu: wgmma from shared memory) for head dims up to 128.
 * LADDER_TC_PATH picks: auto (the default: the Hopper kernels on sm_90 GPUs, the mma.sync ones elsewhere), mma (the
 * mma.sync kernels everywhere: the switch that times or tests them on Hopper), wgmma, wgmma-1, wgmma-2, wgmma-3 (a
 * Hopper kernel where it covers the problem: every idea, the first alone, the first two, the first three; refused on
 * GPUs other than sm_90).
 * Run it:  build/bin/ladder run flash --rung gpu_tensorcore [--dtype fp16]
 *          LADDER_TC_PATH=mma build/bin/ladder run flash --rung gpu_tensorcore
 */
#include "attention_tc.cuh"
#include "attention_tc_hopper.cuh"
#include "flash_rungs.h"

static attn_tc::args pack(const ladder_flash_problem *p, const ladder_flash_args *a) {
    return attn_tc::pack(&p->attn, a->q, a->k, a->v, a->cu_seqlens_q, a->cu_seqlens_k, a->o, a->lse, a->dout,
                         a->dlse, a->dq, a->dk, a->dv);
}

extern "C" ladder_status flash_fwd_gpu_tensorcore(const ladder_flash_problem *p, const ladder_flash_args *a) {
    const attn_tc::args n = pack(p, a);
    bool ran = false; /* the Hopper kernels, on an sm_90 GPU where they cover the problem */
    LADDER_TRY(attn_tc::fwd_wgmma(n, a->q.dtype, &ran));
    return ran ? LADDER_OK : attn_tc::fwd<attn_tc::plain>(n, a->q.dtype);
}

extern "C" ladder_status flash_bwd_gpu_tensorcore(const ladder_flash_problem *p, const ladder_flash_args *a) {
    return attn_tc::bwd<attn_tc::plain>(pack(p, a), p->deterministic, a->q.dtype);
}

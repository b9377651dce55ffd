/*
 * gpu_tensorcore/attention_bwd.sm90a.cu: the Hopper dK/dV pass (attention_tc_hopper_bwd.cuh) compiled for flash's
 * plain policy and memeff's hooked one, at the head dims (64, 64) and (128, 128), in bf16 and fp16, for sm_90a alone.
 * Run it:  build/bin/ladder run flash --rung gpu_tensorcore            (the default on sm_90)
 *          LADDER_TC_PATH=mma build/bin/ladder run flash --rung gpu_tensorcore   (the mma.sync pass, for comparison)
 */
#include "attention_tc_hopper_bwd.cuh"

namespace attn_tc {

template ladder_status bwd_wgmma_dkdv<plain, __nv_bfloat16, 64>(args &, bool, ladder_scratch *, bool *);
template ladder_status bwd_wgmma_dkdv<plain, __half, 64>(args &, bool, ladder_scratch *, bool *);
template ladder_status bwd_wgmma_dkdv<plain, __nv_bfloat16, 128>(args &, bool, ladder_scratch *, bool *);
template ladder_status bwd_wgmma_dkdv<plain, __half, 128>(args &, bool, ladder_scratch *, bool *);
template ladder_status bwd_wgmma_dkdv<hooked, __nv_bfloat16, 64>(args &, bool, ladder_scratch *, bool *);
template ladder_status bwd_wgmma_dkdv<hooked, __half, 64>(args &, bool, ladder_scratch *, bool *);
template ladder_status bwd_wgmma_dkdv<hooked, __nv_bfloat16, 128>(args &, bool, ladder_scratch *, bool *);
template ladder_status bwd_wgmma_dkdv<hooked, __half, 128>(args &, bool, ladder_scratch *, bool *);

} // namespace attn_tc

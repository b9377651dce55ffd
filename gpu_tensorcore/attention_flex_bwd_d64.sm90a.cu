/*
 * gpu_tensorcore/attention_flex_bwd_d64.sm90a.cu: flex's dK/dV pass with its dQ on the Hopper kernel
 * (attention_tc_hopper_bwd.cuh) with the policy flex<MOD> for every registered score mod, at the head dims (64, 64),
 * in bf16 and fp16 (compiled for sm_90a alone; a file per head dim, so that a full build compiles them side by side).
 * Run it:  build/bin/ladder run flex --rung gpu_tensorcore --score_mod alibi --mask_mod causal   (on an sm_90 GPU)
 */
#include "attention_tc_hopper_bwd.cuh"

namespace attn_tc {
template ladder_status bwd_wgmma_flex<64>(args &, int, ladder_dtype, ladder_scratch *, bool *);
} // namespace attn_tc

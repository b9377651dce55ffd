/*
 * gpu_tensorcore/attention_flex_fwd.sm90a.cu: flex's forward on the Hopper kernel with every idea (idea 3,
 * attn_fwd_wgmma_ws_kernel in attention_tc_hopper_fwd.cuh) with the policy flex<MOD>, for every registered score mod,
 * at the head dims (64, 64) and (128, 128), in bf16 and fp16 (compiled for sm_90a alone). The kernel walks the block
 * lists' key tiles in the producer and the consumers alike, and applies the score mod, the masks and the mask mods
 * in the consumers' softmax, as the mma.sync forward does.
 * Run it:  build/bin/ladder run flex --rung gpu_tensorcore --score_mod alibi --mask_mod causal   (on an sm_90 GPU)
 */
#include "attention_tc_hopper.cuh"
#include "attention_tc_hopper_fwd.cuh"

namespace attn_tc {

template <int HD> ladder_status fwd_wgmma_flex(const args &a, int mod, ladder_dtype dtype, bool *ran) {
    bool every = false;
    *ran = false;
    LADDER_TRY(use_every_idea(&every));
    if (!every) return LADDER_OK;
    return ladder_flex_with_mod(mod, [&](auto m) {
        using Pol = flex<decltype(m)::value>;
        return dtype == LADDER_BF16 ? launch_ws<Pol, __nv_bfloat16, HD, HD>(a, ran) : launch_ws<Pol, __half, HD, HD>(a, ran);
    });
}

template ladder_status fwd_wgmma_flex<64>(const args &, int, ladder_dtype, bool *);
template ladder_status fwd_wgmma_flex<128>(const args &, int, ladder_dtype, bool *);

} // namespace attn_tc

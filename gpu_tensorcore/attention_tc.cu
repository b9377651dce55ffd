/*
 * gpu_tensorcore/attention_tc.cu: the tensor-core attention family's two entry points, per policy: pick the
 * compiled head dims and the dtype, set up the fp32 scratch the backward needs, and call the launchers
 * (attention_fwd_*.cu, attention_bwd_*.cu; the kernels and what changed since gpu_tiled/ are described in
 * attention_tc_fwd.cuh and attention_tc_bwd.cuh).
 */
#include "attention_tc.cuh"

namespace attn_tc {
namespace {

template <class Pol, class T> ladder_status fwd_for(const args &a) {
    const head_dims d = pick_head_dims(a.D, a.Dv);
    switch (d.hd * 1000 + d.hdv) {
    case 64064: return fwd_launch<Pol, T, 64, 64>(a);
    case 128128: return fwd_launch<Pol, T, 128, 128>(a);
    case 192192: return fwd_launch<Pol, T, 192, 192>(a);
    case 192128: return fwd_launch<Pol, T, 192, 128>(a);
    default: return fwd_launch<Pol, T, 256, 256>(a);
    }
}

template <class Pol, class T> ladder_status bwd_for(const args &a, bool deterministic) {
    const head_dims d = pick_head_dims(a.D, a.Dv);
    switch (d.hd * 1000 + d.hdv) {
    case 64064: return bwd_launch<Pol, T, 64, 64>(a, deterministic);
    case 128128: return bwd_launch<Pol, T, 128, 128>(a, deterministic);
    case 192192: return bwd_launch<Pol, T, 192, 192>(a, deterministic);
    case 192128: return bwd_launch<Pol, T, 192, 128>(a, deterministic);
    default: return bwd_launch<Pol, T, 256, 256>(a, deterministic);
    }
}

} // namespace

template <class Pol> ladder_status fwd(const args &a, ladder_dtype dtype) {
    const bool bf16 = dtype == LADDER_BF16;
    if (!Pol::EXTRAS || a.splits <= 1) return bf16 ? fwd_for<Pol, __nv_bfloat16>(a) : fwd_for<Pol, __half>(a);
    return bf16 ? fwd_split<__nv_bfloat16>(a, fwd_for<Pol, __nv_bfloat16>) : fwd_split<__half>(a, fwd_for<Pol, __half>);
}

template <class Pol> ladder_status bwd(args a, bool deterministic, ladder_dtype dtype) {
    /* scratch from the stream-ordered pool (after the first call it costs no cudaMalloc), freed in stream order */
    const int64_t rows = a.B * a.Hq * a.Sq;
    ladder_scratch delta, dq_accum;
    LADDER_TRY(delta.alloc(sizeof(float) * (size_t)rows));
    /* dQ's fp32 accumulator for the atomics, or the split deterministic pass's partials (the Hopper pass's ordered
     * adds in deterministic mode take one of their own: bwd_wgmma_dkdv()) */
    const int64_t splits = Pol::EXTRAS ? a.splits : 1;
    if (!deterministic || splits > 1)
        LADDER_TRY(dq_accum.alloc(sizeof(float) * (size_t)((deterministic ? splits : 1) * rows * a.D)));
    a.delta = (float *)delta.ptr, a.dq_accum = (float *)dq_accum.ptr;
    return dtype == LADDER_BF16 ? bwd_for<Pol, __nv_bfloat16>(a, deterministic) : bwd_for<Pol, __half>(a, deterministic);
}

template ladder_status fwd<plain>(const args &, ladder_dtype);
template ladder_status fwd<hooked>(const args &, ladder_dtype);
template ladder_status bwd<plain>(args, bool, ladder_dtype);
template ladder_status bwd<hooked>(args, bool, ladder_dtype);

} // namespace attn_tc

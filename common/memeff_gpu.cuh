/**
 * @file memeff_gpu.cuh
 * @brief What memeff's tiled and tensor-core rungs share: its hooks for the attention family (bias, dropout;
 *        common/attention_gpu.cuh) and the backward's bias gradient around a family backward.
 */
#ifndef LADDER_MEMEFF_GPU_CUH
#define LADDER_MEMEFF_GPU_CUH

#include "attention_gpu.cuh"
#include "cuda_util.cuh"
#include "memeff_rungs.h"

/** memeff's hooks: the bias read through its strides (0 along a broadcast axis) and dropout; no dbias sink yet. */
inline ladder_attn_hooks memeff_hooks(const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    ladder_attn_hooks k = {};
    const memeff_bias b = memeff_bias_of(a);
    k.bias = b.data;
    for (int d = 0; d < 4; d++) k.sbias[d] = b.s[d];
    k.dropout_p = (float)p->dropout_p;
    k.keep_scale = ladder_dropout_scale(k.dropout_p);
    k.keep_min = ladder_dropout_keep_min(k.dropout_p);
    k.seed = p->philox_seed, k.offset = p->philox_offset;
    return k;
}

/**
 * Run @p bwd (the family's backward, reading the hooks @p k) so that dS reaches a->dbias when it is asked for:
 * this sets k's dbias sink first. A bias of
 * the problem's full shape [B,Hq,Sq,Sk] gets dS written straight into dbias (each element once, in storage of
 * @p T); a broadcast one gets it in a full f32 scratch, then summed over the broadcast axes in a fixed order
 * (ladder_attn_dbias_reduce), so that dbias repeats bitwise either way. Elements that no kernel visits (masked
 * tiles, pairs of different packed sequences) are zero: the target is cleared first, unless there are none (no
 * mask, no packing: every element is written, and the clear cost as much again as writing the gradient).
 */
template <class T, class Bwd>
ladder_status memeff_bwd_with_dbias(const ladder_attn_call &c, const ladder_memeff_args *a, ladder_attn_hooks &k,
                                    Bwd bwd) {
    if (!a->dbias.data) return bwd();
    const int64_t full[4] = {c.B, c.Hq, c.Sq, c.Sk}, n = c.B * c.Hq * c.Sq * c.Sk;
    const int64_t strides[4] = {c.Hq * c.Sq * c.Sk, c.Sq * c.Sk, c.Sk, 1};
    bool is_full = true;
    for (int d = 0; d < 4; d++) is_full &= a->dbias.shape[d] == full[d];
    const size_t elem = ladder_dtype_size(a->dbias.dtype);
    ladder_scratch ds;
    if (!is_full) LADDER_TRY(ds.alloc(sizeof(float) * (size_t)n));
    k.dbias.p = is_full ? a->dbias.data : ds.ptr;
    k.dbias.f32 = !is_full;
    for (int d = 0; d < 4; d++) k.dbias.s[d] = strides[d];
    const bool every_element = c.mask.causal == LADDER_CAUSAL_NONE && c.mask.window_left < 0 &&
                               c.mask.window_right < 0 && !c.cu_q;
    if (!every_element) LADDER_CUDA_TRY(cudaMemsetAsync(k.dbias.p, 0, (is_full ? elem : sizeof(float)) * (size_t)n, 0));
    LADDER_TRY(bwd());
    if (is_full) return LADDER_OK;
    return ladder_attn_dbias_reduce<T>(c, (const float *)ds.ptr, a->dbias.shape, a->dbias.data);
}

#endif

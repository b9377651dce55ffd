/*
 * gpu_tensorcore/memeff.cu: memory-efficient attention at the tensor-core rung: the attention family of
 * attention_tc.cuh with memeff's hooks (the bias and its gradient, dropout: common/memeff_gpu.cuh). A problem
 * that uses none of them runs the plain policy's kernels, flash's own.
 *
 * Split keys: with few query rows against many keys (decoding), a query tile's key tiles are shared by several
 * blocks of the forward (and of the deterministic dQ pass), whose partials are combined (common/attention_gpu.cuh):
 * the problem's splits, or with splits = 0 as many as give the GPU about four blocks per SM.
 *
 * fp32 inputs go to the TF32 kernels (attention_tf32.cuh): three TF32 products per multiply, or one with the
 * problem's allow_tf32. On an sm_90 GPU the forward of a problem without a bias and without split keys runs the
 * Hopper kernel (attention_tc_hopper.cuh: idea 3, dropout in its consumers' softmax).
 *
 * Preconditions: validated by ladder_memeff_fwd/bwd (q, k, v, bias, do, o, dq, dk, dv, dbias all bf16, all fp16
 * or all f32; lse and dlse f32; device pointers; any input strides, the bias any broadcast; contiguous outputs;
 * D, Dv <= 256, <= 128 in f32; Hq, B <= 65535).
 * Run it:  build/bin/ladder run memeff --rung gpu_tensorcore [--dtype fp16|fp32] [--allow_tf32 1] [--dropout 0.1]
 */
#include "attention_tc_hopper.cuh"
#include "attention_tf32.cuh"
#include "memeff_gpu.cuh"

/* The splits of a problem as the kernels see it (requested: the problem's; 0: automatic): as many as give each SM
 * up to four blocks, counting query tiles of 64 rows (the smallest any head dim uses) and keeping at least four
 * key tiles of 64 per split. Rounded down, so that the blocks fill whole waves where an SM holds two or four. */
static int64_t splits_of(const attn_tc::args &n, int64_t requested) {
    if (requested > 0) return requested;
    int device = 0, sms = 132;
    if (cudaGetDevice(&device) == cudaSuccess)
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int64_t blocks = (n.Sq + 63) / 64 * n.Hq * n.B, want = 4 * (int64_t)sms;
    const int64_t most = n.Sk / (4 * 64);
    if (blocks >= want || most < 2) return 1;
    const int64_t splits = want / blocks;
    return splits < most ? splits : most;
}

static attn_tc::args pack(const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    attn_tc::args n = attn_tc::pack(&p->attn, a->q, a->k, a->v, a->cu_seqlens_q, a->cu_seqlens_k, a->o, a->lse,
                                    a->dout, a->dlse, a->dq, a->dk, a->dv);
    n.hooks = memeff_hooks(p, a);
    /* the bias through its broadcast strides, 16 bytes at a time where its rows allow */
    n.bias = attn_tc::view4{(const uint16_t *)n.hooks.bias,
                            {n.hooks.sbias[0], n.hooks.sbias[1], n.hooks.sbias[2], n.hooks.sbias[3]},
                            n.hooks.bias && n.hooks.sbias[3] == 1 && ladder_rows16(&a->bias, 1)};
    return n;
}

/* Does the problem use a hook, or split keys? Without them it takes the plain policy. */
static bool hooked(const attn_tc::args &n, const ladder_memeff_args *a) {
    return n.hooks.bias || n.hooks.dropout_p > 0.0f || a->dbias.data || n.splits > 1;
}

extern "C" ladder_status memeff_fwd_gpu_tensorcore(const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    attn_tc::args n = pack(p, a);
    attn_tc::pack_gqa_rows(n); /* decoding: a key/value head's query heads as rows of one tile */
    n.splits = splits_of(n, p->splits);
    if (a->q.dtype == LADDER_F32) return attn_tc::fwd_tf32(n, !p->allow_tf32);
    const bool with_hooks = hooked(n, a);
    bool ran = false; /* the Hopper kernel, on an sm_90 GPU where it covers the problem */
    LADDER_TRY(attn_tc::fwd_wgmma_memeff(n, with_hooks, a->q.dtype, &ran));
    if (ran) return LADDER_OK;
    return with_hooks ? attn_tc::fwd<attn_tc::hooked>(n, a->q.dtype) : attn_tc::fwd<attn_tc::plain>(n, a->q.dtype);
}

extern "C" ladder_status memeff_bwd_gpu_tensorcore(const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    attn_tc::args n = pack(p, a);
    n.splits = splits_of(n, p->splits);
    if (a->q.dtype == LADDER_F32)
        return memeff_bwd_with_dbias<float>(n, a, n.hooks,
                                            [&] { return attn_tc::bwd_tf32(n, p->deterministic, !p->allow_tf32); });
    if (!hooked(n, a)) return attn_tc::bwd<attn_tc::plain>(n, p->deterministic, a->q.dtype);
    auto bwd = [&] { return attn_tc::bwd<attn_tc::hooked>(n, p->deterministic, a->q.dtype); };
    return a->q.dtype == LADDER_BF16 ? memeff_bwd_with_dbias<__nv_bfloat16>(n, a, n.hooks, bwd)
                                     : memeff_bwd_with_dbias<__half>(n, a, n.hooks, bwd);
}

/* What the softmax-attention algorithms share: problem checks and FLOP counts (see attention.h). */
#include "attention.h"

#include <float.h>
#include <math.h>

#include "check.h"

double ladder_attention_scale(const ladder_attention_problem *p) {
    return p->scale > 0 ? p->scale : 1.0 / sqrt((double)p->D);
}

ladder_attn_call ladder_attn_call_of(const ladder_attention_problem *p, const ladder_tensor *cu_seqlens_q,
                                     const ladder_tensor *cu_seqlens_k, const ladder_tensor *dlse) {
    ladder_attn_call c = {
        .B = p->B, .Hq = p->Hq, .Hkv = p->Hkv, .Sq = p->Sq, .Sk = p->Sk, .D = p->D, .Dv = p->Dv,
        .scale = (float)ladder_attention_scale(p), .softcap = (float)p->softcap, .mask = p->mask,
        .cu_q = (const int32_t *)cu_seqlens_q->data, .cu_k = (const int32_t *)cu_seqlens_k->data,
        .n_seqs = cu_seqlens_q->data ? cu_seqlens_q->shape[0] - 1 : 0,
        .dlse = (const float *)dlse->data,
    };
    for (int i = 0; i < 3 && dlse->data; i++) c.sdlse[i] = dlse->strides[i];
    return c;
}

/* A size in lo..hi, named in the message as the descriptor names its flag. */
static ladder_status check_size(const char *name, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
        return hi == INT64_MAX
                   ? ladder_fail(LADDER_ERR_ARG, "%s is %lld but must be >= %lld", name, (long long)v, (long long)lo)
                   : ladder_fail(LADDER_ERR_ARG, "%s is %lld but must be in %lld..%lld", name, (long long)v,
                                 (long long)lo, (long long)hi);
    return LADDER_OK;
}

/*
 * An option the kernels use as a float: >= 0, and finite as a float, and not a positive double that rounds to
 * 0 (a softcap of 1e-50 would silently turn into "no softcap"; a scale of 1e39 into infinity and NaN everywhere).
 */
static ladder_status check_float_option(const char *name, double v, const char *zero_means) {
    const float f = (float)v;
    if (!(v >= 0 && isfinite(f)) || (v > 0 && !(f >= FLT_MIN)))
        return ladder_fail(LADDER_ERR_ARG, "%s is %g but must be 0 (%s) or in %g..%g, the range of a float", name, v,
                           zero_means, (double)FLT_MIN, (double)FLT_MAX);
    return LADDER_OK;
}

ladder_status ladder_attention_check_problem(const ladder_attention_problem *p) {
    LADDER_TRY(check_size("B", p->B, 1, INT64_MAX));
    LADDER_TRY(check_size("Hq", p->Hq, 1, INT64_MAX));
    LADDER_TRY(check_size("Hkv", p->Hkv, 1, INT64_MAX));
    LADDER_TRY(check_size("Sq", p->Sq, 1, INT64_MAX));
    LADDER_TRY(check_size("Sk", p->Sk, 1, INT64_MAX));
    LADDER_TRY(check_size("D", p->D, 1, LADDER_ATTN_MAX_HEAD_DIM));
    LADDER_TRY(check_size("Dv", p->Dv, 1, LADDER_ATTN_MAX_HEAD_DIM));
    if (p->Hq % p->Hkv != 0)
        return ladder_fail(LADDER_ERR_ARG, "Hkv is %lld but must divide Hq = %lld (query heads come in groups)",
                           (long long)p->Hkv, (long long)p->Hq);
    LADDER_TRY(check_float_option("scale", p->scale, "0: 1/sqrt(D)"));
    LADDER_TRY(check_float_option("softcap", p->softcap, "0: none"));
    LADDER_TRY(check_size("causal", p->mask.causal, LADDER_CAUSAL_NONE, LADDER_CAUSAL_TOP_LEFT));
    LADDER_TRY(check_size("window_left", p->mask.window_left, -1, INT64_MAX));
    LADDER_TRY(check_size("window_right", p->mask.window_right, -1, INT64_MAX));
    /* the largest tensor of the problem must be addressable: q, k, v, o and their gradients are no larger */
    const int64_t d = p->D > p->Dv ? p->D : p->Dv, rows = p->Sq > p->Sk ? p->Sq : p->Sk;
    const int64_t shape[4] = {p->B, p->Hq, rows, d};
    if (ladder_shape_bytes(LADDER_F32, 4, shape) < 0)
        return ladder_fail(LADDER_ERR_ARG, "B*Hq*max(Sq,Sk)*max(D,Dv) = %lld*%lld*%lld*%lld is too large to address",
                           (long long)p->B, (long long)p->Hq, (long long)rows, (long long)d);
    return LADDER_OK;
}

ladder_status ladder_attention_check_inputs(const ladder_attention_problem *p, const ladder_tensor *q,
                                            const ladder_tensor *k, const ladder_tensor *v,
                                            const ladder_tensor *cu_seqlens_q, const ladder_tensor *cu_seqlens_k) {
    const int64_t qs[4] = {p->B, p->Hq, p->Sq, p->D}, ks[4] = {p->B, p->Hkv, p->Sk, p->D},
                  vs[4] = {p->B, p->Hkv, p->Sk, p->Dv};
    LADDER_TRY(ladder_check_tensor(q, "q", 4, qs, "[B,Hq,Sq,D]"));
    LADDER_TRY(ladder_check_tensor(k, "k", 4, ks, "[B,Hkv,Sk,D]"));
    LADDER_TRY(ladder_check_tensor(v, "v", 4, vs, "[B,Hkv,Sk,Dv]"));
    const bool has_q = cu_seqlens_q->data != NULL, has_k = cu_seqlens_k->data != NULL;
    if (has_q != has_k)
        return ladder_fail(LADDER_ERR_ARG, "%s is given but %s is not: packed sequences need both",
                           has_q ? "cu_seqlens_q" : "cu_seqlens_k", has_q ? "cu_seqlens_k" : "cu_seqlens_q");
    if (!has_q) return LADDER_OK;
    if (p->B != 1)
        return ladder_fail(LADDER_ERR_ARG, "cu_seqlens_q/k are given, so B must be 1 (sequences packed along Sq and "
                                           "Sk), not %lld", (long long)p->B);
    return LADDER_OK;
}

ladder_status ladder_attention_check_seqlens(const ladder_attention_problem *p, const ladder_tensor *cu_seqlens_q,
                                             const ladder_tensor *cu_seqlens_k, bool on_device) {
    if (!cu_seqlens_q->data) return LADDER_OK;
    LADDER_TRY(ladder_check_cu_seqlens_named(cu_seqlens_q, "cu_seqlens_q", "Sq", p->Sq, on_device));
    LADDER_TRY(ladder_check_cu_seqlens_named(cu_seqlens_k, "cu_seqlens_k", "Sk", p->Sk, on_device));
    if (cu_seqlens_q->shape[0] != cu_seqlens_k->shape[0])
        return ladder_fail(LADDER_ERR_SHAPE, "cu_seqlens_q has %lld entries but cu_seqlens_k has %lld: one per "
                                             "sequence plus one, the same in both",
                           (long long)cu_seqlens_q->shape[0], (long long)cu_seqlens_k->shape[0]);
    return LADDER_OK;
}

double ladder_attention_fwd_bytes(const ladder_attention_problem *t, ladder_dtype dtype) {
    const double e = (double)ladder_dtype_size(dtype), rows = (double)t->B * (double)t->Sq;
    const double q = rows * (double)t->Hq * (double)t->D, o = rows * (double)t->Hq * (double)t->Dv;
    const double kv = (double)t->B * (double)t->Hkv * (double)t->Sk * (double)(t->D + t->Dv);
    return (q + kv + o) * e + rows * (double)t->Hq * 4.0;
}

double ladder_attention_bwd_bytes(const ladder_attention_problem *t, ladder_dtype dtype) {
    /* reads q, k, v, o, do, lse; writes dq, dk, dv: the forward's traffic twice, plus o and do once more */
    const double o = (double)t->B * (double)t->Sq * (double)t->Hq * (double)t->Dv * (double)ladder_dtype_size(dtype);
    return 2.0 * ladder_attention_fwd_bytes(t, dtype) + o;
}

double ladder_attention_visible_pairs(const ladder_attention_problem *p) {
    double pairs = 0;
    for (int64_t i = 0; i < p->Sq; i++) { /* one row at a time: Sq is at most a few hundred thousand */
        int64_t lo, hi;
        ladder_attn_key_range(&p->mask, i, p->Sq, p->Sk, &lo, &hi);
        if (hi > lo) pairs += (double)(hi - lo);
    }
    return pairs;
}

double ladder_attention_pair_flops(const ladder_attention_problem *p, double pairs) {
    return 2.0 * (double)p->B * (double)p->Hq * pairs * (double)(p->D + p->Dv);
}

double ladder_attention_fwd_flops(const ladder_attention_problem *p) {
    return ladder_attention_pair_flops(p, ladder_attention_visible_pairs(p));
}

double ladder_attention_bwd_flops(const ladder_attention_problem *p) { return 2.5 * ladder_attention_fwd_flops(p); }

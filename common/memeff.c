/* memeff dispatcher: validate once, here, then call the rung (see memeff.h). */
#include "memeff.h"

#include "attention_check.h"
#include "attention_tc_reference.h"
#include "check.h"
#include "memeff_rungs.h"

static const char *const dim_names[4] = {"B", "Hq", "Sq", "Sk"};

/* The sizes a bias broadcasts to: [B,Hq,Sq,Sk]. */
static void full_shape(const ladder_attention_problem *p, int64_t s[4]) {
    s[0] = p->B, s[1] = p->Hq, s[2] = p->Sq, s[3] = p->Sk;
}

/* Dropout, the Philox counter range and splits: the options flash does not have. */
static ladder_status check_options(const ladder_memeff_problem *p) {
    const ladder_attention_problem *t = &p->attn;
    /* the kernels compare against p as a float and scale by 1/(1 - p) in float: p must stay below 1 there too */
    if (!(p->dropout_p >= 0 && p->dropout_p < 1 && (float)p->dropout_p < 1.0f))
        return ladder_fail(LADDER_ERR_ARG, "dropout_p is %g but must be in [0, 1) (also once rounded to a float)",
                           p->dropout_p);
    if (p->dropout_p > 0) {
        /* every element draws output philox_offset + its index: the last one must not wrap past 2^64 */
        uint64_t n = (uint64_t)t->B, end;
        const bool wraps = __builtin_mul_overflow(n, (uint64_t)t->Hq, &n) ||
                           __builtin_mul_overflow(n, (uint64_t)t->Sq, &n) ||
                           __builtin_mul_overflow(n, (uint64_t)t->Sk, &n) ||
                           __builtin_add_overflow(p->philox_offset, n, &end);
        if (wraps)
            return ladder_fail(LADDER_ERR_ARG,
                               "philox_offset is %llu but philox_offset + B*Hq*Sq*Sk (%lld*%lld*%lld*%lld) must fit "
                               "in 64 bits: the dropout counter would wrap",
                               (unsigned long long)p->philox_offset, (long long)t->B, (long long)t->Hq,
                               (long long)t->Sq, (long long)t->Sk);
    }
    if (p->splits < 0 || p->splits > t->Sk)
        return ladder_fail(LADDER_ERR_ARG, "splits is %lld but must be in 0..Sk = %lld (0: automatic, 1: none)",
                           (long long)p->splits, (long long)t->Sk);
    return LADDER_OK;
}

/* The bias, when given: rank 4, each dimension the problem's size or 1 (any strides, 0 included). */
static ladder_status check_bias(const ladder_attention_problem *p, const ladder_tensor *bias) {
    if (!bias->data) return LADDER_OK;
    LADDER_TRY(ladder_tensor_check_layout(bias, "bias"));
    LADDER_TRY(ladder_check_aligned(bias, "bias"));
    int64_t full[4];
    full_shape(p, full);
    char got[96], want[96];
    ladder_tensor_shape_str(bias, got, sizeof got);
    const ladder_tensor f = ladder_tensor_make(NULL, bias->dtype, 4, full);
    ladder_tensor_shape_str(&f, want, sizeof want);
    if (bias->rank != 4)
        return ladder_fail(LADDER_ERR_SHAPE, "bias has shape %s but must have rank 4, broadcastable to %s ([B,Hq,Sq,Sk])",
                           got, want);
    for (int d = 0; d < 4; d++)
        if (bias->shape[d] != full[d] && bias->shape[d] != 1)
            return ladder_fail(LADDER_ERR_SHAPE,
                               "bias has shape %s but must broadcast to %s ([B,Hq,Sq,Sk]): dimension %d (%s) is %lld, "
                               "neither %lld nor 1",
                               got, want, d, dim_names[d], (long long)bias->shape[d], (long long)full[d]);
    return LADDER_OK;
}

/* dbias, when given: only with a bias, of the bias's shape, contiguous. */
static ladder_status check_dbias(const ladder_tensor *bias, const ladder_tensor *dbias) {
    if (!dbias->data) return LADDER_OK;
    if (!bias->data)
        return ladder_fail(LADDER_ERR_ARG, "dbias is given but bias is not: there is no bias to take the gradient of");
    LADDER_TRY(ladder_check_tensor(dbias, "dbias", 4, bias->shape, "the bias's shape"));
    return ladder_check_contiguous(dbias, "dbias");
}

static ladder_status check_problem(const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    if (!p) return ladder_fail(LADDER_ERR_ARG, "problem is null");
    if (!a) return ladder_fail(LADDER_ERR_ARG, "args is null");
    LADDER_TRY(ladder_attention_check_problem(&p->attn));
    LADDER_TRY(check_options(p));
    LADDER_TRY(ladder_attention_check_inputs(&p->attn, &a->q, &a->k, &a->v, &a->cu_seqlens_q, &a->cu_seqlens_k));
    return check_bias(&p->attn, &a->bias);
}

/* The tensor-core rung's TF32 kernels (f32 inputs) are compiled for head dims up to LADDER_MEMEFF_TF32_MAX_HEAD_DIM. */
static ladder_status check_tf32_head_dims(ladder_rung rung, const ladder_attention_problem *t, const ladder_tensor *q) {
    if (rung != LADDER_RUNG_GPU_TENSORCORE || q->dtype != LADDER_F32 ||
        (t->D <= LADDER_MEMEFF_TF32_MAX_HEAD_DIM && t->Dv <= LADDER_MEMEFF_TF32_MAX_HEAD_DIM))
        return LADDER_OK;
    return ladder_fail(LADDER_ERR_UNSUPPORTED,
                       "D = %lld and Dv = %lld, but rung gpu_tensorcore takes f32 inputs (its TF32 kernels) at head "
                       "dims up to %d; bf16 or f16 there, or rung gpu_tiled in f32, take up to %d",
                       (long long)t->D, (long long)t->Dv, LADDER_MEMEFF_TF32_MAX_HEAD_DIM, LADDER_ATTN_MAX_HEAD_DIM);
}

static ladder_status check_rung(ladder_rung rung, const ladder_memeff_problem *p, const ladder_memeff_args *a,
                                const memeff_fn *table) {
    return ladder_attention_check_rung(rung, &p->attn, table[rung] != NULL, &a->cu_seqlens_q, &a->cu_seqlens_k);
}

/* Everything ladder_memeff_fwd() checks before it calls rung @p rung. */
static ladder_status check_fwd(ladder_rung rung, const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    if ((unsigned)rung >= LADDER_RUNG_COUNT) return ladder_fail(LADDER_ERR_ARG, "rung %d is not a ladder_rung", rung);
    LADDER_TRY(check_problem(p, a));
    LADDER_TRY(ladder_attention_check_o_lse(&p->attn, &a->o, &a->lse));
    /* no output may share memory with an input (memeff.h): refused here, before anything is written */
    const ladder_tensor *ins[] = {&a->q, &a->k, &a->v, &a->cu_seqlens_q, &a->cu_seqlens_k, &a->bias},
                        *outs[] = {&a->o, &a->lse};
    const char *in_names[] = {"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "bias"}, *out_names[] = {"o", "lse"};
    LADDER_TRY(ladder_check_outputs_disjoint(outs, out_names, 2, ins, in_names, 6));
    const ladder_tensor *ts[] = {&a->q, &a->k, &a->v, &a->o, &a->bias}, *f32s[] = {&a->lse};
    const char *names[] = {"q", "k", "v", "o", "bias"}, *f32_names[] = {"lse"};
    LADDER_TRY(ladder_attention_check_dtypes("memeff", true, rung, ts, names, a->bias.data ? 5 : 4, f32s, f32_names,
                                             1));
    LADDER_TRY(check_tf32_head_dims(rung, &p->attn, &a->q));
    LADDER_TRY(check_rung(rung, p, a, memeff_fwd_rungs));
    ladder_clear_error();
    return LADDER_OK;
}

ladder_status ladder_memeff_fwd(ladder_rung rung, const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    LADDER_TRY(check_fwd(rung, p, a));
    return memeff_fwd_rungs[rung](p, a);
}

/* memeff's tensors and hooks as the tensor-core reference takes them. */
static ladder_attn_tc_reference_args reference_args(const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    return (ladder_attn_tc_reference_args){LADDER_ATTN_TC_REFERENCE_TENSORS(a),
                                           .bias = a->bias,
                                           .dbias = a->dbias,
                                           .dropout_p = p->dropout_p,
                                           .philox_seed = p->philox_seed,
                                           .philox_offset = p->philox_offset};
}

ladder_status memeff_fwd_emulating(const ladder_memeff_problem *p, const ladder_memeff_args *a, ladder_dtype round) {
    LADDER_TRY(check_fwd(LADDER_RUNG_CPU, p, a));
    const ladder_attn_tc_reference_args ra = reference_args(p, a);
    return ladder_attn_tc_reference_fwd(&p->attn, &ra, round);
}

/* Everything ladder_memeff_bwd() checks before it calls rung @p rung. */
static ladder_status check_bwd(ladder_rung rung, const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    if ((unsigned)rung >= LADDER_RUNG_COUNT) return ladder_fail(LADDER_ERR_ARG, "rung %d is not a ladder_rung", rung);
    LADDER_TRY(check_problem(p, a));
    const ladder_attention_problem *t = &p->attn;
    LADDER_TRY(ladder_attention_check_o_lse(t, &a->o, &a->lse));
    LADDER_TRY(ladder_attention_check_grads(t, &a->dout, &a->dlse, &a->dq, &a->dk, &a->dv));
    LADDER_TRY(check_dbias(&a->bias, &a->dbias));
    /* o and lse, the forward's outputs, overlap no input and not each other; the gradients overlap no input at all */
    const ladder_tensor *ins[] = {&a->q,    &a->k,    &a->v,   &a->cu_seqlens_q, &a->cu_seqlens_k,
                                  &a->bias, &a->dout, &a->dlse, &a->lse,         &a->o};
    const char *in_names[] = {"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "bias", "do", "dlse", "lse", "o"};
    const ladder_tensor *outs[] = {&a->dq, &a->dk, &a->dv, &a->dbias}, *fwd_outs[] = {&a->lse, &a->o};
    const char *out_names[] = {"dq", "dk", "dv", "dbias"}, *fwd_out_names[] = {"lse", "o"};
    LADDER_TRY(ladder_check_outputs_disjoint(fwd_outs, fwd_out_names, 2, ins, in_names, 8));
    LADDER_TRY(ladder_check_outputs_disjoint(outs, out_names, 4, ins, in_names, 10));
    /* the optional bias and dbias go last, so that only the present ones are listed */
    const ladder_tensor *ts[] = {&a->q, &a->k, &a->v, &a->o, &a->dout, &a->dq, &a->dk, &a->dv, &a->bias, &a->dbias};
    const ladder_tensor *f32s[] = {&a->lse, &a->dlse};
    const char *names[] = {"q", "k", "v", "o", "do", "dq", "dk", "dv", "bias", "dbias"}, *f32_names[] = {"lse", "dlse"};
    LADDER_TRY(ladder_attention_check_dtypes("memeff", true, rung, ts, names,
                                             8 + (a->bias.data != NULL) + (a->dbias.data != NULL), f32s, f32_names, 2));
    LADDER_TRY(check_tf32_head_dims(rung, t, &a->q));
    LADDER_TRY(check_rung(rung, p, a, memeff_bwd_rungs));
    ladder_clear_error();
    return LADDER_OK;
}

ladder_status ladder_memeff_bwd(ladder_rung rung, const ladder_memeff_problem *p, const ladder_memeff_args *a) {
    LADDER_TRY(check_bwd(rung, p, a));
    return memeff_bwd_rungs[rung](p, a);
}

ladder_status memeff_bwd_emulating(const ladder_memeff_problem *p, const ladder_memeff_args *a, ladder_dtype round) {
    LADDER_TRY(check_bwd(LADDER_RUNG_CPU, p, a));
    const ladder_attn_tc_reference_args ra = reference_args(p, a);
    return ladder_attn_tc_reference_bwd(&p->attn, &ra, round);
}

memeff_bias memeff_bias_of(const ladder_memeff_args *a) {
    memeff_bias b = {.data = a->bias.data};
    for (int d = 0; d < 4 && b.data; d++) b.s[d] = a->bias.shape[d] == 1 ? 0 : a->bias.strides[d];
    return b;
}

double ladder_memeff_fwd_bytes(const ladder_memeff_problem *p, ladder_dtype dtype, double bias_elems) {
    return ladder_attention_fwd_bytes(&p->attn, dtype) + bias_elems * (double)ladder_dtype_size(dtype);
}

double ladder_memeff_bwd_bytes(const ladder_memeff_problem *p, ladder_dtype dtype, double bias_elems,
                               double dbias_elems) {
    /* attention's backward traffic, then the bias read and dbias written once each */
    return ladder_attention_bwd_bytes(&p->attn, dtype) + (bias_elems + dbias_elems) * (double)ladder_dtype_size(dtype);
}

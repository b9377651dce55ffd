/* flash dispatcher: validate once, here, then call the rung (see flash.h). */
#include "flash.h"

#include "attention_check.h"
#include "attention_tc_reference.h"
#include "check.h"
#include "flash_rungs.h"

static ladder_status check_problem(const ladder_flash_problem *p, const ladder_flash_args *a) {
    if (!p) return ladder_fail(LADDER_ERR_ARG, "problem is null");
    if (!a) return ladder_fail(LADDER_ERR_ARG, "args is null");
    LADDER_TRY(ladder_attention_check_problem(&p->attn));
    return ladder_attention_check_inputs(&p->attn, &a->q, &a->k, &a->v, &a->cu_seqlens_q, &a->cu_seqlens_k);
}

static ladder_status check_rung(ladder_rung rung, const ladder_flash_problem *p, const ladder_flash_args *a,
                                const flash_fn *table) {
    return ladder_attention_check_rung(rung, &p->attn, table[rung] != NULL, &a->cu_seqlens_q, &a->cu_seqlens_k);
}

/* Everything ladder_flash_fwd() checks before it calls rung @p rung. */
static ladder_status check_fwd(ladder_rung rung, const ladder_flash_problem *p, const ladder_flash_args *a) {
    if ((unsigned)rung >= LADDER_RUNG_COUNT) return ladder_fail(LADDER_ERR_ARG, "rung %d is not a ladder_rung", rung);
    LADDER_TRY(check_problem(p, a));
    LADDER_TRY(ladder_attention_check_o_lse(&p->attn, &a->o, &a->lse));
    /* no output may share memory with an input (flash.h): refused here, before anything is written */
    const ladder_tensor *ins[] = {&a->q, &a->k, &a->v, &a->cu_seqlens_q, &a->cu_seqlens_k}, *outs[] = {&a->o, &a->lse};
    const char *in_names[] = {"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k"}, *out_names[] = {"o", "lse"};
    LADDER_TRY(ladder_check_outputs_disjoint(outs, out_names, 2, ins, in_names, 5));
    const ladder_tensor *ts[] = {&a->q, &a->k, &a->v, &a->o}, *f32s[] = {&a->lse};
    const char *names[] = {"q", "k", "v", "o"}, *f32_names[] = {"lse"};
    LADDER_TRY(ladder_attention_check_dtypes("flash", false, rung, ts, names, 4, f32s, f32_names, 1));
    LADDER_TRY(check_rung(rung, p, a, flash_fwd_rungs));
    ladder_clear_error();
    return LADDER_OK;
}

ladder_status ladder_flash_fwd(ladder_rung rung, const ladder_flash_problem *p, const ladder_flash_args *a) {
    LADDER_TRY(check_fwd(rung, p, a));
    return flash_fwd_rungs[rung](p, a);
}

ladder_status flash_fwd_emulating(const ladder_flash_problem *p, const ladder_flash_args *a, ladder_dtype round) {
    LADDER_TRY(check_fwd(LADDER_RUNG_CPU, p, a));
    const ladder_attn_tc_reference_args ra = {LADDER_ATTN_TC_REFERENCE_TENSORS(a)}; /* no bias, no dropout */
    return ladder_attn_tc_reference_fwd(&p->attn, &ra, round);
}

/* Everything ladder_flash_bwd() checks before it calls rung @p rung. */
static ladder_status check_bwd(ladder_rung rung, const ladder_flash_problem *p, const ladder_flash_args *a) {
    if ((unsigned)rung >= LADDER_RUNG_COUNT) return ladder_fail(LADDER_ERR_ARG, "rung %d is not a ladder_rung", rung);
    LADDER_TRY(check_problem(p, a));
    const ladder_attention_problem *t = &p->attn;
    LADDER_TRY(ladder_attention_check_o_lse(t, &a->o, &a->lse));
    LADDER_TRY(ladder_attention_check_grads(t, &a->dout, &a->dlse, &a->dq, &a->dk, &a->dv));
    /* o and lse, the forward's outputs, overlap no input and not each other; the gradients overlap no input at all */
    const ladder_tensor *ins[] = {&a->q,    &a->k,    &a->v, &a->cu_seqlens_q, &a->cu_seqlens_k,
                                  &a->dout, &a->dlse, &a->lse, &a->o};
    const char *in_names[] = {"q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "do", "dlse", "lse", "o"};
    const ladder_tensor *outs[] = {&a->dq, &a->dk, &a->dv}, *fwd_outs[] = {&a->lse, &a->o};
    const char *out_names[] = {"dq", "dk", "dv"}, *fwd_out_names[] = {"lse", "o"};
    LADDER_TRY(ladder_check_outputs_disjoint(fwd_outs, fwd_out_names, 2, ins, in_names, 7));
    LADDER_TRY(ladder_check_outputs_disjoint(outs, out_names, 3, ins, in_names, 9));
    const ladder_tensor *ts[] = {&a->q, &a->k, &a->v, &a->o, &a->dout, &a->dq, &a->dk, &a->dv};
    const ladder_tensor *f32s[] = {&a->lse, &a->dlse};
    const char *names[] = {"q", "k", "v", "o", "do", "dq", "dk", "dv"}, *f32_names[] = {"lse", "dlse"};
    LADDER_TRY(ladder_attention_check_dtypes("flash", false, rung, ts, names, 8, f32s, f32_names, 2));
    LADDER_TRY(check_rung(rung, p, a, flash_bwd_rungs));
    ladder_clear_error();
    return LADDER_OK;
}

ladder_status ladder_flash_bwd(ladder_rung rung, const ladder_flash_problem *p, const ladder_flash_args *a) {
    LADDER_TRY(check_bwd(rung, p, a));
    return flash_bwd_rungs[rung](p, a);
}

ladder_status flash_bwd_emulating(const ladder_flash_problem *p, const ladder_flash_args *a, ladder_dtype round) {
    LADDER_TRY(check_bwd(LADDER_RUNG_CPU, p, a));
    const ladder_attn_tc_reference_args ra = {LADDER_ATTN_TC_REFERENCE_TENSORS(a)};
    return ladder_attn_tc_reference_bwd(&p->attn, &ra, round);
}

double ladder_flash_fwd_bytes(const ladder_flash_problem *p, ladder_dtype dtype) {
    return ladder_attention_fwd_bytes(&p->attn, dtype);
}

double ladder_flash_bwd_bytes(const ladder_flash_problem *p, ladder_dtype dtype) {
    return ladder_attention_bwd_bytes(&p->attn, dtype);
}

/* What every attention dispatcher checks once the problem is sound (see attention_check.h). */
#include "attention_check.h"

#include "check.h"

ladder_status ladder_attention_check_o_lse(const ladder_attention_problem *p, const ladder_tensor *o,
                                           const ladder_tensor *lse) {
    const int64_t os[4] = {p->B, p->Hq, p->Sq, p->Dv}, ls[3] = {p->B, p->Hq, p->Sq};
    LADDER_TRY(ladder_check_tensor(o, "o", 4, os, "[B,Hq,Sq,Dv]"));
    LADDER_TRY(ladder_check_tensor(lse, "lse", 3, ls, "[B,Hq,Sq]"));
    LADDER_TRY(ladder_check_contiguous(o, "o"));
    return ladder_check_contiguous(lse, "lse");
}

ladder_status ladder_attention_check_grads(const ladder_attention_problem *t, const ladder_tensor *dout,
                                           const ladder_tensor *dlse, const ladder_tensor *dq, const ladder_tensor *dk,
                                           const ladder_tensor *dv) {
    const int64_t os[4] = {t->B, t->Hq, t->Sq, t->Dv}, ls[3] = {t->B, t->Hq, t->Sq};
    const int64_t qs[4] = {t->B, t->Hq, t->Sq, t->D}, ks[4] = {t->B, t->Hkv, t->Sk, t->D},
                  vs[4] = {t->B, t->Hkv, t->Sk, t->Dv};
    LADDER_TRY(ladder_check_tensor(dout, "do", 4, os, "[B,Hq,Sq,Dv]"));
    if (dlse->data) LADDER_TRY(ladder_check_tensor(dlse, "dlse", 3, ls, "[B,Hq,Sq]"));
    LADDER_TRY(ladder_check_tensor(dq, "dq", 4, qs, "[B,Hq,Sq,D]"));
    LADDER_TRY(ladder_check_tensor(dk, "dk", 4, ks, "[B,Hkv,Sk,D]"));
    LADDER_TRY(ladder_check_tensor(dv, "dv", 4, vs, "[B,Hkv,Sk,Dv]"));
    LADDER_TRY(ladder_check_contiguous(dq, "dq"));
    LADDER_TRY(ladder_check_contiguous(dk, "dk"));
    return ladder_check_contiguous(dv, "dv");
}

ladder_status ladder_attention_check_dtypes(const char *algo, bool tc_f32, ladder_rung rung,
                                            const ladder_tensor *const *ts, const char *const *names, int n,
                                            const ladder_tensor *const *f32s, const char *const *f32_names,
                                            int n_f32) {
    ladder_dtype want = LADDER_F32;
    if (rung == LADDER_RUNG_GPU_TENSORCORE) {
        want = ts[0]->dtype;
        if (want == LADDER_F32 && !tc_f32)
            return ladder_fail(LADDER_ERR_UNSUPPORTED,
                               "rung gpu_tensorcore takes %s as bf16 or f16, not f32: %s has no f32 (TF32) kernels "
                               "at that rung",
                               names[0], algo);
        if (want != LADDER_BF16 && want != LADDER_F16 && want != LADDER_F32)
            return ladder_fail(LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes %s as %s, not %s", names[0],
                               tc_f32 ? "bf16, f16 or f32" : "bf16 or f16", ladder_dtype_name(want));
    }
    for (int i = 0; i < n; i++) LADDER_TRY(ladder_check_dtype(ts[i], names[i], want, rung));
    for (int i = 0; i < n_f32; i++)
        if (f32s[i]->data) LADDER_TRY(ladder_check_dtype(f32s[i], f32_names[i], LADDER_F32, rung));
    return LADDER_OK;
}

/* Largest grid y and z of a launch: the GPU rungs put heads on y and batch rows on z. */
#define GRID_YZ_MAX 65535

ladder_status ladder_attention_check_rung(ladder_rung rung, const ladder_attention_problem *p, bool built,
                                          const ladder_tensor *cu_seqlens_q, const ladder_tensor *cu_seqlens_k) {
    if (ladder_rung_is_gpu(rung) && (p->Hq > GRID_YZ_MAX || p->B > GRID_YZ_MAX))
        return ladder_fail(LADDER_ERR_UNSUPPORTED,
                           "Hq = %lld and B = %lld, but the GPU rungs launch one grid row per head and per batch "
                           "row, at most %d each",
                           (long long)p->Hq, (long long)p->B, GRID_YZ_MAX);
    LADDER_TRY(ladder_rung_available(rung));
    if (!built) return ladder_fail(LADDER_ERR_UNAVAILABLE, "rung %s was not built", ladder_rung_name(rung));
    return ladder_attention_check_seqlens(p, cu_seqlens_q, cu_seqlens_k, ladder_rung_is_gpu(rung));
}

/* dynconv dispatcher: validate once, here, then call the rung (see dynconv.h). */
#include "dynconv.h"

#include "check.h"
#include "dynconv_rungs.h"

/* Shapes and sizes: everything that needs no dtype and no data access. */
static ladder_status check_problem(const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    if (!p) return ladder_fail(LADDER_ERR_ARG, "problem is null");
    if (!a) return ladder_fail(LADDER_ERR_ARG, "args is null");
    if (p->B <= 0) return ladder_fail(LADDER_ERR_ARG, "B is %lld but must be >= 1", (long long)p->B);
    if (p->T <= 0) return ladder_fail(LADDER_ERR_ARG, "T is %lld but must be >= 1", (long long)p->T);
    if (p->D <= 0) return ladder_fail(LADDER_ERR_ARG, "D is %lld but must be >= 1", (long long)p->D);
    if (p->W < 1 || p->W > LADDER_DYNCONV_MAX_W)
        return ladder_fail(LADDER_ERR_ARG, "W is %d but must be in 1..%d", p->W, LADDER_DYNCONV_MAX_W);
    int64_t sizes[4] = {p->B, p->T, p->D, p->W};
    if (ladder_shape_bytes(LADDER_F32, 4, sizes) < 0)
        return ladder_fail(LADDER_ERR_ARG, "B*T*D*W = %lld*%lld*%lld*%d elements is too large to address",
                           (long long)p->B, (long long)p->T, (long long)p->D, p->W);
    if (a->cu_seqlens.data && p->B != 1)
        return ladder_fail(LADDER_ERR_ARG, "cu_seqlens is given, so B must be 1 (sequences packed along T), not %lld",
                           (long long)p->B);
    int64_t btd[3] = {p->B, p->T, p->D}, btdw[4] = {p->B, p->T, p->D, p->W};
    LADDER_TRY(ladder_check_tensor(&a->x, "x", 3, btd, "[B,T,D]"));
    LADDER_TRY(ladder_check_tensor(&a->kernels, "kernels", 4, btdw, "[B,T,D,W]"));
    return LADDER_OK;
}

/* The dtypes each rung takes (the table in dynconv.h). */
static ladder_status check_dtypes(ladder_rung rung, const ladder_tensor *const *ts, const char *const *names, int n) {
    ladder_dtype want = LADDER_F32;
    if (rung == LADDER_RUNG_GPU_TENSORCORE) {
        want = ts[0]->dtype;
        if (want != LADDER_BF16 && want != LADDER_F16)
            return ladder_fail(LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes %s as bf16 or f16, not %s%s",
                               names[0], ladder_dtype_name(want),
                               want == LADDER_F32 ? ": dynconv has no f32 (TF32) kernels at that rung" : "");
    }
    for (int i = 0; i < n; i++) LADDER_TRY(ladder_check_dtype(ts[i], names[i], want, rung));
    return LADDER_OK;
}

static ladder_status check_rung(ladder_rung rung, const ladder_dynconv_problem *p, const ladder_dynconv_args *a,
                                const dynconv_fn *table) {
    LADDER_TRY(ladder_rung_available(rung));
    if (!table[rung]) return ladder_fail(LADDER_ERR_UNAVAILABLE, "rung %s was not built", ladder_rung_name(rung));
    if (a->cu_seqlens.data) LADDER_TRY(ladder_check_cu_seqlens(&a->cu_seqlens, p->T, ladder_rung_is_gpu(rung)));
    return LADDER_OK;
}

ladder_status ladder_dynconv_fwd(ladder_rung rung, const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    if ((unsigned)rung >= LADDER_RUNG_COUNT) return ladder_fail(LADDER_ERR_ARG, "rung %d is not a ladder_rung", rung);
    LADDER_TRY(check_problem(p, a));
    int64_t btd[3] = {p->B, p->T, p->D};
    LADDER_TRY(ladder_check_tensor(&a->out, "out", 3, btd, "[B,T,D]"));
    LADDER_TRY(ladder_check_contiguous(&a->out, "out"));
    /* no output may share memory with an input (dynconv.h): refused here, before anything is written */
    const ladder_tensor *ins[] = {&a->x, &a->kernels, &a->cu_seqlens}, *outs[] = {&a->out};
    const char *in_names[] = {"x", "kernels", "cu_seqlens"}, *out_names[] = {"out"};
    LADDER_TRY(ladder_check_outputs_disjoint(outs, out_names, 1, ins, in_names, 3));
    const ladder_tensor *ts[] = {&a->x, &a->kernels, &a->out};
    const char *names[] = {"x", "kernels", "out"};
    LADDER_TRY(check_dtypes(rung, ts, names, 3));
    LADDER_TRY(check_rung(rung, p, a, dynconv_fwd_rungs));
    ladder_clear_error();
    return dynconv_fwd_rungs[rung](p, a);
}

ladder_status ladder_dynconv_bwd(ladder_rung rung, const ladder_dynconv_problem *p, const ladder_dynconv_args *a) {
    if ((unsigned)rung >= LADDER_RUNG_COUNT) return ladder_fail(LADDER_ERR_ARG, "rung %d is not a ladder_rung", rung);
    LADDER_TRY(check_problem(p, a));
    int64_t btd[3] = {p->B, p->T, p->D}, btdw[4] = {p->B, p->T, p->D, p->W};
    LADDER_TRY(ladder_check_tensor(&a->dout, "dout", 3, btd, "[B,T,D]"));
    LADDER_TRY(ladder_check_tensor(&a->dx, "dx", 3, btd, "[B,T,D]"));
    LADDER_TRY(ladder_check_tensor(&a->dkernels, "dkernels", 4, btdw, "[B,T,D,W]"));
    LADDER_TRY(ladder_check_contiguous(&a->dx, "dx"));
    LADDER_TRY(ladder_check_contiguous(&a->dkernels, "dkernels"));
    const ladder_tensor *ins[] = {&a->x, &a->kernels, &a->cu_seqlens, &a->dout}, *outs[] = {&a->dx, &a->dkernels};
    const char *in_names[] = {"x", "kernels", "cu_seqlens", "dout"}, *out_names[] = {"dx", "dkernels"};
    LADDER_TRY(ladder_check_outputs_disjoint(outs, out_names, 2, ins, in_names, 4));
    const ladder_tensor *ts[] = {&a->x, &a->kernels, &a->dout, &a->dx, &a->dkernels};
    const char *names[] = {"x", "kernels", "dout", "dx", "dkernels"};
    LADDER_TRY(check_dtypes(rung, ts, names, 5));
    LADDER_TRY(check_rung(rung, p, a, dynconv_bwd_rungs));
    ladder_clear_error();
    return dynconv_bwd_rungs[rung](p, a);
}

double ladder_dynconv_fwd_bytes(const ladder_dynconv_problem *p, ladder_dtype dtype) {
    return (double)(p->W + 2) * (double)p->B * (double)p->T * (double)p->D * (double)ladder_dtype_size(dtype);
}

double ladder_dynconv_bwd_bytes(const ladder_dynconv_problem *p, ladder_dtype dtype) {
    return (double)(2 * p->W + 3) * (double)p->B * (double)p->T * (double)p->D * (double)ladder_dtype_size(dtype);
}

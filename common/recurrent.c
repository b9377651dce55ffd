/* recurrent dispatcher: validate once, here, then call the rung (see recurrent.h). */
#include "recurrent.h"

#include <float.h>
#include <math.h>
#include <stddef.h>

#include "check.h"
#include "recurrent_rungs.h"

double ladder_recurrent_scale(const ladder_recurrent_problem *p) {
    return p->scale != 0 ? p->scale : 1.0 / sqrt((double)p->K);
}

/* A tensor of the call: where it is in args, its name, its shape as dims, and whether it is a 16-bit one. */
typedef struct spec {
    size_t offset;
    const char *name;
    const char *dims; /* "BTHK": each letter a size of the problem (N: the number of sequences) */
    bool half;        /* bf16/f16 at the tensor-core rung (q, k, v, do, o, dq, dk, dv); f32 otherwise */
} spec;

#define A(field) offsetof(ladder_recurrent_args, field)
/* the inputs every pass reads, then the optional ones */
static const spec INPUTS[] = {
    {A(q), "q", "BTHK", true},     {A(k), "k", "BTHK", true},        {A(v), "v", "BTHV", true},
    {A(g), "g", "BTH", false},     {A(g_gamma), "g_gamma", "H", false}, {A(gk), "gk", "BTHK", false},
    {A(gv), "gv", "BTHV", false},  {A(h0), "h0", "NHKV", false},
};
enum { N_REQUIRED_INPUTS = 3, N_INPUTS = sizeof INPUTS / sizeof INPUTS[0] };
static const spec FWD_OUTPUTS[] = {{A(o), "o", "BTHV", true}, {A(ht), "ht", "NHKV", false}};
static const spec BWD_INPUTS[] = {{A(do_), "do", "BTHV", true}, {A(dht), "dht", "NHKV", false}};
/* dq, dk, dv, then the gradient of INPUTS[i] at BWD_OUTPUTS[i] for the optional inputs */
static const spec BWD_OUTPUTS[] = {
    {A(dq), "dq", "BTHK", true},  {A(dk), "dk", "BTHK", true},         {A(dv), "dv", "BTHV", true},
    {A(dg), "dg", "BTH", false},  {A(dg_gamma), "dg_gamma", "H", false}, {A(dgk), "dgk", "BTHK", false},
    {A(dgv), "dgv", "BTHV", false}, {A(dh0), "dh0", "NHKV", false},
};
#undef A

static const ladder_tensor *tensor_of(const ladder_recurrent_args *a, const spec *s) {
    return (const ladder_tensor *)((const char *)a + s->offset);
}

/* The shape a spec names, e.g. "BTHK" -> {B,T,H,K}; returns the rank. */
static int shape_of(const spec *s, const ladder_recurrent_problem *p, int64_t N, int64_t *shape, char *dims) {
    int rank = 0, used = 0;
    dims[used++] = '[';
    for (const char *c = s->dims; *c; c++) {
        shape[rank++] = *c == 'B'   ? p->B
                        : *c == 'T' ? p->T
                        : *c == 'H' ? p->H
                        : *c == 'K' ? p->K
                        : *c == 'V' ? p->V
                                    : N;
        if (used > 1) dims[used++] = ',';
        dims[used++] = *c;
    }
    dims[used++] = ']';
    dims[used] = '\0';
    return rank;
}

/* Present (or, unless @p required, absent) with the shape the problem gives it; outputs also contiguous. */
static ladder_status check_spec(const ladder_recurrent_args *a, const spec *s, const ladder_recurrent_problem *p,
                                int64_t N, bool required, bool output) {
    const ladder_tensor *t = tensor_of(a, s);
    if (!t->data && !required) return LADDER_OK;
    int64_t shape[LADDER_MAX_RANK];
    char dims[16];
    int rank = shape_of(s, p, N, shape, dims);
    LADDER_TRY(ladder_check_tensor(t, s->name, rank, shape, dims));
    return output ? ladder_check_contiguous(t, s->name) : LADDER_OK;
}

/* Sizes, scale, cu_seqlens' shape, and every input's shape; sets *N, the number of sequences. */
static ladder_status check_problem(const ladder_recurrent_problem *p, const ladder_recurrent_args *a, int64_t *N) {
    if (!p) return ladder_fail(LADDER_ERR_ARG, "problem is null");
    if (!a) return ladder_fail(LADDER_ERR_ARG, "args is null");
    const struct {
        const char *name;
        int64_t value, hi;
    } sizes[] = {{"B", p->B, INT64_MAX}, {"T", p->T, INT64_MAX}, {"H", p->H, INT64_MAX},
                 {"K", p->K, LADDER_RECURRENT_MAX_KV}, {"V", p->V, LADDER_RECURRENT_MAX_KV}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].value < 1)
            return ladder_fail(LADDER_ERR_ARG, "%s is %lld but must be >= 1", sizes[i].name, (long long)sizes[i].value);
        if (sizes[i].value > sizes[i].hi)
            return ladder_fail(LADDER_ERR_ARG, "%s is %lld but must be in 1..%lld", sizes[i].name,
                               (long long)sizes[i].value, (long long)sizes[i].hi);
    }
    /* every rung multiplies by the scale as a float: a double such as 1e39 is finite but its float is not, and one
     * such as 1e-50 is not 0 but its float is (every output would be 0) */
    const double scale = fabs(ladder_recurrent_scale(p));
    if (!(scale <= FLT_MAX && scale >= FLT_MIN))
        return ladder_fail(LADDER_ERR_ARG,
                           "scale is %g but must be 0 (1/sqrt(K)) or have |scale| in %g..%g, the range of a float",
                           p->scale, (double)FLT_MIN, (double)FLT_MAX);
    int64_t bthkv[4] = {p->B, p->T, p->H, p->K > p->V ? p->K : p->V};
    if (ladder_shape_bytes(LADDER_F32, 4, bthkv) < 0)
        return ladder_fail(LADDER_ERR_ARG, "B*T*H*max(K,V) = %lld*%lld*%lld*%lld elements is too large to address",
                           (long long)p->B, (long long)p->T, (long long)p->H, (long long)bthkv[3]);
    *N = p->B;
    const ladder_tensor *cu = &a->cu_seqlens;
    if (cu->data) {
        if (p->B != 1)
            return ladder_fail(LADDER_ERR_ARG,
                               "cu_seqlens is given, so B must be 1 (sequences packed along T), not %lld",
                               (long long)p->B);
        LADDER_TRY(ladder_tensor_check_layout(cu, "cu_seqlens"));
        if (cu->rank != 1 || cu->shape[0] < 2)
            return ladder_fail(LADDER_ERR_ARG, "cu_seqlens must have shape [N+1] with N >= 1 sequences");
        *N = cu->shape[0] - 1;
    }
    int64_t nhkv[4] = {*N, p->H, p->K, p->V};
    if (ladder_shape_bytes(LADDER_F32, 4, nhkv) < 0)
        return ladder_fail(LADDER_ERR_ARG, "the states, N*H*K*V = %lld*%lld*%lld*%lld elements, are too large",
                           (long long)*N, (long long)p->H, (long long)p->K, (long long)p->V);
    for (int i = 0; i < N_INPUTS; i++) LADDER_TRY(check_spec(a, &INPUTS[i], p, *N, i < N_REQUIRED_INPUTS, false));
    return LADDER_OK;
}

/* Gather the tensors of a pass (absent ones included: the shared checks skip them). */
typedef struct tensor_list {
    const ladder_tensor *t[24];
    const char *name[24];
    bool half[24];
    int n;
} tensor_list;

static void add(tensor_list *l, const ladder_recurrent_args *a, const spec *specs, int n) {
    for (int i = 0; i < n; i++) {
        l->t[l->n] = tensor_of(a, &specs[i]);
        l->name[l->n] = specs[i].name;
        l->half[l->n++] = specs[i].half;
    }
}

/* The dtypes each rung takes (the table in recurrent.h): everything f32, but q's dtype (bf16/f16) for the
 * 16-bit tensors at the tensor-core rung. */
static ladder_status check_dtypes(ladder_rung rung, const tensor_list *ins, const tensor_list *outs,
                                  const ladder_tensor *cu_seqlens) {
    ladder_dtype half = LADDER_F32;
    if (rung == LADDER_RUNG_GPU_TENSORCORE) {
        half = ins->t[0]->dtype;
        if (half != LADDER_BF16 && half != LADDER_F16)
            return ladder_fail(LADDER_ERR_UNSUPPORTED, "rung gpu_tensorcore takes q as bf16 or f16, not %s%s",
                               ladder_dtype_name(half),
                               half == LADDER_F32 ? ": recurrent has no f32 (TF32) kernels at that rung" : "");
    }
    const tensor_list *lists[2] = {ins, outs};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < lists[l]->n; i++)
            if (lists[l]->t[i]->data && lists[l]->t[i] != cu_seqlens) /* the index tensor: checked apart */
                LADDER_TRY(ladder_check_dtype(lists[l]->t[i], lists[l]->name[i], lists[l]->half[i] ? half : LADDER_F32,
                                              rung));
    return LADDER_OK;
}

/* Disjoint outputs, dtypes, then the rung itself and cu_seqlens' contents (which may need the device). */
static ladder_status check_call(ladder_rung rung, const ladder_recurrent_problem *p, const ladder_recurrent_args *a,
                                const tensor_list *ins, const tensor_list *outs, const recurrent_fn *table) {
    LADDER_TRY(ladder_check_outputs_disjoint(outs->t, outs->name, outs->n, ins->t, ins->name, ins->n));
    LADDER_TRY(check_dtypes(rung, ins, outs, &a->cu_seqlens));
    if (a->cu_seqlens.data) {
        if (a->cu_seqlens.dtype != LADDER_I32)
            return ladder_fail(LADDER_ERR_ARG, "cu_seqlens must be i32, not %s",
                               ladder_dtype_name(a->cu_seqlens.dtype));
    }
    LADDER_TRY(ladder_rung_available(rung));
    if (!table[rung]) return ladder_fail(LADDER_ERR_UNAVAILABLE, "rung %s was not built", ladder_rung_name(rung));
    if (a->cu_seqlens.data) LADDER_TRY(ladder_check_cu_seqlens(&a->cu_seqlens, p->T, ladder_rung_is_gpu(rung)));
    return LADDER_OK;
}

static ladder_status check_rung_number(ladder_rung rung) {
    if ((unsigned)rung >= LADDER_RUNG_COUNT) return ladder_fail(LADDER_ERR_ARG, "rung %d is not a ladder_rung", rung);
    return LADDER_OK;
}

ladder_status ladder_recurrent_fwd(ladder_rung rung, const ladder_recurrent_problem *p,
                                   const ladder_recurrent_args *a) {
    int64_t N;
    LADDER_TRY(check_rung_number(rung));
    LADDER_TRY(check_problem(p, a, &N));
    LADDER_TRY(check_spec(a, &FWD_OUTPUTS[0], p, N, true, true));
    LADDER_TRY(check_spec(a, &FWD_OUTPUTS[1], p, N, false, true));
    tensor_list ins = {.n = 0}, outs = {.n = 0};
    add(&ins, a, INPUTS, N_INPUTS);
    ins.t[ins.n] = &a->cu_seqlens, ins.name[ins.n] = "cu_seqlens", ins.half[ins.n++] = false;
    add(&outs, a, FWD_OUTPUTS, 2);
    LADDER_TRY(check_call(rung, p, a, &ins, &outs, recurrent_fwd_rungs));
    ladder_clear_error();
    return recurrent_fwd_rungs[rung](p, a);
}

ladder_status ladder_recurrent_bwd(ladder_rung rung, const ladder_recurrent_problem *p,
                                   const ladder_recurrent_args *a) {
    int64_t N;
    LADDER_TRY(check_rung_number(rung));
    LADDER_TRY(check_problem(p, a, &N));
    LADDER_TRY(check_spec(a, &BWD_INPUTS[0], p, N, true, false));
    LADDER_TRY(check_spec(a, &BWD_INPUTS[1], p, N, false, false));
    for (int i = 0; i < N_INPUTS; i++) {
        const spec *grad = &BWD_OUTPUTS[i];
        bool given = tensor_of(a, &INPUTS[i])->data != NULL, wanted = tensor_of(a, grad)->data != NULL;
        if (given && !wanted)
            return ladder_fail(LADDER_ERR_ARG, "%s is null, but %s was given and its gradient is always written",
                               grad->name, INPUTS[i].name);
        if (!given && wanted)
            return ladder_fail(LADDER_ERR_ARG, "%s is given, but %s is not: there is no gradient to write", grad->name,
                               INPUTS[i].name);
        LADDER_TRY(check_spec(a, grad, p, N, given, true));
    }
    tensor_list ins = {.n = 0}, outs = {.n = 0};
    add(&ins, a, INPUTS, N_INPUTS);
    ins.t[ins.n] = &a->cu_seqlens, ins.name[ins.n] = "cu_seqlens", ins.half[ins.n++] = false;
    add(&ins, a, BWD_INPUTS, 2);
    add(&outs, a, BWD_OUTPUTS, N_INPUTS);
    LADDER_TRY(check_call(rung, p, a, &ins, &outs, recurrent_bwd_rungs));
    ladder_clear_error();
    return recurrent_bwd_rungs[rung](p, a);
}

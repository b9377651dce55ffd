/* tests/harness.c: shared dynconv test machinery (see harness.h). */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "mirror.h"
#include "rng.h"

void dc_shape_str(const dc_shape *s, char *buf, size_t n) {
    int used = snprintf(buf, n, "B=%lld T=%lld D=%lld W=%d%s", (long long)s->B, (long long)s->T, (long long)s->D, s->W,
                        s->strided ? " strided" : "");
    for (int i = 0; i < s->n_seqs && used > 0 && (size_t)used < n; i++)
        used += snprintf(buf + used, n - (size_t)used, "%s%d", i ? "," : " varlen[", s->seqlens[i]);
    if (s->n_seqs && used > 0 && (size_t)used < n) snprintf(buf + used, n - (size_t)used, "]");
}

void dc_rung_label(ladder_rung rung, ladder_dtype dtype, char *buf, size_t n) {
    if (rung == LADDER_RUNG_GPU_TENSORCORE)
        snprintf(buf, n, "%s (%s)", ladder_rung_name(rung), ladder_dtype_name(dtype));
    else
        snprintf(buf, n, "%s", ladder_rung_name(rung));
}

/* ---- cases ---------------------------------------------------------------------------------------------------- */

/* Every field of the shape and the salt, mixed (FNV-1a), so each shape gets its own inputs. */
static uint64_t shape_seed(const dc_shape *s, uint64_t salt) {
    int64_t fields[5 + DC_MAX_SEQS] = {s->B, s->T, s->D, s->W, s->strided};
    for (int i = 0; i < s->n_seqs; i++) fields[5 + i] = s->seqlens[i];
    uint64_t h = 0xcbf29ce484222325ull ^ salt;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) h = (h ^ (uint64_t)fields[i]) * 0x100000001b3ull;
    return h;
}

/* A contiguous f32 buffer of @p rank dims, every element NaN. */
static void alloc_nan_buffer(ladder_tensor *buf, int rank, const int64_t *shape) {
    cr_assert(ladder_tensor_alloc(buf, LADDER_F32, rank, shape) == LADDER_OK, "%s", ladder_last_error());
    ladder_tensor_poison(buf);
}

void dc_case_make(dc_case *c, const dc_shape *s, uint64_t salt) {
    memset(c, 0, sizeof *c);
    c->shape = *s;
    c->problem = (ladder_dynconv_problem){.B = s->B, .T = s->T, .D = s->D, .W = s->W};
    const int64_t B = s->B, T = s->T, D = s->D, W = s->W;
    int64_t btd[3] = {B, T, D}, btdw[4] = {B, T, D, W};
    if (s->strided) {
        /* x: a slice of [B, T+2, D+3] starting at (0, 1, 2) */
        int64_t xs[3] = {B, T + 2, D + 3};
        alloc_nan_buffer(&c->x_buf, 3, xs);
        c->x = ladder_tensor_make((float *)c->x_buf.data + 1 * (D + 3) + 2, LADDER_F32, 3, btd);
        memcpy(c->x.strides, c->x_buf.strides, sizeof c->x.strides);
        /* kernels: a slice of [B, T, D+1, W+3] starting at (0, 0, 1, 2): a channel slice with a padded W */
        int64_t ks[4] = {B, T, D + 1, W + 3};
        alloc_nan_buffer(&c->kernels_buf, 4, ks);
        c->kernels = ladder_tensor_make((float *)c->kernels_buf.data + 1 * (W + 3) + 2, LADDER_F32, 4, btdw);
        memcpy(c->kernels.strides, c->kernels_buf.strides, sizeof c->kernels.strides);
        /* dout: the transpose of a [B, D, T] buffer, so its last stride is T, not 1 */
        int64_t gs[3] = {B, D, T};
        alloc_nan_buffer(&c->dout_buf, 3, gs);
        c->dout = ladder_tensor_make(c->dout_buf.data, LADDER_F32, 3, btd);
        c->dout.strides[0] = D * T, c->dout.strides[1] = 1, c->dout.strides[2] = T;
    } else {
        cr_assert(ladder_tensor_alloc(&c->x_buf, LADDER_F32, 3, btd) == LADDER_OK, "%s", ladder_last_error());
        cr_assert(ladder_tensor_alloc(&c->kernels_buf, LADDER_F32, 4, btdw) == LADDER_OK, "%s", ladder_last_error());
        cr_assert(ladder_tensor_alloc(&c->dout_buf, LADDER_F32, 3, btd) == LADDER_OK, "%s", ladder_last_error());
        c->x = c->x_buf, c->kernels = c->kernels_buf, c->dout = c->dout_buf;
    }
    ladder_rng rng;
    ladder_rng_seed(&rng, shape_seed(s, salt));
    ladder_rng_fill_normal(&rng, &c->x, 1.0);
    ladder_rng_fill_normal(&rng, &c->kernels, 1.0 / sqrt((double)W)); /* keeps out near unit scale for every W */
    ladder_rng_fill_normal(&rng, &c->dout, 1.0);
    if (s->n_seqs) {
        cr_assert(B == 1, "varlen shapes have B = 1");
        int64_t n[1] = {s->n_seqs + 1};
        cr_assert(ladder_tensor_alloc(&c->cu_seqlens, LADDER_I32, 1, n) == LADDER_OK, "%s", ladder_last_error());
        int32_t *cu = c->cu_seqlens.data;
        cu[0] = 0;
        for (int i = 0; i < s->n_seqs; i++) cu[i + 1] = cu[i] + s->seqlens[i];
        cr_assert(cu[s->n_seqs] == T, "the grid's sequence lengths must sum to T = %lld", (long long)T);
    }
}

void dc_case_round_inputs(dc_case *c, ladder_dtype precision) {
    ladder_tensor_round_to(&c->x, precision);
    ladder_tensor_round_to(&c->kernels, precision);
    ladder_tensor_round_to(&c->dout, precision);
}

void dc_case_free(dc_case *c) {
    ladder_tensor_free(&c->x_buf);
    ladder_tensor_free(&c->kernels_buf);
    ladder_tensor_free(&c->dout_buf);
    ladder_tensor_free(&c->cu_seqlens);
}

/* ---- running a rung --------------------------------------------------------------------------------------------- */

/* The same view over a copy of its buffer in dtype @p to: the strides (and the NaN padding) stay. */
static void convert_view(const ladder_tensor *view, const ladder_tensor *buf, ladder_dtype to, ladder_tensor *new_buf,
                         ladder_tensor *new_view) {
    cr_assert(ladder_tensor_convert(buf, new_buf, to) == LADDER_OK, "%s", ladder_last_error());
    ptrdiff_t offset = (const float *)view->data - (const float *)buf->data;
    *new_view = *view;
    new_view->dtype = to;
    new_view->data = (char *)new_buf->data + offset * (ptrdiff_t)ladder_dtype_size(to);
}

/* One dispatcher call; GPU rungs get device mirrors of every present tensor, outputs copied back. */
static ladder_status call_rung(ladder_rung rung, bool backward, const ladder_dynconv_problem *p,
                               ladder_dynconv_args *a) {
    if (!ladder_rung_is_gpu(rung)) return backward ? ladder_dynconv_bwd(rung, p, a) : ladder_dynconv_fwd(rung, p, a);
    ladder_tensor *ins[] = {&a->x, &a->kernels, &a->cu_seqlens, &a->dout};
    ladder_tensor *outs[] = {&a->out, &a->dx, &a->dkernels};
    ladder_mirror m;
    ladder_status st = ladder_mirror_begin(&m, ins, 4, outs, 3);
    if (st != LADDER_OK) return st;
    st = backward ? ladder_dynconv_bwd(rung, p, a) : ladder_dynconv_fwd(rung, p, a);
    if (st == LADDER_OK) st = ladder_gpu_sync(); /* an asynchronous kernel fault shows here */
    ladder_status end = ladder_mirror_end(&m, st == LADDER_OK);
    return st != LADDER_OK ? st : end;
}

static void alloc_poisoned(ladder_tensor *t, ladder_dtype dtype, int rank, const int64_t *shape) {
    cr_assert(ladder_tensor_alloc(t, dtype, rank, shape) == LADDER_OK, "%s", ladder_last_error());
    ladder_tensor_poison(t);
}

void dc_run(ladder_rung rung, ladder_dtype dtype, const dc_case *c, dc_result *r) {
    char label[64], shape[192];
    dc_rung_label(rung, dtype, label, sizeof label);
    dc_shape_str(&c->shape, shape, sizeof shape);
    const ladder_dynconv_problem *p = &c->problem;
    ladder_dtype io = rung == LADDER_RUNG_GPU_TENSORCORE ? dtype : LADDER_F32;
    int64_t btd[3] = {p->B, p->T, p->D}, btdw[4] = {p->B, p->T, p->D, p->W};

    ladder_dynconv_args in = {.x = c->x, .kernels = c->kernels, .dout = c->dout, .cu_seqlens = c->cu_seqlens};
    ladder_tensor conv[3] = {{0}};
    if (io != LADDER_F32) {
        convert_view(&c->x, &c->x_buf, io, &conv[0], &in.x);
        convert_view(&c->kernels, &c->kernels_buf, io, &conv[1], &in.kernels);
        convert_view(&c->dout, &c->dout_buf, io, &conv[2], &in.dout);
    }

    memset(r, 0, sizeof *r);
    alloc_poisoned(&r->out, io, 3, btd);
    ladder_dynconv_args fa = {.x = in.x, .kernels = in.kernels, .cu_seqlens = in.cu_seqlens, .out = r->out};
    ladder_status st = call_rung(rung, false, p, &fa);
    cr_assert(st == LADDER_OK, "%s on %s: ladder_dynconv_fwd returned %s: %s", label, shape, ladder_status_name(st),
              ladder_last_error());

    alloc_poisoned(&r->dx, io, 3, btd);
    alloc_poisoned(&r->dkernels, io, 4, btdw);
    ladder_dynconv_args ba = in;
    ba.dx = r->dx, ba.dkernels = r->dkernels;
    st = call_rung(rung, true, p, &ba);
    cr_assert(st == LADDER_OK, "%s on %s: ladder_dynconv_bwd returned %s: %s", label, shape, ladder_status_name(st),
              ladder_last_error());
    for (int i = 0; i < 3; i++) ladder_tensor_free(&conv[i]);
}

void dc_result_free(dc_result *r) {
    ladder_tensor_free(&r->out);
    ladder_tensor_free(&r->dx);
    ladder_tensor_free(&r->dkernels);
}

/* ---- checks ----------------------------------------------------------------------------------------------------- */

void dc_expect_close(const char *who, const dc_shape *s, const char *tensor, const ladder_cmp *cmp) {
    char shape[192], what[512];
    dc_shape_str(s, shape, sizeof shape);
    ladder_cmp_describe(cmp, what, sizeof what);
    cr_assert(cmp->ok, "%s on %s: %s differs: %s", who, shape, tensor, what);
}

ladder_cmp dc_compare_to_f64(const ladder_tensor *got, const double *want, double tol) {
    int64_t n = ladder_tensor_numel(got);
    double *g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
    cr_assert(g, "out of memory converting %lld elements", (long long)n);
    for (int64_t i = 0; i < n; i++) g[i] = ladder_tensor_get(got, ladder_tensor_offset_of_flat(got, i));
    ladder_cmp cmp = ladder_compare_f64(g, want, got->rank, got->shape, tol);
    free(g);
    return cmp;
}

/* Flat index of the first element whose bytes differ, -1 if none (both contiguous, same dtype and shape). */
static int64_t first_bitwise_difference(const ladder_tensor *a, const ladder_tensor *b) {
    size_t size = ladder_dtype_size(a->dtype);
    int64_t n = ladder_tensor_numel(a);
    if (memcmp(a->data, b->data, (size_t)n * size) == 0) return -1;
    for (int64_t i = 0; i < n; i++)
        if (memcmp((const char *)a->data + i * size, (const char *)b->data + i * size, size) != 0) return i;
    return -1;
}

void dc_expect_deterministic(ladder_rung rung, ladder_dtype dtype, const dc_shape *s) {
    enum { REPEATS = 10 };
    char label[64], shape[192];
    dc_rung_label(rung, dtype, label, sizeof label);
    dc_shape_str(s, shape, sizeof shape);
    dc_case c;
    dc_case_make(&c, s, 0);
    if (rung == LADDER_RUNG_GPU_TENSORCORE) dc_case_round_inputs(&c, dtype);
    dc_result first, again;
    dc_run(rung, dtype, &c, &first);
    for (int rep = 1; rep < REPEATS; rep++) {
        dc_run(rung, dtype, &c, &again);
        const ladder_tensor *a[3] = {&first.out, &first.dx, &first.dkernels};
        const ladder_tensor *b[3] = {&again.out, &again.dx, &again.dkernels};
        const char *names[3] = {"out", "dx", "dkernels"};
        for (int i = 0; i < 3; i++) {
            int64_t bad = first_bitwise_difference(a[i], b[i]);
            if (bad >= 0)
                cr_assert_fail("%s on %s: %s of run %d differs bitwise from run 1 at flat index %lld (%.9g vs %.9g)",
                               label, shape, names[i], rep + 1, (long long)bad, ladder_tensor_get(b[i], bad),
                               ladder_tensor_get(a[i], bad));
        }
        dc_result_free(&again);
    }
    dc_result_free(&first);
    dc_case_free(&c);
}

void harness_require_rung(ladder_rung rung) {
    if (ladder_rung_available(rung) != LADDER_OK) cr_skip_test("%s", ladder_last_error());
}

/* ---- grids ------------------------------------------------------------------------------------------------------ */

bool harness_small(void) {
    const char *v = getenv("LADDER_TEST_SMALL");
    return v && strcmp(v, "1") == 0;
}

void harness_tmpdir_make(char *dir, size_t n, const char *tag) {
    snprintf(dir, n, "/tmp/ladder-%s-XXXXXX", tag);
    cr_assert_not_null(mkdtemp(dir), "cannot create %s", dir);
}

void harness_tmpdir_remove(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0, "cannot remove %s", dir);
}

/* Four packed sequences over T tokens: a long one, an empty one, one of length 1, and the rest. */
static void edge_seqlens(dc_shape *s) {
    int32_t a = (int32_t)((s->T - 1) / 2);
    s->B = 1;
    s->n_seqs = 4;
    s->seqlens[0] = a;
    s->seqlens[1] = 0;
    s->seqlens[2] = 1;
    s->seqlens[3] = (int32_t)s->T - 1 - a;
}

int dc_grid(dc_shape *out, int max) {
    /* small: the shapes that stress the edges, cheap enough for compute-sanitizer */
    static const dc_shape small[] = {
        {.B = 2, .T = 65, .D = 129, .W = 64},
        {.B = 1, .T = 65, .D = 129, .W = 64, .strided = true, .n_seqs = 4, .seqlens = {32, 0, 1, 32}},
        {.B = 3, .T = 1, .D = 7, .W = 3, .strided = true},
        {.B = 1, .T = 101, .D = 7, .W = 64, .n_seqs = 8, .seqlens = {0, 1, 5, 0, 0, 64, 1, 30}},
        {.B = 3, .T = 64, .D = 128, .W = 5},
    };
    /* full: beyond the (T, W) product below, the varlen and strided corners */
    static const dc_shape extra[] = {
        {.B = 1, .T = 101, .D = 7, .W = 64, .n_seqs = 8, .seqlens = {0, 1, 5, 0, 0, 64, 1, 30}},
        {.B = 1, .T = 101, .D = 129, .W = 8, .strided = true, .n_seqs = 8, .seqlens = {0, 1, 5, 0, 0, 64, 1, 30}},
        {.B = 1, .T = 1, .D = 1000, .W = 31, .n_seqs = 2, .seqlens = {1, 0}},
        {.B = 3, .T = 65, .D = 129, .W = 64, .strided = true},
        {.B = 1, .T = 1000, .D = 1000, .W = 64}, /* the largest corner: 64M kernel weights */
    };
    int n = 0;
    if (harness_small()) {
        for (size_t i = 0; i < sizeof small / sizeof small[0] && n < max; i++) out[n++] = small[i];
        return n;
    }
    /*
     * Every (T, W) pair once; D, B, strided and varlen cycle with different
     * periods, so each value of each meets many of the others. Varlen rows
     * (every 4th) pack a long, an empty, a length-1 and a last sequence.
     */
    static const int64_t Ts[] = {1, 2, 3, 63, 64, 65, 1000};
    static const int Ws[] = {1, 2, 3, 4, 5, 8, 31, 64};
    static const int64_t Ds[] = {1, 7, 128, 129, 1000};
    static const int64_t Bs[] = {1, 3};
    const int nT = sizeof Ts / sizeof Ts[0], nW = sizeof Ws / sizeof Ws[0];
    for (int i = 0; i < nT; i++)
        for (int j = 0; j < nW && n < max; j++) {
            int k = i * nW + j;
            dc_shape s = {.B = Bs[(i + j) % 2], .T = Ts[i], .D = Ds[k % 5], .W = Ws[j], .strided = k % 3 == 1};
            if (k % 4 == 2) edge_seqlens(&s);
            out[n++] = s;
        }
    for (size_t i = 0; i < sizeof extra / sizeof extra[0] && n < max; i++) out[n++] = extra[i];
    return n;
}

static void free_params(struct criterion_test_params *params) { cr_free(params->params); }

struct criterion_test_params dc_grid_params(void) {
    enum { MAX = 128 };
    dc_shape shapes[MAX];
    int n = dc_grid(shapes, MAX);
    dc_shape *params = cr_malloc((size_t)n * sizeof *params);
    memcpy(params, shapes, (size_t)n * sizeof *params);
    return cr_make_param_array(dc_shape, params, (size_t)n, free_params);
}

/* The engine every algorithm plugs into (see engine.h): cases, runs, checks, .npy by name. */
#include "engine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "half.h"
#include "mirror.h"
#include "npy.h"
#include "rng.h"

_Static_assert(LADDER_MIRROR_MAX >= LADDER_MAX_TENSORS, "a run mirrors every tensor of an algorithm");

/* ---- descriptors ---------------------------------------------------------------------------------------------- */

const ladder_algo *ladder_algo_find(const char *name) {
    for (int i = 0; i < ladder_n_algos; i++)
        if (strcmp(ladder_algos[i]->name, name) == 0) return ladder_algos[i];
    return NULL;
}

ladder_status ladder_algo_rung_available(const ladder_algo *algo, ladder_rung rung) {
    ladder_status st = ladder_rung_available(rung);
    if (st == LADDER_OK && (unsigned)rung < 32 && ((algo->rungs_missing >> rung) & 1u))
        st = ladder_fail(LADDER_ERR_UNAVAILABLE, "%s has no %s rung yet", algo->name, ladder_rung_name(rung));
    return st;
}

int ladder_algo_tensor(const ladder_algo *algo, const char *name) {
    for (int i = 0; name && i < algo->n_tensors; i++)
        if (strcmp(algo->tensors[i].name, name) == 0) return i;
    return -1;
}

int ladder_algo_param(const ladder_algo *algo, const char *name) {
    for (int i = 0; i < algo->n_params; i++)
        if (strcmp(algo->params[i].name, name) == 0) return i;
    return -1;
}

ladder_status ladder_algo_with(const ladder_algo *algo, const char *names, uint32_t *with) {
    *with = 0;
    for (const char *p = names; *p;) {
        size_t len = strcspn(p, ",");
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(len < 31 ? len : 31), p);
        int i = ladder_algo_tensor(algo, name);
        if (i < 0 || !(algo->tensors[i].role & LADDER_OPTIONAL) || (algo->tensors[i].role & LADDER_INDEX))
            return ladder_fail(LADDER_ERR_ARG, "%s has no optional tensor '%s'", algo->name, name);
        *with |= 1u << i;
        p += len + (p[len] == ',');
    }
    return LADDER_OK;
}

double ladder_param_get(const ladder_algo *algo, const void *problem, int i) {
    const ladder_param *p = &algo->params[i];
    const char *f = (const char *)problem + p->offset;
    switch (p->type) {
    case LADDER_PARAM_I64: return (double)*(const int64_t *)f;
    case LADDER_PARAM_INT: return *(const int *)f;
    case LADDER_PARAM_BOOL: return *(const bool *)f;
    case LADDER_PARAM_DOUBLE: return *(const double *)f;
    case LADDER_PARAM_U64: return (double)*(const uint64_t *)f;
    }
    return 0;
}

void ladder_param_set(const ladder_algo *algo, void *problem, int i, double v) {
    const ladder_param *p = &algo->params[i];
    char *f = (char *)problem + p->offset;
    switch (p->type) {
    case LADDER_PARAM_I64: *(int64_t *)f = (int64_t)v; break;
    case LADDER_PARAM_INT: *(int *)f = (int)v; break;
    case LADDER_PARAM_BOOL: *(bool *)f = v != 0; break;
    case LADDER_PARAM_DOUBLE: *(double *)f = v; break;
    case LADDER_PARAM_U64: *(uint64_t *)f = (uint64_t)v; break;
    }
}

void ladder_problem_defaults(const ladder_algo *algo, void *problem) {
    memset(problem, 0, algo->problem_size);
    for (int i = 0; i < algo->n_params; i++) ladder_param_set(algo, problem, i, algo->params[i].run_default);
}

double ladder_param_neutral(const ladder_param *p) { return p->lo >= -1 ? p->lo : 0; }

void ladder_problem_neutral(const ladder_algo *algo, void *problem) {
    memset(problem, 0, algo->problem_size);
    for (int i = 0; i < algo->n_params; i++) ladder_param_set(algo, problem, i, ladder_param_neutral(&algo->params[i]));
}

static int split_dims(const char *dims, char names[LADDER_MAX_RANK][16]);

bool ladder_param_is_size(const ladder_algo *algo, int i) {
    for (int t = 0; t < algo->n_tensors; t++) {
        char names[LADDER_MAX_RANK][16];
        int rank = split_dims(algo->tensors[t].dims, names);
        for (int d = 0; d < rank; d++)
            if (strcmp(names[d], algo->params[i].name) == 0) return true;
    }
    return false;
}

const ladder_param_names *ladder_param_names_of(const ladder_algo *algo, int i) {
    for (int k = 0; k < algo->n_named_params; k++)
        if (strcmp(algo->named_params[k].param, algo->params[i].name) == 0) return &algo->named_params[k];
    return NULL;
}

/* A whole-number param @p i as NAME=VALUE, or NAME=its names (score_mod=alibi); snprintf's count. */
static int param_str(const ladder_algo *algo, int i, double v, const char *sep, char *buf, size_t n) {
    const ladder_param *p = &algo->params[i];
    const ladder_param_names *names_of = ladder_param_names_of(algo, i);
    if (!names_of) return snprintf(buf, n, "%s%s=%.0f", sep, p->name, v);
    char names[128];
    names_of->format(v, names, sizeof names);
    return snprintf(buf, n, "%s%s=%s", sep, p->name, names);
}

void ladder_problem_describe(const ladder_algo *algo, const void *problem, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    char head[LADDER_MAX_RANK][16];
    int head_rank = algo->n_tensors > 0 ? split_dims(algo->tensors[0].dims, head) : 0;
    int head_dim = head_rank > 0 ? ladder_algo_param(algo, head[head_rank - 1]) : -1;
    for (int i = 0; i < algo->n_params && used < n; i++) {
        const ladder_param *p = &algo->params[i];
        double v = ladder_param_get(algo, problem, i);
        const char *sep = used ? " " : "";
        int k;
        if (strcmp(p->name, "scale") == 0 && v == 0 && head_dim >= 0)
            k = snprintf(buf + used, n - used, "%sscale=%.9g (1/sqrt(%s))", sep,
                         1.0 / sqrt(ladder_param_get(algo, problem, head_dim)), algo->params[head_dim].name);
        else if (p->type == LADDER_PARAM_DOUBLE) k = snprintf(buf + used, n - used, "%s%s=%.9g", sep, p->name, v);
        else k = param_str(algo, i, v, sep, buf + used, n - used);
        used += k > 0 ? (size_t)k : 0;
    }
}

void ladder_problem_str(const ladder_algo *algo, const void *problem, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < algo->n_params && used < n; i++) {
        const ladder_param *p = &algo->params[i];
        double v = ladder_param_get(algo, problem, i);
        const char *sep = used ? " " : "";
        /* a flag reads name=0 or name=1, as its command-line flag takes it: a shape is NAME=VALUE pairs, every
         * param named, so that a filter of tools/bench_tables.py can pick either value */
        int k = p->type == LADDER_PARAM_DOUBLE ? snprintf(buf + used, n - used, "%s%s=%g", sep, p->name, v)
                                               : param_str(algo, i, v, sep, buf + used, n - used);
        used += k > 0 ? (size_t)k : 0;
    }
}

/* The size called @p name (a param, or a derived dimension), or -1. */
static int64_t dim_value(const ladder_algo *algo, const void *problem, const ladder_tensor *index, const char *name) {
    int p = ladder_algo_param(algo, name);
    if (p >= 0) return (int64_t)ladder_param_get(algo, problem, p);
    return algo->derived_dim ? algo->derived_dim(problem, index, name) : -1;
}

/* Split "B,T,D,W" into names; returns how many (at most LADDER_MAX_RANK, -1 if more). */
static int split_dims(const char *dims, char names[LADDER_MAX_RANK][16]) {
    int n = 0;
    for (const char *p = dims; *p;) {
        if (n == LADDER_MAX_RANK) return -1;
        size_t len = strcspn(p, ",");
        if (len >= sizeof names[0]) return -1;
        memcpy(names[n], p, len);
        names[n++][len] = '\0';
        p += len + (p[len] == ',');
    }
    return n;
}

int ladder_tensor_shape_of(const ladder_algo *algo, const void *problem, const ladder_tensor *index, int i,
                           int64_t *shape) {
    char names[LADDER_MAX_RANK][16];
    int rank = split_dims(algo->tensors[i].dims, names);
    for (int d = 0; d < rank; d++)
        if ((shape[d] = dim_value(algo, problem, index, names[d])) < 0) return -1;
    return rank;
}

ladder_dtype ladder_tensor_dtype_at(const ladder_algo *algo, int i, ladder_dtype dtype) {
    unsigned role = algo->tensors[i].role;
    if (role & LADDER_INDEX) return LADDER_I32;
    return role & LADDER_KEEP_F32 ? LADDER_F32 : dtype;
}

ladder_dtype ladder_rung_dtype(ladder_rung rung, ladder_dtype tc_dtype) {
    return rung == LADDER_RUNG_GPU_TENSORCORE ? tc_dtype : LADDER_F32;
}

ladder_status ladder_algo_takes(const ladder_algo *algo, ladder_rung rung, ladder_dtype dtype) {
    const bool tc = rung == LADDER_RUNG_GPU_TENSORCORE;
    if (tc ? dtype == LADDER_BF16 || dtype == LADDER_F16 || (dtype == LADDER_F32 && algo->tc_f32) : dtype == LADDER_F32)
        return LADDER_OK;
    return ladder_fail(LADDER_ERR_UNSUPPORTED, "%s has no %s inputs at rung %s: it takes %s there", algo->name,
                       ladder_dtype_name(dtype), ladder_rung_name(rung),
                       !tc ? "f32" : algo->tc_f32 ? "bf16, f16 or f32" : "bf16 or f16");
}

double ladder_run_tolerance(const ladder_case *c, ladder_rung rung, ladder_dtype tc_dtype) {
    const ladder_dtype dt = ladder_rung_dtype(rung, tc_dtype);
    const int i = ladder_algo_param(c->algo, "allow_tf32");
    if (rung == LADDER_RUNG_GPU_TENSORCORE && dt == LADDER_F32 && i >= 0)
        return ladder_param_get(c->algo, c->problem, i) ? LADDER_TOL_TF32 : LADDER_TOL_3XTF32;
    return ladder_tolerance(dt);
}

static bool is_input(const ladder_tensor_spec *s) { return s->role & (LADDER_IN_FWD | LADDER_IN_BWD | LADDER_INDEX); }
static bool is_output(const ladder_tensor_spec *s) { return s->role & (LADDER_OUT_FWD | LADDER_OUT_BWD); }
static bool has(uint32_t set, int i) { return (set >> i) & 1u; }
static ladder_tensor *arg(void *args, const ladder_tensor_spec *s) { return (ladder_tensor *)((char *)args + s->offset); }

/* The case's index tensor (cu_seqlens), which derived dims such as N read; NULL without one. */
static const ladder_tensor *case_index(const ladder_case *c) {
    for (int i = 0; i < c->algo->n_tensors; i++)
        if ((c->algo->tensors[i].role & LADDER_INDEX) && c->t[i].data) return &c->t[i];
    return NULL;
}

int ladder_case_shape(const ladder_case *c, int i, int64_t *shape) {
    const ladder_algo *algo = c->algo;
    int of = ladder_algo_tensor(algo, algo->tensors[i].grad_of);
    const ladder_tensor *own = c->t[i].data ? &c->t[i]
                               : of >= 0 && c->t[of].data && (algo->tensors[i].role & (LADDER_OUT_FWD | LADDER_OUT_BWD))
                                   ? &c->t[of]
                                   : NULL;
    if (!own) return ladder_tensor_shape_of(algo, c->problem, case_index(c), i, shape);
    memcpy(shape, own->shape, sizeof own->shape);
    return own->rank;
}

/* Which outputs a case writes: the required ones, those asked for, and the gradients of present inputs that are not
 * frozen. */
static uint32_t outputs_present(const ladder_algo *algo, uint32_t present, uint32_t with, uint32_t frozen) {
    for (int i = 0; i < algo->n_tensors; i++) {
        const ladder_tensor_spec *s = &algo->tensors[i];
        if (!is_output(s)) continue;
        int of = ladder_algo_tensor(algo, s->grad_of);
        bool want = !(s->role & LADDER_OPTIONAL) || (of >= 0 ? has(present, of) && !has(frozen, of) : has(with, i));
        if (want) present |= 1u << i;
    }
    return present;
}

/* The output that is input @p i's gradient, or -1. */
static int gradient_of(const ladder_algo *algo, int i) {
    for (int g = 0; g < algo->n_tensors; g++) {
        const ladder_tensor_spec *s = &algo->tensors[g];
        if (is_output(s) && s->grad_of && strcmp(s->grad_of, algo->tensors[i].name) == 0) return g;
    }
    return -1;
}

uint32_t ladder_algo_freezable(const ladder_algo *algo) {
    uint32_t set = 0;
    for (int i = 0; i < algo->n_tensors; i++) {
        const int g = is_input(&algo->tensors[i]) ? gradient_of(algo, i) : -1;
        if (g >= 0 && (algo->tensors[g].role & LADDER_FREEZABLE)) set |= 1u << i;
    }
    return set;
}

/* LADDER_ERR_ARG naming @p name (an input of @p algo or not) and the inputs that can be frozen. */
static ladder_status not_freezable(const ladder_algo *algo, const char *name) {
    char can[256] = "";
    const uint32_t may = ladder_algo_freezable(algo);
    for (int i = 0; i < algo->n_tensors; i++)
        if (has(may, i))
            snprintf(can + strlen(can), sizeof can - strlen(can), "%s%s", can[0] ? ", " : "", algo->tensors[i].name);
    return ladder_fail(LADDER_ERR_ARG, "%s has no input '%s' that can be frozen (read, its gradient not written): %s",
                       algo->name, name, may ? can : "it has none");
}

ladder_status ladder_algo_frozen(const ladder_algo *algo, const char *names, uint32_t *frozen) {
    *frozen = 0;
    if (strcmp(names, "none") == 0) return LADDER_OK;
    const uint32_t may = ladder_algo_freezable(algo);
    for (const char *p = names; *p;) {
        size_t len = strcspn(p, ",");
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(len < 31 ? len : 31), p);
        int i = ladder_algo_tensor(algo, name);
        if (i < 0 || !has(may, i)) return not_freezable(algo, name);
        *frozen |= 1u << i;
        p += len + (p[len] == ',');
    }
    return LADDER_OK;
}

/* LADDER_OK when every input in @p frozen can be frozen; else LADDER_ERR_ARG naming the first that cannot. */
static ladder_status check_frozen(const ladder_algo *algo, uint32_t frozen) {
    const uint32_t bad = frozen & ~ladder_algo_freezable(algo);
    for (int i = 0; i < LADDER_MAX_TENSORS; i++)
        if (has(bad, i)) return not_freezable(algo, i < algo->n_tensors ? algo->tensors[i].name : "?");
    return LADDER_OK;
}

ladder_status ladder_case_freeze(ladder_case *c, uint32_t frozen) {
    LADDER_TRY(check_frozen(c->algo, frozen));
    for (int i = 0; i < c->algo->n_tensors; i++)
        if (has(frozen, i)) c->present &= ~(1u << gradient_of(c->algo, i)); /* freezable: it has a gradient */
    return LADDER_OK;
}

/* ---- element loops (OpenMP: a benchmark case holds hundreds of millions of elements) --------------------------- */

/* Convert @p n contiguous elements; with @p round_to set (bf16/f16), f32 values are rounded through it. */
static void convert_flat(const ladder_tensor *src, ladder_tensor *dst, int64_t n, ladder_dtype round_to) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double v = ladder_tensor_get(src, i);
        if (round_to == LADDER_BF16) v = ladder_bf16_to_f32(ladder_f32_to_bf16((float)v));
        else if (round_to == LADDER_F16) v = ladder_f16_to_f32(ladder_f32_to_f16((float)v));
        ladder_tensor_set(dst, i, v);
    }
}

/*
 * A copy of @p view's buffer @p buf in dtype @p to (rounded through @p round_to if set), and the same view into it:
 * strides and NaN padding are kept, so a rung sees the layout the case was made with.
 */
static ladder_status clone_view(const ladder_tensor *view, const ladder_tensor *buf, ladder_dtype to,
                                ladder_dtype round_to, ladder_tensor *new_buf, ladder_tensor *new_view) {
    ladder_status st = ladder_tensor_alloc(new_buf, to, buf->rank, buf->shape);
    if (st != LADDER_OK) return st;
    convert_flat(buf, new_buf, ladder_tensor_numel(buf), round_to);
    ptrdiff_t offset = ((const char *)view->data - (const char *)buf->data) / (ptrdiff_t)ladder_dtype_size(buf->dtype);
    *new_view = *view;
    new_view->dtype = to;
    new_view->data = (char *)new_buf->data + offset * (ptrdiff_t)ladder_dtype_size(to);
    return LADDER_OK;
}

/* Every element of a contiguous float tensor NaN: all-ones bytes are NaN in f32, f16 and bf16. */
static void poison(ladder_tensor *t) {
    memset(t->data, 0xff, (size_t)ladder_tensor_numel(t) * ladder_dtype_size(t->dtype));
}

/* logsigmoid(z) = -log(1 + exp(-z)), written so that neither branch overflows. */
static double log_sigmoid(double z) { return (z < 0 ? z : 0) - log1p(exp(-fabs(z))); }

/*
 * Fill a view with seeded values. Elements are drawn in chunks of 4096, each chunk from its own generator seeded
 * by (seed, chunk), so the values do not depend on how many threads draw them. Box-Muller gives normals in
 * pairs, and both are used.
 */
static void fill_view(ladder_tensor *t, uint64_t seed, ladder_fill fill, double normalizer) {
    const int64_t n = ladder_tensor_numel(t), chunk = 4096;
    const bool contiguous = ladder_tensor_is_contiguous(t) && t->dtype == LADDER_F32;
    double scale = 1.0;
    if (fill == LADDER_FILL_FAN_IN && t->rank > 0) scale = 1.0 / sqrt((double)t->shape[t->rank - 1]);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < (n + chunk - 1) / chunk; c++) {
        ladder_rng rng;
        ladder_rng_seed(&rng, seed ^ ((uint64_t)c * 0xd1342543de82ef95ull));
        for (int64_t i = c * chunk; i < n && i < (c + 1) * chunk; i += 2) {
            double r = sqrt(-2.0 * log(ladder_rng_uniform(&rng))), phi = 6.283185307179586 * ladder_rng_uniform(&rng);
            double z[2] = {r * cos(phi), r * sin(phi)};
            for (int k = 0; k < 2 && i + k < n && i + k < (c + 1) * chunk; k++) {
                double v = fill == LADDER_FILL_LOG_GATE ? log_sigmoid(z[k]) / normalizer : scale * z[k];
                if (contiguous) ((float *)t->data)[i + k] = (float)v;
                else ladder_tensor_set(t, ladder_tensor_offset_of_flat(t, i + k), v);
            }
        }
    }
}

/* ---- cases ----------------------------------------------------------------------------------------------------- */

void ladder_case_free(ladder_case *c) {
    for (int i = 0; i < LADDER_MAX_TENSORS; i++) ladder_tensor_free(&c->buf[i]);
    memset(c->t, 0, sizeof c->t);
}

/*
 * Allocate input @p i of @p shape. Strided cases vary the layout by input: odd-numbered inputs (of rank >= 2) are
 * the transpose of a buffer with the last two dimensions swapped (a last stride that is not 1), the others a slice
 * of a buffer padded by 1-3 elements in every dimension but the first, starting one element in. The buffer is NaN
 * first, so a read outside the view shows up in the result.
 */
static ladder_status alloc_input(ladder_case *c, int i, int k, int rank, const int64_t *shape, bool strided) {
    ladder_tensor *buf = &c->buf[i], *view = &c->t[i];
    if (!strided) {
        ladder_status st = ladder_tensor_alloc(buf, LADDER_F32, rank, shape);
        *view = *buf;
        return st;
    }
    int64_t big[LADDER_MAX_RANK];
    bool transpose = rank >= 2 && k % 2 == 1;
    for (int d = 0; d < rank; d++) big[d] = shape[d] + (transpose || d == 0 ? 0 : 1 + (d + k) % 3);
    if (transpose) big[rank - 2] = shape[rank - 1], big[rank - 1] = shape[rank - 2];
    ladder_status st = ladder_tensor_alloc(buf, LADDER_F32, rank, big);
    if (st != LADDER_OK) return st;
    poison(buf);
    *view = ladder_tensor_make(buf->data, LADDER_F32, rank, shape);
    memcpy(view->strides, buf->strides, sizeof view->strides);
    if (transpose) {
        view->strides[rank - 2] = buf->strides[rank - 1];
        view->strides[rank - 1] = buf->strides[rank - 2];
    } else {
        int64_t start = 0;
        for (int d = 1; d < rank; d++) start += buf->strides[d];
        view->data = (float *)buf->data + start;
    }
    return LADDER_OK;
}

/* cu_seqlens for packed sequences of the given lengths. */
static ladder_status make_index(ladder_tensor *t, const int64_t *lens, int n) {
    int64_t shape[1] = {n + 1};
    ladder_status st = ladder_tensor_alloc(t, LADDER_I32, 1, shape);
    if (st != LADDER_OK) return st;
    int32_t *cu = t->data;
    cu[0] = 0;
    for (int i = 0; i < n; i++) {
        if (lens[i] < 0 || cu[i] + lens[i] > INT32_MAX)
            return ladder_fail(LADDER_ERR_ARG, "sequence lengths must be >= 0 and sum to at most %d", INT32_MAX);
        cu[i + 1] = (int32_t)(cu[i] + lens[i]);
    }
    return LADDER_OK;
}

void ladder_problem_packed(const ladder_algo *algo, const ladder_case_opts *opts, void *problem) {
    if (opts->n_seqs <= 0 || !algo->varlen_batch || !algo->varlen_dim) return;
    int64_t sum = 0, sum2 = 0;
    for (int i = 0; i < opts->n_seqs; i++) sum += opts->seqlens[i], sum2 += opts->seqlens2[i];
    ladder_param_set(algo, problem, ladder_algo_param(algo, algo->varlen_batch), 1);
    ladder_param_set(algo, problem, ladder_algo_param(algo, algo->varlen_dim), (double)sum);
    if (algo->varlen_dim2)
        ladder_param_set(algo, problem, ladder_algo_param(algo, algo->varlen_dim2),
                         (double)(opts->has_seqlens2 ? sum2 : sum));
}

ladder_status ladder_case_make(ladder_case *c, const ladder_algo *algo, const void *problem,
                               const ladder_case_opts *opts) {
    memset(c, 0, sizeof *c);
    c->algo = algo;
    if (algo->problem_size > LADDER_PROBLEM_MAX || algo->n_tensors > LADDER_MAX_TENSORS)
        return ladder_fail(LADDER_ERR_ARG, "%s's descriptor is larger than the engine's limits", algo->name);
    memcpy(c->problem, problem, algo->problem_size);
    LADDER_TRY(check_frozen(algo, opts->frozen));
    if (opts->n_seqs > 0) {
        int pb = algo->varlen_batch ? ladder_algo_param(algo, algo->varlen_batch) : -1, n_index = 0;
        for (int i = 0; i < algo->n_tensors; i++) {
            const ladder_tensor_spec *s = &algo->tensors[i];
            if (!(s->role & LADDER_INDEX)) continue;
            const char *packs = n_index == 0 ? algo->varlen_dim : algo->varlen_dim2;
            int pd = packs ? ladder_algo_param(algo, packs) : -1;
            if (pd < 0 || pb < 0 || n_index == 2 || opts->n_seqs > LADDER_MAX_SEQS) {
                ladder_case_free(c);
                return ladder_fail(LADDER_ERR_ARG, "%s takes no packed sequences (or more than %d)", algo->name,
                                   LADDER_MAX_SEQS);
            }
            const int64_t *lens = n_index++ == 1 && opts->has_seqlens2 ? opts->seqlens2 : opts->seqlens;
            ladder_status st = make_index(&c->buf[i], lens, opts->n_seqs);
            if (st != LADDER_OK) {
                ladder_case_free(c);
                return st;
            }
            c->t[i] = c->buf[i];
            c->present |= 1u << i;
        }
        if (n_index == 0)
            return ladder_fail(LADDER_ERR_ARG, "%s takes no packed sequences (or more than %d)", algo->name,
                               LADDER_MAX_SEQS);
        ladder_problem_packed(algo, opts, c->problem);
    }
    const ladder_tensor *index_t = case_index(c);
    const uint32_t with = opts->with | (algo->needs ? algo->needs(c->problem) : 0);
    int k = 0;
    for (int i = 0; i < algo->n_tensors; i++) {
        const ladder_tensor_spec *s = &algo->tensors[i];
        if (!is_input(s) || ((s->role & LADDER_OPTIONAL) && !has(with, i))) continue;
        if (s->role & LADDER_INDEX) { /* cu_seqlens were made above; an algorithm draws its other index tensors */
            ladder_status st = c->t[i].data || !algo->draw_index
                                   ? LADDER_OK
                                   : algo->draw_index(c->problem, i, opts->seed, &c->buf[i]);
            if (st != LADDER_OK) {
                ladder_case_free(c);
                return st;
            }
            if (!c->t[i].data && c->buf[i].data) c->t[i] = c->buf[i], c->present |= 1u << i;
            continue;
        }
        int64_t shape[LADDER_MAX_RANK], full[LADDER_MAX_RANK];
        int rank = ladder_tensor_shape_of(algo, c->problem, index_t, i, shape);
        const bool broadcast = s->role & LADDER_BROADCAST;
        for (int d = 0; d < rank; d++) { /* a broadcast input: 1 on its broadcast dims, one element on its stride-0 ones */
            full[d] = broadcast && has(opts->broadcast, d) ? 1 : shape[d];
            if (broadcast && (has(opts->broadcast, d) || has(opts->stride0, d))) shape[d] = 1;
        }
        ladder_status st = rank < 0 ? ladder_fail(LADDER_ERR_ARG, "%s: bad dims '%s'", s->name, s->dims)
                                    : ladder_shape_bytes(LADDER_F32, rank, shape) < 0
                                        ? ladder_fail(LADDER_ERR_ARG, "%s is too large to allocate", s->name)
                                        : alloc_input(c, i, k++, rank, shape, opts->strided);
        if (st != LADDER_OK) {
            ladder_case_free(c);
            return st;
        }
        fill_view(&c->t[i], opts->seed * 0x9e3779b97f4a7c15ull + (uint64_t)i, s->fill,
                  opts->gate_normalizer > 0 ? opts->gate_normalizer : 1.0);
        for (int d = 0; d < rank; d++) /* drawn, the stride-0 dims take the problem's size over the one element */
            if (full[d] != shape[d]) c->t[i].shape[d] = full[d], c->t[i].strides[d] = 0;
        c->present |= 1u << i;
    }
    c->present = outputs_present(algo, c->present, with, opts->frozen);
    c->backward = true;
    return LADDER_OK;
}

ladder_status ladder_case_rounded(const ladder_case *c, ladder_dtype precision, ladder_case *r) {
    *r = *c;
    memset(r->buf, 0, sizeof r->buf);
    for (int i = 0; i < c->algo->n_tensors; i++) {
        if (!c->t[i].data) continue;
        bool rounds = ladder_dtype_is_float(c->t[i].dtype) && !(c->algo->tensors[i].role & LADDER_KEEP_F32);
        ladder_status st = clone_view(&c->t[i], &c->buf[i], c->buf[i].dtype, rounds ? precision : LADDER_F32,
                                      &r->buf[i], &r->t[i]);
        if (st != LADDER_OK) {
            ladder_case_free(r);
            return st;
        }
    }
    return LADDER_OK;
}

/* ---- running a rung -------------------------------------------------------------------------------------------- */

void ladder_result_free(ladder_result *r) {
    for (int i = 0; i < LADDER_MAX_TENSORS; i++) ladder_tensor_free(&r->t[i]);
}

double ladder_median(double *ms, int n) {
    for (int i = 1; i < n; i++) /* insertion sort: n is a few dozen */
        for (int j = i; j > 0 && ms[j - 1] > ms[j]; j--) {
            double x = ms[j];
            ms[j] = ms[j - 1];
            ms[j - 1] = x;
        }
    return n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* One pass of the rung alone (input validated by an earlier dispatcher call): what the timer brackets. */
typedef struct timed_call {
    const ladder_algo *algo;
    ladder_rung rung;
    ladder_pass pass;
    const void *problem, *args;
} timed_call;

static ladder_status call_once(void *ctx) {
    const timed_call *t = ctx;
    return t->algo->call_rung(t->rung, t->pass, t->problem, t->args);
}

static ladder_status cpu_median_ms(ladder_work_fn fn, void *ctx, int warmup, int reps, double *median) {
    double *ms = malloc((size_t)reps * sizeof *ms);
    if (!ms) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %d timings", reps);
    ladder_status st = LADDER_OK;
    for (int i = 0; i < warmup && st == LADDER_OK; i++) st = fn(ctx);
    for (int i = 0; i < reps && st == LADDER_OK; i++) {
        double t0 = now_ms();
        st = fn(ctx);
        ms[i] = now_ms() - t0;
    }
    if (st == LADDER_OK) *median = ladder_median(ms, reps);
    free(ms);
    return st;
}

ladder_status ladder_time_ms(ladder_rung rung, ladder_work_fn fn, void *ctx, const ladder_run_opts *o, double *ms) {
    return ladder_rung_is_gpu(rung) ? ladder_gpu_median_ms(fn, ctx, o->warmup, o->reps, o->flush_l2, ms)
                                    : cpu_median_ms(fn, ctx, o->warmup, o->reps, ms);
}

/*
 * The validated call of one pass, then its timing. A single timed run of the cpu rung (opts reps 1, warmup 0) is
 * the validated call itself on the host clock: validation costs microseconds there, the rung seconds.
 */
static ladder_status run_pass(const ladder_algo *algo, ladder_rung rung, ladder_pass pass, const void *problem,
                              const void *args, const ladder_run_opts *o, double *ms) {
    double t0 = now_ms();
    const bool emulating = o->emulate != LADDER_F32 && algo->call_emulating;
    if (emulating && (rung != LADDER_RUNG_CPU || o->reps > 1 || o->warmup > 0))
        return ladder_fail(LADDER_ERR_ARG, "%s: only the cpu rung emulates the tensor-core rung's rounding, untimed",
                           algo->name);
    ladder_status st = emulating ? algo->call_emulating(o->emulate, pass, problem, args)
                                 : algo->call(rung, pass, problem, args);
    if (st == LADDER_OK && ladder_rung_is_gpu(rung)) st = ladder_gpu_sync(); /* an asynchronous fault shows here */
    if (st == LADDER_OK && !ladder_rung_is_gpu(rung) && o->reps == 1 && o->warmup == 0) {
        *ms = now_ms() - t0;
        return st;
    }
    if (st != LADDER_OK || o->reps <= 0) return st;
    timed_call t = {algo, rung, pass, problem, args};
    return ladder_time_ms(rung, call_once, &t, o, ms);
}

int64_t ladder_memory_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    while (kb < 0 && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) != 1) kb = -1;
    fclose(f);
    return kb >= 0 && kb < INT64_MAX / 1024 ? (int64_t)kb * 1024 : -1;
}

/* LADDER_ERR_NOMEM, before anything is allocated, when the outputs of @p c at @p dt exceed the memory available. */
static ladder_status outputs_fit(const ladder_case *c, ladder_dtype dt) {
    const ladder_algo *algo = c->algo;
    double total = 0, largest = 0;
    int which = -1;
    for (int i = 0; i < algo->n_tensors; i++) {
        if (!has(c->present, i) || !is_output(&algo->tensors[i])) continue;
        int64_t shape[LADDER_MAX_RANK];
        int rank = ladder_case_shape(c, i, shape);
        if (rank < 0) continue; /* ladder_run() reports the descriptor bug */
        int64_t bytes = ladder_shape_bytes(ladder_tensor_dtype_at(algo, i, dt), rank, shape);
        double b = bytes < 0 ? INFINITY : (double)bytes;
        total += b;
        if (b > largest || which < 0) largest = b, which = i;
    }
    int64_t avail = ladder_memory_available();
    if (which < 0 || avail < 0 || total <= (double)avail) return LADDER_OK;
    return ladder_fail(LADDER_ERR_NOMEM,
                       "the outputs of this %s problem need %.3g GB (%s alone %.3g GB) but this machine has %.3g GB "
                       "available: check the sizes (and how many sequences cu_seqlens holds)",
                       algo->name, total / 1e9, algo->tensors[which].name, largest / 1e9, (double)avail / 1e9);
}

ladder_status ladder_run(ladder_rung rung, ladder_dtype tc_dtype, const ladder_case *c, const ladder_run_opts *opts,
                         ladder_result *r) {
    const ladder_algo *algo = c->algo;
    const ladder_dtype dt = ladder_rung_dtype(rung, tc_dtype);
    memset(r, 0, sizeof *r);
    LADDER_TRY(ladder_algo_takes(algo, rung, dt));
    void *args = calloc(1, algo->args_size);
    if (!args) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate the args struct");
    ladder_tensor conv[LADDER_MAX_TENSORS] = {{0}};
    ladder_tensor *ins[LADDER_MAX_TENSORS], *outs[LADDER_MAX_TENSORS];
    int n_in = 0, n_out = 0;
    ladder_status st = outputs_fit(c, dt);
    for (int i = 0; i < algo->n_tensors && st == LADDER_OK; i++) {
        const ladder_tensor_spec *s = &algo->tensors[i];
        if (!has(c->present, i)) continue;
        ladder_tensor *a = arg(args, s);
        ladder_dtype want = ladder_tensor_dtype_at(algo, i, dt);
        if (is_input(s)) {
            if (!c->t[i].data) continue; /* a backward input of a forward-only case */
            *a = c->t[i];
            if (c->t[i].dtype != want) st = clone_view(&c->t[i], &c->buf[i], want, LADDER_F32, &conv[i], a);
            ins[n_in++] = a;
        } else {
            int64_t shape[LADDER_MAX_RANK];
            int rank = ladder_case_shape(c, i, shape);
            st = rank < 0 ? ladder_fail(LADDER_ERR_ARG, "%s: bad dims '%s'", s->name, s->dims)
                          : ladder_tensor_alloc(&r->t[i], want, rank, shape);
            if (st != LADDER_OK) break;
            poison(&r->t[i]);
            *a = r->t[i];
            outs[n_out++] = a;
        }
    }
    ladder_mirror m;
    bool mirrored = false;
    if (st == LADDER_OK && ladder_rung_is_gpu(rung)) {
        st = ladder_rung_available(rung);
        if (st == LADDER_OK) st = ladder_mirror_begin(&m, ins, n_in, outs, n_out);
        mirrored = st == LADDER_OK;
    }
    if (st == LADDER_OK) st = run_pass(algo, rung, LADDER_PASS_FWD, c->problem, args, opts, &r->ms[0]);
    if (st == LADDER_OK && c->backward && !opts->forward_only)
        st = run_pass(algo, rung, LADDER_PASS_BWD, c->problem, args, opts, &r->ms[1]);
    if (mirrored) {
        ladder_status end = ladder_mirror_end(&m, st == LADDER_OK);
        if (st == LADDER_OK) st = end;
    }
    for (int i = 0; i < LADDER_MAX_TENSORS; i++) ladder_tensor_free(&conv[i]);
    free(args);
    if (st != LADDER_OK) ladder_result_free(r);
    else if (!c->backward || opts->forward_only) /* outputs of a pass that did not run hold only NaN */
        for (int i = 0; i < algo->n_tensors; i++)
            if (algo->tensors[i].role & LADDER_OUT_BWD) ladder_tensor_free(&r->t[i]);
    return st;
}

/* ---- checking -------------------------------------------------------------------------------------------------- */

ladder_status ladder_case_magnitudes(const ladder_case *c, ladder_magnitudes *m) {
    memset(m, 0, sizeof *m);
    if (!c->algo->magnitudes || !c->backward) return LADDER_OK;
    ladder_status st = c->algo->magnitudes(c, m);
    if (st != LADDER_OK) ladder_magnitudes_free(m);
    return st;
}

void ladder_magnitudes_free(ladder_magnitudes *m) {
    for (int i = 0; i < LADDER_MAX_TENSORS; i++) {
        free(m->terms[i]), free(m->rounding[i]);
        m->terms[i] = m->rounding[i] = NULL;
    }
}

ladder_cmp ladder_output_compare(const ladder_magnitudes *m, int i, const ladder_tensor *got, const ladder_tensor *want,
                                 double tol) {
    if (!m || !m->terms[i]) return ladder_compare(got, want, tol);
    const ladder_magnitude mi = {m->terms[i], m->rounding[i]};
    return ladder_compare_magnitude(got, want, &mi, tol);
}

ladder_check ladder_result_check(const ladder_case *c, const ladder_result *got, const ladder_result *want,
                                 double tol) {
    ladder_check k = {.ok = true};
    ladder_magnitudes m;
    if (ladder_case_magnitudes(c, &m) != LADDER_OK) {
        snprintf(k.why, sizeof k.why, "the magnitudes to check against: %s", ladder_last_error());
        k.ok = false;
        k.worst = INFINITY;
        return k;
    }
    for (int i = 0; i < c->algo->n_tensors; i++) {
        if (!got->t[i].data || !want->t[i].data) continue;
        ladder_cmp cmp = ladder_output_compare(&m, i, &got->t[i], &want->t[i], tol);
        double err = cmp.nonfinite_mismatches ? INFINITY : cmp.by_magnitude ? tol * cmp.worst_share : cmp.rel_l2;
        if (err > k.worst) k.worst = err;
        if (!cmp.ok && k.ok) {
            int used = snprintf(k.why, sizeof k.why, "%s: ", c->algo->tensors[i].name);
            ladder_cmp_describe(&cmp, k.why + used, sizeof k.why - (size_t)used);
            k.ok = false;
        }
    }
    ladder_magnitudes_free(&m);
    return k;
}

/* ---- .npy by name ---------------------------------------------------------------------------------------------- */

/* DIR/NAME.npy into @p path, refusing an empty directory or a path that does not fit. */
static ladder_status npy_path(const char *dir, const char *name, char *path, size_t n) {
    if (!dir || !*dir) return ladder_fail(LADDER_ERR_ARG, "the directory for %s.npy is empty", name);
    int len = snprintf(path, n, "%s/%s.npy", dir, name);
    if (len < 0 || (size_t)len >= n)
        return ladder_fail(LADDER_ERR_ARG, "the path %s/%s.npy is longer than %zu bytes", dir, name, n - 1);
    return LADDER_OK;
}

/* Where the symlink @p path points, for a message ("?" when it cannot be read). */
static const char *link_target(const char *path) {
    static _Thread_local char target[4096];
    ssize_t len = readlink(path, target, sizeof target - 1);
    snprintf(target + (len > 0 ? len : 0), sizeof target - (size_t)(len > 0 ? len : 0), "%s", len > 0 ? "" : "?");
    return target;
}

/* The file's tensor as f32 (a float tensor) or i32 (an index tensor), replacing @p t. */
static ladder_status to_case_dtype(ladder_tensor *t, bool index, const char *name) {
    ladder_dtype want = index ? LADDER_I32 : LADDER_F32;
    if (t->dtype == want) return LADDER_OK;
    if (ladder_dtype_is_float(t->dtype) == index)
        return ladder_fail(LADDER_ERR_IO, "%s.npy holds %s but must hold %s", name, ladder_dtype_name(t->dtype),
                           index ? "integers (int32 or int64)" : "floats (float32 or float16)");
    int64_t n = ladder_tensor_numel(t);
    for (int64_t i = 0; index && i < n; i++) {
        double v = ladder_tensor_get(t, i);
        if (v < INT32_MIN || v > INT32_MAX)
            return ladder_fail(LADDER_ERR_IO, "%s.npy entry %lld is %.0f, outside the int32 range", name, (long long)i,
                               v);
    }
    ladder_tensor conv;
    ladder_status st = ladder_tensor_alloc(&conv, want, t->rank, t->shape);
    if (st != LADDER_OK) return st;
    convert_flat(t, &conv, n, LADDER_F32);
    ladder_tensor_free(t);
    *t = conv;
    return LADDER_OK;
}

/* Take the sizes a file's shape names (those not yet known) into the problem, each within its param's range. */
static ladder_status sizes_from_file(ladder_case *c, int i, bool *known) {
    const ladder_algo *algo = c->algo;
    const ladder_tensor_spec *s = &algo->tensors[i];
    char names[LADDER_MAX_RANK][16];
    int rank = split_dims(s->dims, names);
    if (c->t[i].rank != rank) {
        char got[96];
        ladder_tensor_shape_str(&c->t[i], got, sizeof got);
        return ladder_fail(LADDER_ERR_SHAPE, "%s.npy has shape %s but %s is [%s]", s->name, got, s->name, s->dims);
    }
    for (int d = 0; d < rank; d++) {
        int p = ladder_algo_param(algo, names[d]);
        if (p < 0 || known[p]) continue; /* a derived size, or one an earlier file gave: the dispatcher compares */
        const ladder_param *par = &algo->params[p];
        int64_t v = c->t[i].shape[d];
        if (v < par->lo || v > par->hi)
            return ladder_fail(LADDER_ERR_ARG, "%s.npy has %s = %lld (dimension %d) but %s must be in %.0f..%.0f",
                               s->name, par->name, (long long)v, d, par->name, par->lo, par->hi);
        ladder_param_set(algo, c->problem, p, (double)v);
        known[p] = true;
    }
    return LADDER_OK;
}

ladder_status ladder_case_read_dir(ladder_case *c, const ladder_algo *algo, const char *dir, const void *options) {
    memset(c, 0, sizeof *c);
    c->algo = algo;
    memcpy(c->problem, options, algo->problem_size);
    bool known[LADDER_MAX_PARAMS] = {false};
    c->backward = true;
    ladder_status st = LADDER_OK;
    for (int i = 0; i < algo->n_tensors && st == LADDER_OK; i++) {
        const ladder_tensor_spec *s = &algo->tensors[i];
        if (!is_input(s)) continue;
        char path[4096];
        st = npy_path(dir, s->name, path, sizeof path);
        if (st != LADDER_OK) break;
        struct stat sb;
        /* lstat: a symlink whose target is gone is not an absent file but a broken one, and says so */
        bool exists = lstat(path, &sb) == 0;
        if (!exists && errno == ENOENT && ((s->role & (LADDER_OPTIONAL | LADDER_IN_BWD)))) {
            if ((s->role & LADDER_IN_BWD) && !(s->role & LADDER_OPTIONAL)) c->backward = false;
            continue; /* absent: any other failure to open is the reader's to report */
        }
        if (exists && S_ISLNK(sb.st_mode) && stat(path, &sb) != 0) {
            st = ladder_fail(LADDER_ERR_IO, "%s.npy is a symlink to %s, which cannot be opened: %s", s->name,
                             link_target(path), strerror(errno));
            break;
        }
        st = ladder_npy_read(path, &c->buf[i]);
        if (st == LADDER_OK) st = to_case_dtype(&c->buf[i], s->role & LADDER_INDEX, s->name);
        if (st == LADDER_OK && (s->role & LADDER_INDEX) && algo->varlen_dim &&
            (c->buf[i].rank != 1 || c->buf[i].shape[0] < 2)) { /* cu_seqlens: an algorithm's other index tensors
                                                                   are checked by its dispatcher */
            char got[96];
            ladder_tensor_shape_str(&c->buf[i], got, sizeof got);
            st = ladder_fail(LADDER_ERR_ARG, "%s.npy has shape %s but %s is [N+1]: 0, then where each of N >= 1 "
                             "sequences ends", s->name, got, s->name);
        }
        if (st != LADDER_OK) break;
        c->t[i] = c->buf[i];
        c->present |= 1u << i;
        /* a broadcast input's 1s name no size: the other inputs give them, and the dispatcher checks it against those */
        if (!(s->role & (LADDER_INDEX | LADDER_BROADCAST))) st = sizes_from_file(c, i, known);
    }
    if (st != LADDER_OK) {
        ladder_case_free(c);
        return st;
    }
    c->present = outputs_present(algo, c->present, ~0u, 0);
    return LADDER_OK;
}

/* Append a formatted line to @p buf (cut at its end). */
static void append_line(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append_line(char *buf, size_t n, const char *fmt, ...) {
    size_t used = strlen(buf);
    if (used + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + used, n - used, fmt, ap);
    va_end(ap);
    used += k > 0 ? (size_t)k : 0;
    if (used + 1 < n) strcat(buf, "\n");
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

ladder_status ladder_case_dir_warnings(const ladder_case *c, const char *dir, char *buf, size_t n) {
    const ladder_algo *algo = c->algo;
    if (n) buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) return ladder_fail(LADDER_ERR_IO, "cannot list %s: %s", dir, strerror(errno));
    enum { MAX_NAMED = 64 };
    char *unread[MAX_NAMED];
    int n_unread = 0, more = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= 4 || strcmp(e->d_name + len - 4, ".npy") != 0) continue;
        char stem[256];
        snprintf(stem, sizeof stem, "%.*s", (int)(len - 4), e->d_name);
        if (ladder_algo_tensor(algo, stem) >= 0) continue; /* an input it reads, or an output it writes */
        if (n_unread == MAX_NAMED || !(unread[n_unread] = strdup(e->d_name))) more++;
        else n_unread++;
    }
    closedir(d);
    qsort(unread, (size_t)n_unread, sizeof unread[0], compare_names); /* readdir's order is the file system's */
    char reads[512] = "";
    for (int i = 0; i < algo->n_tensors; i++)
        if (is_input(&algo->tensors[i]))
            snprintf(reads + strlen(reads), sizeof reads - strlen(reads), "%s%s", reads[0] ? ", " : "",
                     algo->tensors[i].name);
    for (int i = 0; i < n_unread; i++) {
        append_line(buf, n, "%s does not read %s (its inputs: %s)", algo->name, unread[i], reads);
        free(unread[i]);
    }
    if (more) append_line(buf, n, "%s does not read %d more .npy files there", algo->name, more);
    if (!c->backward) { /* a backward input read without the one the backward cannot run without */
        char needed[256] = "";
        for (int i = 0; i < algo->n_tensors; i++) {
            unsigned role = algo->tensors[i].role;
            if ((role & LADDER_IN_BWD) && !(role & LADDER_OPTIONAL))
                snprintf(needed + strlen(needed), sizeof needed - strlen(needed), "%s%s.npy", needed[0] ? " and " : "",
                         algo->tensors[i].name);
        }
        for (int i = 0; i < algo->n_tensors; i++)
            if ((algo->tensors[i].role & LADDER_IN_BWD) && c->t[i].data)
                append_line(buf, n, "%s.npy is not used: without %s only the forward runs", algo->tensors[i].name,
                            needed);
    }
    return LADDER_OK;
}

/* mkdir -p */
static ladder_status make_dirs(const char *dir) {
    char path[4096];
    if (!dir || !*dir) return ladder_fail(LADDER_ERR_ARG, "the output directory is empty");
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return ladder_fail(LADDER_ERR_ARG, "the output directory %s is longer than %zu bytes", dir, sizeof path - 1);
    for (char *p = path + 1;; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
                return ladder_fail(LADDER_ERR_IO, "cannot create %s: %s", path, strerror(errno));
            if (end) break;
            *p = '/';
        }
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return ladder_fail(LADDER_ERR_IO, "%s is not a directory", dir);
    return LADDER_OK;
}

/*
 * @p t as float32 .npy in a new file beside @p path (".NAME.npy.XXXXXX" in the same directory, so that rename()
 * can put it in place), flushed to the disk; its name into @p tmp.
 */
static ladder_status write_temp(const char *path, const char *name, const ladder_tensor *t, char *tmp, size_t n) {
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) : 0;
    int len = snprintf(tmp, n, "%.*s%s.%s.npy.XXXXXX", dir_len, path, slash ? "/" : "", name);
    if (len < 0 || (size_t)len >= n) return ladder_fail(LADDER_ERR_ARG, "the path %s is too long", path);
    int fd = mkstemp(tmp); /* a new file, never an existing one or a symlink's target */
    if (fd < 0) {
        tmp[0] = '\0';
        return ladder_fail(LADDER_ERR_IO, "cannot create a file beside %s: %s", path, strerror(errno));
    }
    /* mkstemp makes it 0600; an output is as readable as one fopen() would have made under the usual umask */
    FILE *f = fchmod(fd, 0644) == 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        close(fd);
        return ladder_fail(LADDER_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    }
    ladder_tensor f32 = {0};
    ladder_status st = LADDER_OK;
    if (t->dtype != LADDER_F32 && ladder_dtype_is_float(t->dtype)) {
        st = ladder_tensor_alloc(&f32, LADDER_F32, t->rank, t->shape);
        if (st == LADDER_OK) convert_flat(t, &f32, ladder_tensor_numel(&f32), LADDER_F32);
    }
    if (st == LADDER_OK) st = ladder_npy_write_stream(f, path, f32.data ? &f32 : t);
    ladder_tensor_free(&f32);
    /* a full disk may show only when the buffers reach it: at fflush, fsync or fclose */
    bool flushed = fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0) flushed = false;
    if (st == LADDER_OK && !flushed) st = ladder_fail(LADDER_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return st;
}

ladder_status ladder_result_write_dir(const ladder_case *c, const ladder_result *r, const char *dir, char *written,
                                      size_t n) {
    ladder_status st = make_dirs(dir);
    char tmp[LADDER_MAX_TENSORS][4096 + 16];
    size_t used = 0;
    if (n) written[0] = '\0';
    for (int i = 0; i < c->algo->n_tensors; i++) tmp[i][0] = '\0';
    for (int i = 0; i < c->algo->n_tensors && st == LADDER_OK; i++) {
        char path[4096];
        if (!r->t[i].data) continue;
        st = npy_path(dir, c->algo->tensors[i].name, path, sizeof path);
        if (st == LADDER_OK) st = write_temp(path, c->algo->tensors[i].name, &r->t[i], tmp[i], sizeof tmp[i]);
    }
    /* a directory where an output goes would fail its rename after the others had taken their places */
    for (int i = 0; i < c->algo->n_tensors && st == LADDER_OK; i++) {
        char path[4096];
        struct stat sb;
        if (tmp[i][0] && npy_path(dir, c->algo->tensors[i].name, path, sizeof path) == LADDER_OK &&
            lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            st = ladder_fail(LADDER_ERR_IO, "%s is a directory, so the output cannot be written there", path);
    }
    /* every output is complete: now each takes its name (rename replaces a symlink there, not its target) */
    for (int i = 0; i < c->algo->n_tensors; i++) {
        if (!tmp[i][0]) continue;
        char path[4096];
        if (st == LADDER_OK) st = npy_path(dir, c->algo->tensors[i].name, path, sizeof path);
        if (st == LADDER_OK && rename(tmp[i], path) != 0)
            st = ladder_fail(LADDER_ERR_IO, "cannot rename %s to %s: %s", tmp[i], path, strerror(errno));
        if (st != LADDER_OK) {
            unlink(tmp[i]);
            continue;
        }
        if (used < n) {
            int k = snprintf(written + used, n - used, "%s\n", path);
            used += k > 0 ? (size_t)k : 0;
        }
    }
    return st;
}

ladder_status ladder_run_tc_reference(const ladder_case *c, ladder_dtype dtype, ladder_result *r) {
    memset(r, 0, sizeof *r);
    if (dtype != LADDER_BF16 && dtype != LADDER_F16)
        return ladder_fail(LADDER_ERR_ARG, "the tensor-core reference takes bf16 or f16, not %s",
                           ladder_dtype_name(dtype));
    ladder_case rounded;
    ladder_status st = ladder_case_rounded(c, dtype, &rounded);
    if (st != LADDER_OK) return st;
    const ladder_run_opts once = {.emulate = dtype};
    st = ladder_run(LADDER_RUNG_CPU, LADDER_F32, &rounded, &once, r);
    ladder_case_free(&rounded);
    return st;
}

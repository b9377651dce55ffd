/*
 * cpu/recurrent.c: gated linear attention as a recurrence, the CPU rung.
 *
 * The math, written to be read: one K x V state per (sequence, head), updated token by token. Different
 * (sequence, head) pairs never meet, so one OpenMP loop over them covers both passes; each thread owns its
 * state, its outputs, and every sum runs in the same order every time, so results are bitwise repeatable.
 *
 * The backward never stores a state. A first pass runs the forward again and gives dq (which needs S_t); a
 * second pass runs backwards carrying dS, the gradient of the loss with respect to the state, and gives dk, dv
 * and dh0. The gate gradients come from reverse cumulative sums, accumulated in double, of q*dq - k*dk (rows)
 * and o*do - v*dv (columns), each split so that no step subtracts two nearly equal numbers when the decay is
 * strong (backward_pass1; the chapter derives both).
 *
 * Preconditions: validated by ladder_recurrent_fwd/bwd (f32, host pointers, any input strides, contiguous
 * outputs).
 * Run it:  build/bin/ladder run recurrent --rung cpu
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "recurrent_rungs.h"
#include "vec_math.h"

/* Element [b,t,h,i] of a rank-4 input (rank 3: [b,t,h]; rank 1: [h]), any strides; 0 when the tensor is absent. */
static float at(const ladder_tensor *x, int64_t b, int64_t t, int64_t h, int64_t i) {
    if (!x->data) return 0.0f;
    const int64_t *s = x->strides;
    if (x->rank == 1) return ((const float *)x->data)[h * s[0]];
    int64_t off = b * s[0] + t * s[1] + h * s[2] + (x->rank == 4 ? i * s[3] : 0);
    return ((const float *)x->data)[off];
}

/* One (sequence, head): its batch row, its tokens [start, start + len), the order they run in, its state slot. */
typedef struct seq {
    int64_t b, start, len, n, h;
    bool reverse;
} seq;

/* The token of step s (steps count 0..len-1 in the order the recurrence runs). */
static int64_t token(const seq *s, int64_t step) { return s->reverse ? s->start + s->len - 1 - step : s->start + step; }

static seq seq_of(const ladder_recurrent_problem *p, const ladder_recurrent_args *a, int64_t nh) {
    seq s = {.n = nh / p->H, .h = nh % p->H, .reverse = p->reverse};
    if (a->cu_seqlens.data) {
        const int32_t *cu = a->cu_seqlens.data;
        s.b = 0, s.start = cu[s.n], s.len = cu[s.n + 1] - cu[s.n];
    } else {
        s.b = s.n, s.start = 0, s.len = p->T;
    }
    return s;
}

/* Per-thread rows of one step, gathered from the strided inputs: q, k, gk [K] and v, gv, do [V]. */
typedef struct rows {
    float *q, *k, *gk, *v, *gv, *dO, *dec, *S; /* dec: one row's decays [V]; S: the K x V state, row-major */
} rows;

static bool rows_alloc(rows *r, int64_t K, int64_t V) {
    float *m = malloc((size_t)(3 * K + 4 * V + K * V) * sizeof *m);
    *r = (rows){m, m + K, m + 2 * K, m + 3 * K, m + 3 * K + V, m + 3 * K + 2 * V, m + 3 * K + 3 * V,
                m + 3 * K + 4 * V};
    return m != NULL;
}

/*
 * The decays of row i, exp(g + g_gamma + gk[i] + gv[j]) for every j, into r->dec: with gv one exponential per
 * entry (the sum formed first, so that neither factor can overflow alone), in vector instructions
 * (common/vec_math.h), without it one per row. The loops that use them are then plain multiply-adds, which the
 * compiler vectorizes.
 */
static const float *row_decays(rows *r, int64_t i, int64_t V, bool has_gv) {
    if (has_gv) {
#pragma omp simd
        for (int64_t j = 0; j < V; j++) r->dec[j] = ladder_expf(r->gk[i] + r->gv[j]);
        return r->dec;
    }
    const float row = expf(r->gk[i]);
    for (int64_t j = 0; j < V; j++) r->dec[j] = row;
    return r->dec;
}

/* Row [b,t,h,:] of a rank-4 input into dst[n] (zeros where the tensor is absent). */
static void gather_row(float *dst, const ladder_tensor *x, int64_t b, int64_t t, int64_t h, int64_t n) {
    if (!x->data) {
        for (int64_t e = 0; e < n; e++) dst[e] = 0.0f;
        return;
    }
    const int64_t *st = x->strides;
    const float *src = (const float *)x->data + b * st[0] + t * st[1] + h * st[2];
    if (st[3] == 1) memcpy(dst, src, (size_t)n * sizeof *dst);
    else
        for (int64_t e = 0; e < n; e++) dst[e] = src[e * st[3]];
}

static void gather(rows *r, const ladder_recurrent_problem *p, const ladder_recurrent_args *a, const seq *s,
                   int64_t t, bool backward) {
    gather_row(r->q, &a->q, s->b, t, s->h, p->K);
    gather_row(r->k, &a->k, s->b, t, s->h, p->K);
    gather_row(r->gk, &a->gk, s->b, t, s->h, p->K);
    const float g = at(&a->g, s->b, t, s->h, 0), g_gamma = at(&a->g_gamma, 0, 0, s->h, 0);
    for (int64_t i = 0; i < p->K; i++) r->gk[i] = r->gk[i] + g + g_gamma;
    gather_row(r->v, &a->v, s->b, t, s->h, p->V);
    gather_row(r->gv, &a->gv, s->b, t, s->h, p->V);
    if (backward) gather_row(r->dO, &a->do_, s->b, t, s->h, p->V);
}

/* S_t = exp(g + g_gamma + gk[i] + gv[j]) * S_{t-1} + k v^T, with the scalar gates already folded into r->gk. */
static void decay_and_add(rows *r, int64_t K, int64_t V, bool has_gv) {
    for (int64_t i = 0; i < K; i++) {
        float *Si = r->S + i * V;
        const float *decay = row_decays(r, i, V, has_gv);
#pragma omp simd
        for (int64_t j = 0; j < V; j++) Si[j] = decay[j] * Si[j] + r->k[i] * r->v[j];
    }
}

/* The state slot [n,h] of an [N,H,K,V] tensor (contiguous for outputs; h0 and dht any strides). */
static void load_state(float *S, const ladder_tensor *x, const seq *s, int64_t K, int64_t V) {
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < V; j++) S[i * V + j] = x->data ? at(x, s->n, s->h, i, j) : 0.0f;
}

ladder_status recurrent_fwd_cpu(const ladder_recurrent_problem *p, const ladder_recurrent_args *a) {
    const int64_t K = p->K, V = p->V, H = p->H, N = a->cu_seqlens.data ? a->cu_seqlens.shape[0] - 1 : p->B;
    const float scale = (float)ladder_recurrent_scale(p);
    float *o = a->o.data, *ht = a->ht.data; /* [B,T,H,V], [N,H,K,V], contiguous */
    int failed = 0;

#pragma omp parallel for schedule(dynamic) reduction(| : failed)
    for (int64_t nh = 0; nh < N * H; nh++) {
        rows r;
        if (!rows_alloc(&r, K, V)) {
            failed = 1;
            continue;
        }
        seq s = seq_of(p, a, nh);
        load_state(r.S, &a->h0, &s, K, V); /* S_0 = h0[n,h], or 0 */
        for (int64_t step = 0; step < s.len; step++) {
            int64_t t = token(&s, step);
            gather(&r, p, a, &s, t, false);
            decay_and_add(&r, K, V, a->gv.data != NULL);
            /* o_t[j] = scale * sum_i q_t[i] S_t[i,j] */
            float *ot = o + ((s.b * p->T + t) * H + s.h) * V;
            for (int64_t j = 0; j < V; j++) ot[j] = 0.0f;
            for (int64_t i = 0; i < K; i++)
#pragma omp simd
                for (int64_t j = 0; j < V; j++) ot[j] += r.q[i] * r.S[i * V + j];
            for (int64_t j = 0; j < V; j++) ot[j] *= scale;
        }
        if (ht) memcpy(ht + nh * K * V, r.S, (size_t)(K * V) * sizeof *ht);
        free(r.q);
    }
    return failed ? ladder_fail(LADDER_ERR_NOMEM, "cannot allocate a state of %lld x %lld floats", (long long)K,
                                (long long)V)
                  : LADDER_OK;
}

/*
 * Pass 1 of the backward: the forward again. Split each step as S_t = P + k_t v_t^T with P = D_t * S_{t-1} (the
 * decayed old state), and write dq_t = scale * S_t do_t = scale * P do_t + scale * k_t (v_t . do_t). The gate
 * gradients need the first half of each side on its own, row by row and column by column,
 *     rq[step][i] = q_t[i] * scale * (P do_t)[i],   co[step][j] = do_t[j] * scale * (P^T q_t)[j],
 * because q*dq - k*dk summed that way never subtracts two large numbers (see pass 2). Leaves ht in r->S.
 */
static void backward_pass1(rows *r, const ladder_recurrent_problem *p, const ladder_recurrent_args *a, const seq *s,
                           float scale, double *rq, double *co) {
    const int64_t K = p->K, V = p->V, H = p->H;
    load_state(r->S, &a->h0, s, K, V);
    for (int64_t step = 0; step < s->len; step++) {
        int64_t t = token(s, step);
        gather(r, p, a, s, t, true);
        float *dq = (float *)a->dq.data + ((s->b * p->T + t) * H + s->h) * K;
        float v_do = 0.0f;
        for (int64_t j = 0; j < V; j++) v_do += r->v[j] * r->dO[j];
        for (int64_t i = 0; i < K; i++) {
            const float *decay = row_decays(r, i, V, a->gv.data != NULL);
#pragma omp simd
            for (int64_t j = 0; j < V; j++) r->S[i * V + j] *= decay[j]; /* now P */
        }
        for (int64_t i = 0; i < K; i++) {
            double Pdo = 0.0;
#pragma omp simd reduction(+ : Pdo)
            for (int64_t j = 0; j < V; j++) Pdo += (double)r->S[i * V + j] * r->dO[j];
            rq[step * K + i] = (double)r->q[i] * scale * Pdo;
            dq[i] = scale * ((float)Pdo + r->k[i] * v_do);
        }
        for (int64_t j = 0; co && j < V; j++) {
            double Pq = 0.0;
            for (int64_t i = 0; i < K; i++) Pq += (double)r->S[i * V + j] * r->q[i];
            co[step * V + j] = (double)r->dO[j] * scale * Pq;
        }
        for (int64_t i = 0; i < K; i++)
#pragma omp simd
            for (int64_t j = 0; j < V; j++) r->S[i * V + j] += r->k[i] * r->v[j];
    }
}

/* What pass 2 leaves for pass 3, per step (double, so that the long sums keep their digits). */
typedef struct gate_sums {
    double *rk, *rv, *rg; /* [len,K], [len,V], [len]: reverse cumulative sums of the do-part, through each step */
    double *zk, *zv, *zg; /* [len,K], [len,V], [len]: each step's dht-part term c_u, summed forwards in pass 3 */
    double *z0k, *z0v;    /* [K], [V]: the dht-part of h0's term, where the forward sums start */
} gate_sums;

/*
 * Pass 2: from the last step to the first. dS = dL/dS_t is carried in two parts, dS = dSP + dSZ: dSZ is dht
 * decayed back to step t (dSZ_t = D_{t+1} * ... * D_L * dht), dSP is everything the outputs o contributed:
 *     in the forward, S_t = D_t * S_{t-1} + k_t v_t^T and o_t = scale * S_t^T q_t, so
 *     dSP_t = E + scale * q_t do_t^T with E = D_{t+1} * dSP_{t+1} (0 after the last step),
 *     dk_t = dS_t v_t,  dv_t = dS_t^T k_t,  dh0 = D_first * dS_first.
 * The gate of step t scales D_t * S_{t-1}, so its gradient is G_t = dS_t . D_t S_{t-1} (summed over the
 * channels it is broadcast along), which the chapter rewrites without S_{t-1}:
 *     G_t = sum_{u >= t} (P_u . scale q_u do_u^T - E_u . k_u v_u^T)      (the do-part: pass 1's rq, co and E)
 *         + dSZ_0 . h0 + sum_{u < t} dSZ_u . k_u v_u^T                    (the dht-part: forwards, pass 3)
 * Every term is small when the decay is strong, so no sum subtracts two large numbers.
 */
static void backward_pass2(rows *r, float *dSZ, const ladder_recurrent_problem *p, const ladder_recurrent_args *a,
                           const seq *s, float scale, const double *rq, const double *co, gate_sums *gs,
                           double *col) {
    const int64_t K = p->K, V = p->V, H = p->H, T = p->T;
    const bool has_dht = a->dht.data != NULL;
    float *dSP = r->S;
    for (int64_t e = 0; e < K * V; e++) dSP[e] = 0.0f;
    load_state(dSZ, &a->dht, s, K, V);
    for (int64_t step = s->len - 1; step >= 0; step--) {
        int64_t t = token(s, step), row = (s->b * T + t) * H + s->h;
        gather(r, p, a, s, t, true);
        float *dk = (float *)a->dk.data + row * K, *dv = (float *)a->dv.data + row * V;
        float v_do = 0.0f, q_k = 0.0f;
        for (int64_t j = 0; j < V; j++) v_do += r->v[j] * r->dO[j];
        for (int64_t i = 0; i < K; i++) q_k += r->q[i] * r->k[i];
        double sum_a = 0, sum_z = 0, *Ek = col, *Zk = col + V; /* column sums of E and dSZ against k_t */
        for (int64_t j = 0; j < V; j++) Ek[j] = 0, Zk[j] = 0;
        for (int64_t i = 0; i < K; i++) {
            double Ev = 0.0, Zv = 0.0;
#pragma omp simd reduction(+ : Ev)
            for (int64_t j = 0; j < V; j++) Ev += (double)dSP[i * V + j] * r->v[j];
            if (has_dht)
#pragma omp simd reduction(+ : Zv)
                for (int64_t j = 0; j < V; j++) Zv += (double)dSZ[i * V + j] * r->v[j];
            dk[i] = (float)(Ev + Zv) + scale * r->q[i] * v_do;
            double a_i = rq[step * K + i] - (double)r->k[i] * Ev, z_i = (double)r->k[i] * Zv;
            gs->rk[step * K + i] = a_i + (step + 1 < s->len ? gs->rk[(step + 1) * K + i] : 0.0);
            gs->zk[step * K + i] = z_i;
            sum_a += a_i, sum_z += z_i;
            /* the same rows again, for the columns: Ek[j] = sum_i E[i,j] k_t[i], in the order of i */
#pragma omp simd
            for (int64_t j = 0; j < V; j++) Ek[j] += (double)dSP[i * V + j] * r->k[i];
            if (has_dht)
#pragma omp simd
                for (int64_t j = 0; j < V; j++) Zk[j] += (double)dSZ[i * V + j] * r->k[i];
        }
        gs->rg[step] = sum_a + (step + 1 < s->len ? gs->rg[step + 1] : 0.0);
        gs->zg[step] = sum_z;
        for (int64_t j = 0; j < V; j++) {
            dv[j] = (float)(Ek[j] + Zk[j]) + scale * r->dO[j] * q_k;
            if (!co) continue;
            gs->rv[step * V + j] =
                co[step * V + j] - (double)r->v[j] * Ek[j] + (step + 1 < s->len ? gs->rv[(step + 1) * V + j] : 0.0);
            gs->zv[step * V + j] = (double)r->v[j] * Zk[j];
        }
        /* dSP_t = E + scale q do^T; then both parts' share in S_{t-1}: D_t * dS_t */
        for (int64_t i = 0; i < K; i++) {
            const float *decay = row_decays(r, i, V, a->gv.data != NULL);
#pragma omp simd
            for (int64_t j = 0; j < V; j++) dSP[i * V + j] = (dSP[i * V + j] + scale * r->q[i] * r->dO[j]) * decay[j];
            if (has_dht)
#pragma omp simd
                for (int64_t j = 0; j < V; j++) dSZ[i * V + j] *= decay[j];
        }
    }
    /* dh0 = D_first * dS_first, both parts; and h0's share of the dht-part, dSZ_0 . h0 */
    float *dh0 = a->dh0.data ? (float *)a->dh0.data + (s->n * H + s->h) * K * V : NULL;
    for (int64_t i = 0; i < K; i++) gs->z0k[i] = 0;
    for (int64_t j = 0; j < V; j++) gs->z0v[j] = 0;
    for (int64_t i = 0; dh0 && i < K; i++)
        for (int64_t j = 0; j < V; j++) {
            dh0[i * V + j] = dSP[i * V + j] + dSZ[i * V + j];
            double z = has_dht ? (double)dSZ[i * V + j] * at(&a->h0, s->n, s->h, i, j) : 0.0;
            gs->z0k[i] += z, gs->z0v[j] += z;
        }
}

/* Pass 3: forwards, the gate gradients G_t = (do-part from t on) + (dht-part before t). Returns this (sequence,
 * head)'s part of dg_gamma. */
static double backward_pass3(const ladder_recurrent_problem *p, const ladder_recurrent_args *a, const seq *s,
                             gate_sums *gs) {
    const int64_t K = p->K, V = p->V, H = p->H, T = p->T;
    double z_g = 0, dg_gamma = 0;
    for (int64_t i = 0; i < K; i++) z_g += gs->z0k[i]; /* the running dht-parts start at h0's */
    for (int64_t step = 0; step < s->len; step++) {
        int64_t row = (s->b * T + token(s, step)) * H + s->h;
        for (int64_t i = 0; a->gk.data && i < K; i++) {
            ((float *)a->dgk.data)[row * K + i] = (float)(gs->rk[step * K + i] + gs->z0k[i]);
            gs->z0k[i] += gs->zk[step * K + i];
        }
        for (int64_t j = 0; a->gv.data && j < V; j++) {
            ((float *)a->dgv.data)[row * V + j] = (float)(gs->rv[step * V + j] + gs->z0v[j]);
            gs->z0v[j] += gs->zv[step * V + j];
        }
        double dg = gs->rg[step] + z_g;
        if (a->g.data) ((float *)a->dg.data)[row] = (float)dg;
        dg_gamma += dg;
        z_g += gs->zg[step];
    }
    return dg_gamma;
}

ladder_status recurrent_bwd_cpu(const ladder_recurrent_problem *p, const ladder_recurrent_args *a) {
    const int64_t K = p->K, V = p->V, H = p->H, N = a->cu_seqlens.data ? a->cu_seqlens.shape[0] - 1 : p->B;
    const float scale = (float)ladder_recurrent_scale(p);
    double *dg_gamma = calloc((size_t)(N * H), sizeof *dg_gamma); /* per (sequence, head), summed below in order */
    if (!dg_gamma) return ladder_fail(LADDER_ERR_NOMEM, "cannot allocate %lld partial sums", (long long)(N * H));
    int failed = 0;

#pragma omp parallel for schedule(dynamic) reduction(| : failed)
    for (int64_t nh = 0; nh < N * H; nh++) {
        rows r;
        seq s = seq_of(p, a, nh);
        const int64_t L = s.len, nv = a->gv.data ? V : 0; /* column sums only with gv */
        /* pass 1 -> 2: rq [L,K], co [L,nv]; pass 2 -> 3: gate_sums; column sums [2V]; the dht-part tile dSZ [K,V] */
        int64_t n_doubles = L * K + L * nv + 2 * (L * K + L * nv + L) + K + V + 2 * V;
        double *m = malloc((size_t)n_doubles * sizeof *m);
        float *dSZ = malloc((size_t)(K * V) * sizeof *dSZ);
        if (!m || !dSZ || !rows_alloc(&r, K, V)) {
            free(m), free(dSZ);
            failed = 1;
            continue;
        }
        double *rq = m, *co = m + L * K;
        gate_sums gs;
        gs.rk = co + L * nv, gs.rv = gs.rk + L * K, gs.rg = gs.rv + L * nv;
        gs.zk = gs.rg + L, gs.zv = gs.zk + L * K, gs.zg = gs.zv + L * nv;
        gs.z0k = gs.zg + L, gs.z0v = gs.z0k + K;
        double *col = gs.z0v + V; /* [2V]: pass 2's column sums */
        backward_pass1(&r, p, a, &s, scale, rq, nv ? co : NULL);
        backward_pass2(&r, dSZ, p, a, &s, scale, rq, nv ? co : NULL, &gs, col);
        dg_gamma[nh] = backward_pass3(p, a, &s, &gs);
        free(r.q), free(m), free(dSZ);
    }
    if (!failed && a->dg_gamma.data)
        for (int64_t h = 0; h < H; h++) {
            double sum = 0;
            for (int64_t n = 0; n < N; n++) sum += dg_gamma[n * H + h];
            ((float *)a->dg_gamma.data)[h] = (float)sum;
        }
    free(dg_gamma);
    return failed ? ladder_fail(LADDER_ERR_NOMEM, "cannot allocate a state of %lld x %lld floats", (long long)K,
                                (long long)V)
                  : LADDER_OK;
}

/*
 * tests/oracle/recurrent_oracle.c: the recurrence in float64, every state kept.
 *
 * Forward (common/recurrent.h), per sequence n and head h, steps s = 1..L in the order the recurrence runs
 * (token t(s)):
 *     logD_s[i,j] = g + g_gamma + gk[i] + gv[j]           (absent gates are 0)
 *     S_s = exp(logD_s) * S_{s-1} + k v^T,   S_0 = h0 or 0
 *     o[t(s)] = scale * S_s^T q
 *
 * The backward is the adjoint of those statements, last step first, with dS = dL/dS_s:
 *     dS_L = dht (or 0);  at each step dS += scale * q do^T (from o), then
 *     dk[i] = sum_j dS[i,j] v[j],  dv[j] = sum_i dS[i,j] k[i]          (from + k v^T)
 *     dlogD[i,j] = dS[i,j] * exp(logD[i,j]) * S_{s-1}[i,j]              (from exp(logD) * S_{s-1})
 *     dS = exp(logD) * dS                                                (now dL/dS_{s-1})
 * and each gate's gradient sums dlogD over the indices it is broadcast along. dh0 = the final dS.
 */
#include "recurrent_oracle.h"

#include <math.h>
#include <stdlib.h>

/* C-order indices: [B,T,H,K], [B,T,H,V], [B,T,H], [N,H,K,V]. */
#define IK(b, t, h, i) ((((b) * p->T + (t)) * p->H + (h)) * p->K + (i))
#define IV(b, t, h, j) ((((b) * p->T + (t)) * p->H + (h)) * p->V + (j))
#define IG(b, t, h) (((b) * p->T + (t)) * p->H + (h))
#define IS(n, h, i, j) ((((n) * p->H + (h)) * p->K + (i)) * p->V + (j))

static double gate(const double *x, int64_t i) { return x ? x[i] : 0.0; }

/* The batch row, first token and length of sequence n. */
static void sequence(const ladder_recurrent_problem *p, const int32_t *cu, int64_t n, int64_t *b, int64_t *start,
                     int64_t *len) {
    *b = cu ? 0 : n;
    *start = cu ? cu[n] : 0;
    *len = cu ? cu[n + 1] - cu[n] : p->T;
}

static int64_t token(const ladder_recurrent_problem *p, int64_t start, int64_t len, int64_t s) {
    return p->reverse ? start + len - s : start + s - 1; /* s = 1..len */
}

static double log_decay(const ladder_recurrent_problem *p, const recurrent_oracle_tensors *x, int64_t b, int64_t t,
                        int64_t h, int64_t i, int64_t j) {
    return gate(x->g, IG(b, t, h)) + gate(x->g_gamma, h) + gate(x->gk, IK(b, t, h, i)) + gate(x->gv, IV(b, t, h, j));
}

/* Run sequence n, head h forward, keeping S_0..S_len in S [(len+1) x K x V]. */
static void run_states(const ladder_recurrent_problem *p, const recurrent_oracle_tensors *x, int64_t n, int64_t h,
                       int64_t b, int64_t start, int64_t len, double *S) {
    const int64_t K = p->K, V = p->V;
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < V; j++) S[i * V + j] = x->h0 ? x->h0[IS(n, h, i, j)] : 0.0;
    for (int64_t s = 1; s <= len; s++) {
        int64_t t = token(p, start, len, s);
        for (int64_t i = 0; i < K; i++)
            for (int64_t j = 0; j < V; j++)
                S[(s * K + i) * V + j] = exp(log_decay(p, x, b, t, h, i, j)) * S[((s - 1) * K + i) * V + j] +
                                         x->k[IK(b, t, h, i)] * x->v[IV(b, t, h, j)];
    }
}

static int64_t n_sequences(const ladder_recurrent_problem *p, const int32_t *cu, int n_seqs) {
    return cu ? n_seqs : p->B;
}

void recurrent_oracle_fwd(const ladder_recurrent_problem *p, const int32_t *cu, int n_seqs,
                          const recurrent_oracle_tensors *x) {
    const int64_t K = p->K, V = p->V;
    const double scale = ladder_recurrent_scale(p);
    for (int64_t n = 0; n < n_sequences(p, cu, n_seqs); n++)
        for (int64_t h = 0; h < p->H; h++) {
            int64_t b, start, len;
            sequence(p, cu, n, &b, &start, &len);
            double *S = malloc((size_t)((len + 1) * K * V) * sizeof *S);
            if (!S) abort(); /* a test helper: the suite reports the crash */
            run_states(p, x, n, h, b, start, len, S);
            for (int64_t s = 1; s <= len; s++) {
                int64_t t = token(p, start, len, s);
                for (int64_t j = 0; j < V; j++) {
                    double sum = 0;
                    for (int64_t i = 0; i < K; i++) sum += x->q[IK(b, t, h, i)] * S[(s * K + i) * V + j];
                    x->o[IV(b, t, h, j)] = scale * sum;
                }
            }
            for (int64_t i = 0; x->ht && i < K; i++)
                for (int64_t j = 0; j < V; j++) x->ht[IS(n, h, i, j)] = S[(len * K + i) * V + j];
            free(S);
        }
}

void recurrent_oracle_bwd(const ladder_recurrent_problem *p, const int32_t *cu, int n_seqs,
                          const recurrent_oracle_tensors *x) {
    const int64_t K = p->K, V = p->V;
    const double scale = ladder_recurrent_scale(p);
    /* the gate gradients are sums over broadcast indices: start them at 0 (tokens of no sequence keep 0) */
    for (int64_t e = 0; e < p->B * p->T * p->H; e++) {
        if (x->dg) x->dg[e] = 0;
        for (int64_t i = 0; x->dgk && i < K; i++) x->dgk[e * K + i] = 0;
        for (int64_t j = 0; x->dgv && j < V; j++) x->dgv[e * V + j] = 0;
    }
    for (int64_t h = 0; x->dg_gamma && h < p->H; h++) x->dg_gamma[h] = 0;
    for (int64_t n = 0; n < n_sequences(p, cu, n_seqs); n++)
        for (int64_t h = 0; h < p->H; h++) {
            int64_t b, start, len;
            sequence(p, cu, n, &b, &start, &len);
            double *S = malloc((size_t)((len + 1) * K * V) * sizeof *S), *dS = malloc((size_t)(K * V) * sizeof *dS);
            if (!S || !dS) abort();
            run_states(p, x, n, h, b, start, len, S);
            for (int64_t i = 0; i < K; i++)
                for (int64_t j = 0; j < V; j++) dS[i * V + j] = x->dht ? x->dht[IS(n, h, i, j)] : 0.0;
            for (int64_t s = len; s >= 1; s--) {
                int64_t t = token(p, start, len, s);
                /* forward: o[t][j] = scale * sum_i q[t][i] * S_s[i,j] */
                for (int64_t i = 0; i < K; i++) {
                    double dq = 0;
                    for (int64_t j = 0; j < V; j++) {
                        dq += scale * x->do_[IV(b, t, h, j)] * S[(s * K + i) * V + j];
                        dS[i * V + j] += scale * x->q[IK(b, t, h, i)] * x->do_[IV(b, t, h, j)];
                    }
                    x->dq[IK(b, t, h, i)] = dq;
                }
                /* forward: S_s[i,j] = exp(logD[i,j]) * S_{s-1}[i,j] + k[t][i] * v[t][j] */
                for (int64_t i = 0; i < K; i++) x->dk[IK(b, t, h, i)] = 0;
                for (int64_t j = 0; j < V; j++) x->dv[IV(b, t, h, j)] = 0;
                for (int64_t i = 0; i < K; i++)
                    for (int64_t j = 0; j < V; j++) {
                        double d = dS[i * V + j], decay = exp(log_decay(p, x, b, t, h, i, j));
                        x->dk[IK(b, t, h, i)] += d * x->v[IV(b, t, h, j)];
                        x->dv[IV(b, t, h, j)] += d * x->k[IK(b, t, h, i)];
                        double dlog = d * decay * S[((s - 1) * K + i) * V + j];
                        if (x->dg) x->dg[IG(b, t, h)] += dlog;
                        if (x->dg_gamma) x->dg_gamma[h] += dlog;
                        if (x->dgk) x->dgk[IK(b, t, h, i)] += dlog;
                        if (x->dgv) x->dgv[IV(b, t, h, j)] += dlog;
                        dS[i * V + j] = decay * d;
                    }
            }
            for (int64_t i = 0; x->dh0 && i < K; i++)
                for (int64_t j = 0; j < V; j++) x->dh0[IS(n, h, i, j)] = dS[i * V + j];
            free(S);
            free(dS);
        }
}

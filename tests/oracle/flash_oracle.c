/* tests/oracle/flash_oracle.c: the float64 brute-force flash forward and backward (see flash_oracle.h). */
#include "flash_oracle.h"

#include <math.h>
#include <string.h>

/* May query row i see key j (both within a sequence of Lq rows and Lk keys)? The definition, not an interval. */
static int allowed(const ladder_attention_problem *pr, int64_t i, int64_t j, int64_t Lq, int64_t Lk) {
    const ladder_attn_mask *p = &pr->mask;
    const int64_t diag = p->causal == LADDER_CAUSAL_TOP_LEFT ? i : i + Lk - Lq; /* the key on row i's diagonal */
    if (p->causal != LADDER_CAUSAL_NONE && j > diag) return 0;
    if (p->window_left >= 0 && (double)j < (double)diag - (double)p->window_left) return 0; /* no int64 overflow */
    if (p->window_right >= 0 && (double)j > (double)diag + (double)p->window_right) return 0;
    return 1;
}

static double scale_of(const ladder_attention_problem *p) { return p->scale > 0 ? p->scale : 1.0 / sqrt((double)p->D); }

/* The unit s (a batch row, or a packed sequence): its batch row, first query row and key, and lengths. */
typedef struct seq {
    int64_t b, q0, Lq, k0, Lk;
} seq;

static seq seq_of(const ladder_attention_problem *p, const double *cu_q, const double *cu_k, int64_t s) {
    if (!cu_q) return (seq){s, 0, p->Sq, 0, p->Sk};
    return (seq){0, (int64_t)cu_q[s], (int64_t)(cu_q[s + 1] - cu_q[s]), (int64_t)cu_k[s],
                 (int64_t)(cu_k[s + 1] - cu_k[s])};
}

/* s = scale * q_i . k_j; returns S (softcapped) and sets *dS_ds, the softcap's derivative. */
static double score(const ladder_attention_problem *p, const double *qi, const double *kj, double *dS_ds) {
    double s = 0;
    for (int64_t e = 0; e < p->D; e++) s += qi[e] * kj[e];
    s *= scale_of(p);
    if (p->softcap > 0) {
        double t = tanh(s / p->softcap);
        *dS_ds = 1 - t * t;
        return p->softcap * t;
    }
    *dS_ds = 1;
    return s;
}

#define ROWQ(b, h, i) ((((b) * p->Hq + (h)) * p->Sq + (i)))
#define ROWK(b, h, j) ((((b) * p->Hkv + (h)) * p->Sk + (j)))

void flash_oracle_fwd(const ladder_flash_problem *fp, const double *cu_q, const double *cu_k, int n_seqs,
                      const double *q, const double *k, const double *v, double *o, double *lse) {
    const ladder_attention_problem *p = &fp->attn;
    const int64_t units = cu_q ? n_seqs : p->B, D = p->D, Dv = p->Dv;
    for (int64_t s = 0; s < units; s++) {
        seq u = seq_of(p, cu_q, cu_k, s);
        for (int64_t h = 0; h < p->Hq; h++) {
            int64_t hk = h / (p->Hq / p->Hkv);
            for (int64_t i = 0; i < u.Lq; i++) {
                int64_t r = ROWQ(u.b, h, u.q0 + i);
                double m = -INFINITY, l = 0, unused;
                for (int64_t j = 0; j < u.Lk; j++)
                    if (allowed(p, i, j, u.Lq, u.Lk))
                        m = fmax(m, score(p, q + r * D, k + ROWK(u.b, hk, u.k0 + j) * D, &unused));
                for (int64_t e = 0; e < Dv; e++) o[r * Dv + e] = 0;
                for (int64_t j = 0; j < u.Lk; j++) {
                    if (!allowed(p, i, j, u.Lq, u.Lk)) continue;
                    double w = exp(score(p, q + r * D, k + ROWK(u.b, hk, u.k0 + j) * D, &unused) - m);
                    l += w;
                    for (int64_t e = 0; e < Dv; e++) o[r * Dv + e] += w * v[ROWK(u.b, hk, u.k0 + j) * Dv + e];
                }
                for (int64_t e = 0; l > 0 && e < Dv; e++) o[r * Dv + e] /= l;
                lse[r] = l > 0 ? m + log(l) : -INFINITY; /* a row that sees no key: o = 0, lse = -inf */
            }
        }
    }
}

void flash_oracle_bwd(const ladder_flash_problem *fp, const double *cu_q, const double *cu_k, int n_seqs,
                      const double *q, const double *k, const double *v, const double *o, const double *lse,
                      const double *dout, const double *dlse, double *dq, double *dk, double *dv) {
    const ladder_attention_problem *p = &fp->attn;
    const int64_t units = cu_q ? n_seqs : p->B, D = p->D, Dv = p->Dv;
    const double scale = scale_of(p);
    memset(dq, 0, (size_t)(p->B * p->Hq * p->Sq * D) * sizeof *dq);
    memset(dk, 0, (size_t)(p->B * p->Hkv * p->Sk * D) * sizeof *dk);
    memset(dv, 0, (size_t)(p->B * p->Hkv * p->Sk * Dv) * sizeof *dv);
    for (int64_t s = 0; s < units; s++) {
        seq u = seq_of(p, cu_q, cu_k, s);
        for (int64_t h = 0; h < p->Hq; h++) {
            int64_t hk = h / (p->Hq / p->Hkv);
            for (int64_t i = 0; i < u.Lq; i++) {
                int64_t r = ROWQ(u.b, h, u.q0 + i);
                /* loss = sum(o * do) + sum(lse * dlse); d lse_i / d S_ij = P_ij and d o_i / d S_ij = P_ij (V_j - o_i),
                 * so d loss / d S_ij = P_ij (dO_i . V_j - Delta_i) with Delta_i = dO_i . o_i - dlse_i */
                double Delta = dlse ? -dlse[r] : 0;
                for (int64_t e = 0; e < Dv; e++) Delta += dout[r * Dv + e] * o[r * Dv + e];
                for (int64_t j = 0; j < u.Lk; j++) {
                    if (!allowed(p, i, j, u.Lq, u.Lk)) continue;
                    int64_t c = ROWK(u.b, hk, u.k0 + j);
                    double dS_ds, S = score(p, q + r * D, k + c * D, &dS_ds), P = exp(S - lse[r]), dP = 0;
                    for (int64_t e = 0; e < Dv; e++) dP += dout[r * Dv + e] * v[c * Dv + e];
                    double ds = P * (dP - Delta) * dS_ds * scale; /* d loss / d (q_i . k_j) */
                    for (int64_t e = 0; e < D; e++) {
                        dq[r * D + e] += ds * k[c * D + e];
                        dk[c * D + e] += ds * q[r * D + e];
                    }
                    for (int64_t e = 0; e < Dv; e++) dv[c * Dv + e] += P * dout[r * Dv + e];
                }
            }
        }
    }
}

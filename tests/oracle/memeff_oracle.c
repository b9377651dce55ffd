/* tests/oracle/memeff_oracle.c: the float64 brute-force memeff forward and backward (see memeff_oracle.h). */
#include "memeff_oracle.h"

#include <math.h>
#include <string.h>

#include "philox.h"

/* May query row i see key j (both within a sequence of Lq rows and Lk keys)? The definition, not an interval. */
static int allowed(const ladder_attention_problem *pr, int64_t i, int64_t j, int64_t Lq, int64_t Lk) {
    const ladder_attn_mask *p = &pr->mask;
    const int64_t diag = p->causal == LADDER_CAUSAL_TOP_LEFT ? i : i + Lk - Lq; /* the key on row i's diagonal */
    if (p->causal != LADDER_CAUSAL_NONE && j > diag) return 0;
    if (p->window_left >= 0 && (double)j < (double)diag - (double)p->window_left) return 0; /* no int64 overflow */
    if (p->window_right >= 0 && (double)j > (double)diag + (double)p->window_right) return 0;
    return 1;
}

/* The element of the bias (shape x->bias_shape, C order) that element (b, h, i, j) of S reads: index 0 on each
 * dimension of size 1. */
static int64_t bias_index(const memeff_oracle_tensors *x, int64_t b, int64_t h, int64_t i, int64_t j) {
    const int64_t idx[4] = {b, h, i, j};
    int64_t off = 0;
    for (int d = 0; d < 4; d++) off = off * x->bias_shape[d] + (x->bias_shape[d] == 1 ? 0 : idx[d]);
    return off;
}

/* One element of S: its position, whether the mask allows it, S itself and the softcap's slope dS/ds. */
typedef struct elem {
    int ok;
    double S, slope, keep; /* keep: 1/(1-p) when dropout keeps it, 0 when it drops it, 1 without dropout */
} elem;

static elem element(const ladder_memeff_problem *mp, const memeff_oracle_tensors *x, int64_t b, int64_t h, int64_t i,
                    int64_t j) {
    const ladder_attention_problem *p = &mp->attn;
    elem e = {0, 0, 1, 1};
    /* the sequence of row i: its rows [q0, q0 + Lq) and keys [k0, k0 + Lk) */
    int64_t q0 = 0, Lq = p->Sq, k0 = 0, Lk = p->Sk;
    for (int s = 0; x->cu_q && s < x->n_seqs; s++)
        if (i >= x->cu_q[s] && i < x->cu_q[s + 1])
            q0 = (int64_t)x->cu_q[s], Lq = (int64_t)(x->cu_q[s + 1] - x->cu_q[s]), k0 = (int64_t)x->cu_k[s],
            Lk = (int64_t)(x->cu_k[s + 1] - x->cu_k[s]);
    if (j < k0 || j >= k0 + Lk || !allowed(p, i - q0, j - k0, Lq, Lk)) return e;
    e.ok = 1;
    const int64_t hk = h / (p->Hq / p->Hkv);
    const double *qi = x->q + ((b * p->Hq + h) * p->Sq + i) * p->D, *kj = x->k + ((b * p->Hkv + hk) * p->Sk + j) * p->D;
    double s = 0;
    for (int64_t d = 0; d < p->D; d++) s += qi[d] * kj[d];
    s *= p->scale > 0 ? p->scale : 1.0 / sqrt((double)p->D);
    if (p->softcap > 0) {
        const double t = tanh(s / p->softcap);
        e.slope = 1 - t * t;
        s = p->softcap * t;
    }
    e.S = s + (x->bias ? x->bias[bias_index(x, b, h, i, j)] : 0);
    if (mp->dropout_p > 0) {
        const uint64_t n = ladder_dropout_counter(mp->philox_offset, b, h, i, j, p->Hq, p->Sq, p->Sk);
        e.keep = ladder_dropout_keep(mp->philox_seed, n, (float)mp->dropout_p) ? 1.0 / (1.0 - mp->dropout_p) : 0.0;
    }
    return e;
}

void memeff_oracle_fwd(const ladder_memeff_problem *mp, memeff_oracle_tensors *x) {
    const ladder_attention_problem *p = &mp->attn;
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t i = 0; i < p->Sq; i++) {
                const int64_t r = (b * p->Hq + h) * p->Sq + i, hk = h / (p->Hq / p->Hkv);
                double m = -INFINITY, l = 0;
                for (int64_t j = 0; j < p->Sk; j++) {
                    const elem e = element(mp, x, b, h, i, j);
                    if (e.ok && e.S > m) m = e.S;
                }
                for (int64_t j = 0; j < p->Sk; j++) {
                    const elem e = element(mp, x, b, h, i, j);
                    if (e.ok) l += exp(e.S - m);
                }
                x->lse[r] = l > 0 ? m + log(l) : -INFINITY;
                double *oi = x->o + r * p->Dv;
                memset(oi, 0, (size_t)p->Dv * sizeof *oi);
                for (int64_t j = 0; j < p->Sk && l > 0; j++) {
                    const elem e = element(mp, x, b, h, i, j);
                    if (!e.ok) continue;
                    const double P = exp(e.S - x->lse[r]) * e.keep; /* the dropped, rescaled probability */
                    for (int64_t d = 0; d < p->Dv; d++) oi[d] += P * x->v[((b * p->Hkv + hk) * p->Sk + j) * p->Dv + d];
                }
            }
}

void memeff_oracle_bwd(const ladder_memeff_problem *mp, memeff_oracle_tensors *x) {
    const ladder_attention_problem *p = &mp->attn;
    const double scale = p->scale > 0 ? p->scale : 1.0 / sqrt((double)p->D);
    memset(x->dq, 0, (size_t)(p->B * p->Hq * p->Sq * p->D) * sizeof *x->dq);
    memset(x->dk, 0, (size_t)(p->B * p->Hkv * p->Sk * p->D) * sizeof *x->dk);
    memset(x->dv, 0, (size_t)(p->B * p->Hkv * p->Sk * p->Dv) * sizeof *x->dv);
    if (x->dbias)
        memset(x->dbias, 0,
               (size_t)(x->bias_shape[0] * x->bias_shape[1] * x->bias_shape[2] * x->bias_shape[3]) * sizeof *x->dbias);
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->Hq; h++)
            for (int64_t i = 0; i < p->Sq; i++) {
                const int64_t r = (b * p->Hq + h) * p->Sq + i, hk = h / (p->Hq / p->Hkv);
                if (x->lse[r] == -INFINITY) continue; /* a fully masked row: no gradient */
                const double *doi = x->dout + r * p->Dv;
                /* loss = sum_d O_id dO_id + lse_i dlse_i with O_i = sum_j P_ij keep_ij V_j:
                 * dL/dP_ij = keep_ij dO_i . V_j =: dP_ij, and through the softmax
                 * dL/dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik) + P_ij dlse_i = P_ij (dP_ij - Delta_i) */
                double Delta = x->dlse ? -x->dlse[r] : 0;
                for (int64_t j = 0; j < p->Sk; j++) {
                    const elem e = element(mp, x, b, h, i, j);
                    if (!e.ok) continue;
                    double dP = 0;
                    for (int64_t d = 0; d < p->Dv; d++) dP += doi[d] * x->v[((b * p->Hkv + hk) * p->Sk + j) * p->Dv + d];
                    Delta += exp(e.S - x->lse[r]) * dP * e.keep;
                }
                for (int64_t j = 0; j < p->Sk; j++) {
                    const elem e = element(mp, x, b, h, i, j);
                    if (!e.ok) continue;
                    const double P = exp(e.S - x->lse[r]);
                    const int64_t kr = (b * p->Hkv + hk) * p->Sk + j;
                    double dP = 0;
                    for (int64_t d = 0; d < p->Dv; d++) dP += doi[d] * x->v[kr * p->Dv + d];
                    dP *= e.keep;
                    const double dS = P * (dP - Delta);
                    /* S = softcap(scale q.k) + bias: the bias takes dS itself, q and k dS times the slope and scale */
                    if (x->dbias) x->dbias[bias_index(x, b, h, i, j)] += dS;
                    for (int64_t d = 0; d < p->D; d++) {
                        x->dq[r * p->D + d] += scale * dS * e.slope * x->k[kr * p->D + d];
                        x->dk[kr * p->D + d] += scale * dS * e.slope * x->q[r * p->D + d];
                    }
                    for (int64_t d = 0; d < p->Dv; d++) x->dv[kr * p->Dv + d] += P * e.keep * doi[d];
                }
            }
}

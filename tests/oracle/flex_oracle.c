/* The float64 flex oracle (see flex_oracle.h). */
#include "flex_oracle.h"

#include <math.h>
#include <stdlib.h>

/* May row i of head h in batch row b see key j under the mask mods alone? */
static bool mods_allow(const ladder_flex_problem *p, const flex_oracle_tensors *x, int64_t b, int64_t i, int64_t j) {
    const int m = p->mask_mods;
    if ((m >> LADDER_FLEX_CAUSAL & 1) && !(i >= j)) return false;
    if ((m >> LADDER_FLEX_WINDOW & 1) && !(i - j <= p->window_left)) return false;
    if ((m >> LADDER_FLEX_PREFIX_LM & 1) && !(j < x->prefix[b] || i >= j)) return false;
    if ((m >> LADDER_FLEX_DOCUMENT & 1) && !(x->doc_q[i] == x->doc_k[j])) return false;
    return true;
}

/* The element's tile in the forward's lists: full (allowed), partial (the mask mods decide) or neither (masked). */
static bool allowed(const ladder_flex_problem *p, const flex_oracle_tensors *x, int64_t b, int64_t h, int64_t i,
                    int64_t j) {
    if (!x->kv_num) return mods_allow(p, x, b, i, j);
    const int64_t Tq = ladder_flex_tiles(p->attn.Sq), Tk = ladder_flex_tiles(p->attn.Sk);
    const int64_t row = ((x->MB == 1 ? 0 : b) * x->MH + (x->MH == 1 ? 0 : h)) * Tq + i / LADDER_FLEX_BLOCK;
    const int64_t tk = j / LADDER_FLEX_BLOCK;
    for (int64_t e = 0; e < (int64_t)x->full_kv_num[row]; e++)
        if ((int64_t)x->full_kv_idx[row * Tk + e] == tk) return true;
    for (int64_t e = 0; e < (int64_t)x->kv_num[row]; e++)
        if ((int64_t)x->kv_idx[row * Tk + e] == tk) return mods_allow(p, x, b, i, j);
    return false;
}

double flex_oracle_score(const ladder_flex_problem *p, const flex_oracle_tensors *x, double s, int64_t b, int64_t h,
                         int64_t i, int64_t j) {
    (void)b;
    const int64_t Sq = p->attn.Sq, Sk = p->attn.Sk;
    switch (p->score_mod) {
    case LADDER_FLEX_SOFTCAP: return p->softcap * tanh(s / p->softcap);
    case LADDER_FLEX_ALIBI: return s + x->slopes[h] * (double)(j - i);
    case LADDER_FLEX_REL_BIAS: return s + x->rel_bias[h * (Sq + Sk - 1) + j - i + Sq - 1];
    case LADDER_FLEX_T5_BIAS: return s + x->t5_bias[h * p->num_buckets + ladder_flex_t5_bucket(j - i, p->num_buckets)];
    case LADDER_FLEX_BIAS_QK: return s + x->bq[h * Sq + i] + x->bk[h * Sk + j];
    default: return s;
    }
}

/* s = scale * q_i . k_j of element (b, h, i, j). */
static double raw_score(const ladder_flex_problem *p, const flex_oracle_tensors *x, int64_t b, int64_t h, int64_t i,
                        int64_t j) {
    const ladder_attention_problem *t = &p->attn;
    const int64_t hk = h / (t->Hq / t->Hkv), D = t->D;
    const double *qi = x->q + ((b * t->Hq + h) * t->Sq + i) * D, *kj = x->k + ((b * t->Hkv + hk) * t->Sk + j) * D;
    double acc = 0;
    for (int64_t d = 0; d < D; d++) acc += qi[d] * kj[d];
    return ladder_attention_scale(t) * acc;
}

void flex_oracle_fwd(const ladder_flex_problem *p, flex_oracle_tensors *x) {
    const ladder_attention_problem *t = &p->attn;
    for (int64_t b = 0; b < t->B; b++)
        for (int64_t h = 0; h < t->Hq; h++)
            for (int64_t i = 0; i < t->Sq; i++) {
                const int64_t r = (b * t->Hq + h) * t->Sq + i, hk = h / (t->Hq / t->Hkv);
                double m = -INFINITY, l = 0;
                for (int64_t j = 0; j < t->Sk; j++)
                    if (allowed(p, x, b, h, i, j)) m = fmax(m, flex_oracle_score(p, x, raw_score(p, x, b, h, i, j), b, h, i, j));
                double *o = x->o + r * t->Dv;
                for (int64_t e = 0; e < t->Dv; e++) o[e] = 0;
                for (int64_t j = 0; j < t->Sk && m > -INFINITY; j++) {
                    if (!allowed(p, x, b, h, i, j)) continue;
                    const double w = exp(flex_oracle_score(p, x, raw_score(p, x, b, h, i, j), b, h, i, j) - m);
                    l += w;
                    for (int64_t e = 0; e < t->Dv; e++) o[e] += w * x->v[((b * t->Hkv + hk) * t->Sk + j) * t->Dv + e];
                }
                for (int64_t e = 0; e < t->Dv && l > 0; e++) o[e] /= l;
                x->lse[r] = l > 0 ? m + log(l) : -INFINITY;
            }
}

/* dS/ds of the score mod at s, and for each buffer element it read, dS/d(element) added (times @p dS) into the
 * gradient that was asked for. */
static double chain(const ladder_flex_problem *p, flex_oracle_tensors *x, double s, double dS, int64_t h, int64_t i,
                    int64_t j) {
    const int64_t Sq = p->attn.Sq, Sk = p->attn.Sk;
    switch (p->score_mod) {
    case LADDER_FLEX_SOFTCAP: {
        const double th = tanh(s / p->softcap);
        return 1 - th * th;
    }
    case LADDER_FLEX_ALIBI:
        if (x->dslopes) x->dslopes[h] += dS * (double)(j - i);
        return 1;
    case LADDER_FLEX_REL_BIAS:
        if (x->drel_bias) x->drel_bias[h * (Sq + Sk - 1) + j - i + Sq - 1] += dS;
        return 1;
    case LADDER_FLEX_T5_BIAS:
        if (x->dt5_bias) x->dt5_bias[h * p->num_buckets + ladder_flex_t5_bucket(j - i, p->num_buckets)] += dS;
        return 1;
    case LADDER_FLEX_BIAS_QK:
        if (x->dbq) x->dbq[h * Sq + i] += dS;
        if (x->dbk) x->dbk[h * Sk + j] += dS;
        return 1;
    default: return 1;
    }
}

void flex_oracle_bwd(const ladder_flex_problem *p, flex_oracle_tensors *x) {
    const ladder_attention_problem *t = &p->attn;
    const int64_t D = t->D, Dv = t->Dv, group = t->Hq / t->Hkv;
    const double scale = ladder_attention_scale(t);
    for (int64_t e = 0; e < t->B * t->Hq * t->Sq * D; e++) x->dq[e] = 0;
    for (int64_t e = 0; e < t->B * t->Hkv * t->Sk * D; e++) x->dk[e] = 0;
    for (int64_t e = 0; e < t->B * t->Hkv * t->Sk * Dv; e++) x->dv[e] = 0;
    double *grads[] = {x->dslopes, x->drel_bias, x->dt5_bias, x->dbq, x->dbk};
    const int64_t sizes[] = {t->Hq, t->Hq * (t->Sq + t->Sk - 1), t->Hq * p->num_buckets, t->Hq * t->Sq, t->Hq * t->Sk};
    for (int g = 0; g < 5; g++)
        for (int64_t e = 0; grads[g] && e < sizes[g]; e++) grads[g][e] = 0;
    for (int64_t b = 0; b < t->B; b++)
        for (int64_t h = 0; h < t->Hq; h++)
            for (int64_t i = 0; i < t->Sq; i++) {
                const int64_t r = (b * t->Hq + h) * t->Sq + i, hk = h / group;
                if (x->lse[r] == -INFINITY) continue; /* a fully masked row: no gradient */
                const double *dO = x->dout + r * Dv, *qi = x->q + r * D;
                /* Delta_i = sum_j P_ij dP_ij - dlse_i, by the chain rule through the softmax and lse */
                double delta = x->dlse ? -x->dlse[r] : 0;
                for (int64_t j = 0; j < t->Sk; j++) {
                    if (!allowed(p, x, b, h, i, j)) continue;
                    const double P = exp(flex_oracle_score(p, x, raw_score(p, x, b, h, i, j), b, h, i, j) - x->lse[r]);
                    const double *vj = x->v + ((b * t->Hkv + hk) * t->Sk + j) * Dv;
                    for (int64_t e = 0; e < Dv; e++) delta += P * dO[e] * vj[e];
                }
                for (int64_t j = 0; j < t->Sk; j++) {
                    if (!allowed(p, x, b, h, i, j)) continue;
                    const int64_t kv = (b * t->Hkv + hk) * t->Sk + j;
                    const double s = raw_score(p, x, b, h, i, j);
                    const double P = exp(flex_oracle_score(p, x, s, b, h, i, j) - x->lse[r]);
                    double dP = 0;
                    for (int64_t e = 0; e < Dv; e++) dP += dO[e] * x->v[kv * Dv + e];
                    const double dS = P * (dP - delta), ds = dS * chain(p, x, s, dS, h, i, j);
                    for (int64_t e = 0; e < D; e++) {
                        x->dq[r * D + e] += scale * ds * x->k[kv * D + e];
                        x->dk[kv * D + e] += scale * ds * qi[e];
                    }
                    for (int64_t e = 0; e < Dv; e++) x->dv[kv * Dv + e] += P * dO[e];
                }
            }
}

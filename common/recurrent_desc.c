/* recurrent as the engine sees it: its tensors, sizes, dispatcher and costs (see engine.h). */
#include <stddef.h>
#include <string.h>

#include "engine.h"
#include "recurrent.h"
#include "recurrent_rungs.h"

#define P(field) offsetof(ladder_recurrent_problem, field)
#define A(field) offsetof(ladder_recurrent_args, field)

static const ladder_param params[] = {
    {"B", LADDER_PARAM_I64, P(B), 1, 1LL << 40, 2, "batch size"},
    {"T", LADDER_PARAM_I64, P(T), 1, 1LL << 40, 256, "tokens per batch row"},
    {"H", LADDER_PARAM_I64, P(H), 1, 1LL << 40, 4, "heads"},
    {"K", LADDER_PARAM_I64, P(K), 1, LADDER_RECURRENT_MAX_KV, 64, "key head dimension (the state's rows)"},
    {"V", LADDER_PARAM_I64, P(V), 1, LADDER_RECURRENT_MAX_KV, 64, "value head dimension (the state's columns)"},
    {"scale", LADDER_PARAM_DOUBLE, P(scale), -1e6, 1e6, 0, "o = scale * S^T q (0: 1/sqrt(K))"},
    {"reverse", LADDER_PARAM_BOOL, P(reverse), 0, 1, 0, "run each sequence from its last token to its first"},
};

/* Tensor indices, for the with masks below (the order of tensors[]). */
enum { Q, K_, V_, G, G_GAMMA, GK, GV, H0, CU, O, HT, DO, DHT, DQ, DK, DV, DG, DG_GAMMA, DGK, DGV, DH0 };

#define GATE (LADDER_IN_FWD | LADDER_OPTIONAL | LADDER_KEEP_F32)
#define GRAD (LADDER_OUT_BWD | LADDER_OPTIONAL | LADDER_KEEP_F32)
static const ladder_tensor_spec tensors[] = {
    [Q] = {"q", "B,T,H,K", LADDER_IN_FWD, A(q), NULL, LADDER_FILL_NORMAL},
    [K_] = {"k", "B,T,H,K", LADDER_IN_FWD, A(k), NULL, LADDER_FILL_FAN_IN},
    [V_] = {"v", "B,T,H,V", LADDER_IN_FWD, A(v), NULL, LADDER_FILL_NORMAL},
    [G] = {"g", "B,T,H", GATE, A(g), NULL, LADDER_FILL_LOG_GATE},
    [G_GAMMA] = {"g_gamma", "H", GATE, A(g_gamma), NULL, LADDER_FILL_LOG_GATE},
    [GK] = {"gk", "B,T,H,K", GATE, A(gk), NULL, LADDER_FILL_LOG_GATE},
    [GV] = {"gv", "B,T,H,V", GATE, A(gv), NULL, LADDER_FILL_LOG_GATE},
    [H0] = {"h0", "N,H,K,V", GATE, A(h0), NULL, LADDER_FILL_NORMAL},
    [CU] = {"cu_seqlens", "N+1", LADDER_INDEX | LADDER_OPTIONAL, A(cu_seqlens), NULL, LADDER_FILL_NORMAL},
    [O] = {"o", "B,T,H,V", LADDER_OUT_FWD, A(o), NULL, LADDER_FILL_NORMAL},
    [HT] = {"ht", "N,H,K,V", LADDER_OUT_FWD | LADDER_OPTIONAL | LADDER_KEEP_F32, A(ht), NULL, LADDER_FILL_NORMAL},
    [DO] = {"do", "B,T,H,V", LADDER_IN_BWD, A(do_), "o", LADDER_FILL_NORMAL},
    [DHT] = {"dht", "N,H,K,V", LADDER_IN_BWD | LADDER_OPTIONAL | LADDER_KEEP_F32, A(dht), "ht", LADDER_FILL_NORMAL},
    [DQ] = {"dq", "B,T,H,K", LADDER_OUT_BWD, A(dq), "q", LADDER_FILL_NORMAL},
    [DK] = {"dk", "B,T,H,K", LADDER_OUT_BWD, A(dk), "k", LADDER_FILL_NORMAL},
    [DV] = {"dv", "B,T,H,V", LADDER_OUT_BWD, A(dv), "v", LADDER_FILL_NORMAL},
    [DG] = {"dg", "B,T,H", GRAD, A(dg), "g", LADDER_FILL_NORMAL},
    [DG_GAMMA] = {"dg_gamma", "H", GRAD, A(dg_gamma), "g_gamma", LADDER_FILL_NORMAL},
    [DGK] = {"dgk", "B,T,H,K", GRAD, A(dgk), "gk", LADDER_FILL_NORMAL},
    [DGV] = {"dgv", "B,T,H,V", GRAD, A(dgv), "gv", LADDER_FILL_NORMAL},
    [DH0] = {"dh0", "N,H,K,V", GRAD, A(dh0), "h0", LADDER_FILL_NORMAL},
};

/* N, the number of sequences (B without cu_seqlens), and N+1, the length of cu_seqlens. */
static int64_t derived_dim(const void *problem, const ladder_tensor *index, const char *name) {
    const ladder_recurrent_problem *p = problem;
    if (strcmp(name, "N") == 0) return index ? index->shape[0] - 1 : p->B;
    return index && strcmp(name, "N+1") == 0 ? index->shape[0] : -1;
}

static ladder_status call(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return pass == LADDER_PASS_FWD ? ladder_recurrent_fwd(rung, problem, args)
                                   : ladder_recurrent_bwd(rung, problem, args);
}

static ladder_status call_rung(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return (pass == LADDER_PASS_FWD ? recurrent_fwd_rungs : recurrent_bwd_rungs)[rung](problem, args);
}

/*
 * Every tensor the pass reads or writes, once: the forward reads the inputs and writes o (and ht); the backward
 * reads the inputs, do (and dht) and writes the gradients. The states are f32 at every rung. (N is taken as B:
 * with packed sequences the state tensors are counted for B = 1 sequence, a few bytes short.)
 */
static double bytes(const void *problem, uint32_t present, ladder_pass pass, ladder_dtype dtype) {
    const ladder_algo *algo = ladder_algo_find("recurrent");
    unsigned touched = pass == LADDER_PASS_FWD ? LADDER_IN_FWD | LADDER_OUT_FWD
                                               : LADDER_IN_FWD | LADDER_IN_BWD | LADDER_OUT_BWD;
    double sum = 0;
    for (int i = 0; i < algo->n_tensors; i++) {
        const ladder_tensor_spec *s = &algo->tensors[i];
        if (!((present >> i) & 1u) || !(s->role & touched) || (s->role & LADDER_INDEX)) continue;
        int64_t shape[LADDER_MAX_RANK];
        int rank = ladder_tensor_shape_of(algo, problem, NULL, i, shape);
        double n = (double)ladder_dtype_size(ladder_tensor_dtype_at(algo, i, dtype));
        for (int d = 0; d < rank; d++) n *= (double)shape[d];
        sum += n;
    }
    return sum;
}

/*
 * Per step and state element: the forward does two multiply-adds (S += k v^T, o += S^T q): 4*B*T*H*K*V.
 * The backward does five: the forward's state again, dq = S do, dS += q do^T, dk = dS v, dv = dS^T k.
 * (The gate factors and the cumulative sums are lower order, and not counted.)
 */
static double flops(const void *problem, ladder_pass pass) {
    const ladder_recurrent_problem *p = problem;
    return (pass == LADDER_PASS_FWD ? 4.0 : 10.0) * (double)p->B * (double)p->T * (double)p->H * (double)p->K *
           (double)p->V;
}

/* First a size at which every rung runs, the cpu rung as the reference (the chapter's rung-by-rung tables); then
 * the performance shape that fla was measured at, twice: per-channel gates gk (chunk_gla's case) and a scalar gate
 * g. There the cpu rung would take minutes, and gpu_naive is the reference. */
static const ladder_recurrent_problem bench_problems[] = {
    {.B = 4, .T = 2048, .H = 8, .K = 64, .V = 64},
    {.B = 8, .T = 4096, .H = 16, .K = 128, .V = 128},
    {.B = 8, .T = 4096, .H = 16, .K = 128, .V = 128},
};
static const uint32_t bench_with[] = {1u << GK, 1u << GK, 1u << G};
static const uint32_t bench_rungs[] = {LADDER_RUNGS_ALL, LADDER_RUNGS_GPU, LADDER_RUNGS_GPU};
_Static_assert(sizeof bench_with / sizeof bench_with[0] == sizeof bench_problems / sizeof bench_problems[0] &&
                   sizeof bench_rungs / sizeof bench_rungs[0] == sizeof bench_problems / sizeof bench_problems[0],
               "one set of optional tensors and one rung set per bench problem");

const ladder_algo ladder_recurrent_algo = {
    .name = "recurrent",
    .summary = "gated linear attention as a recurrence: S_t = gates_t * S_{t-1} + k_t v_t^T, o_t = scale * S_t^T q_t",
    .problem_size = sizeof(ladder_recurrent_problem),
    .args_size = sizeof(ladder_recurrent_args),
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .varlen_dim = "T",
    .varlen_batch = "B",
    .derived_dim = derived_dim,
    .call = call,
    .call_rung = call_rung,
    .bytes = bytes,
    .flops = flops,
    .bench_problems = bench_problems,
    .n_bench_problems = sizeof bench_problems / sizeof bench_problems[0],
    .bench_with = bench_with,
    .bench_rungs = bench_rungs,
    .run_with = 1u << GK | 1u << H0 | 1u << HT | 1u << DHT, /* `ladder run recurrent`: gk gates, h0, ht and dht */
};

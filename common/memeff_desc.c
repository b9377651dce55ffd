/* memeff as the engine sees it: its tensors, sizes and options, dispatcher and costs (see engine.h). */
#include <stddef.h>
#include <string.h>

#include "engine.h"
#include "memeff.h"
#include "memeff_magnitudes.h"
#include "memeff_rungs.h"

#define P(field) offsetof(ladder_memeff_problem, field)
#define A(field) offsetof(ladder_memeff_args, field)
#define HUGE_SIZE (1LL << 40) /* no limit but memory */
#define EXACT_U64 9007199254740992.0 /* 2^53: the largest seed or offset the engine's doubles carry exactly */

static const ladder_param params[] = {
    {"B", LADDER_PARAM_I64, P(attn.B), 1, HUGE_SIZE, 2, "batch size"},
    {"Hq", LADDER_PARAM_I64, P(attn.Hq), 1, HUGE_SIZE, 4, "query heads"},
    {"Hkv", LADDER_PARAM_I64, P(attn.Hkv), 1, HUGE_SIZE, 2, "key/value heads (must divide Hq: MQA/GQA)"},
    {"Sq", LADDER_PARAM_I64, P(attn.Sq), 1, HUGE_SIZE, 200, "query rows per batch row"},
    {"Sk", LADDER_PARAM_I64, P(attn.Sk), 1, HUGE_SIZE, 256, "keys per batch row"},
    {"D", LADDER_PARAM_I64, P(attn.D), 1, LADDER_ATTN_MAX_HEAD_DIM, 64, "head dim of q and k"},
    {"Dv", LADDER_PARAM_I64, P(attn.Dv), 1, LADDER_ATTN_MAX_HEAD_DIM, 64, "head dim of v and o"},
    {"scale", LADDER_PARAM_DOUBLE, P(attn.scale), 0, 1e6, 0, "multiplies q.k (0: 1/sqrt(D))"},
    {"softcap", LADDER_PARAM_DOUBLE, P(attn.softcap), 0, 1e6, 0, "S = softcap*tanh(S/softcap) (0: none)"},
    {"causal", LADDER_PARAM_INT, P(attn.mask.causal), 0, 2, 1, "0 none, 1 bottom-right (FlashAttention-2), 2 top-left"},
    {"window_left", LADDER_PARAM_I64, P(attn.mask.window_left), -1, HUGE_SIZE, -1, "keys left of the diagonal (-1: all)"},
    {"window_right", LADDER_PARAM_I64, P(attn.mask.window_right), -1, HUGE_SIZE, -1,
     "keys right of the diagonal (-1: all)"},
    {"dropout", LADDER_PARAM_DOUBLE, P(dropout_p), 0, 0.99, 0.1, "probability of dropping an element of P"},
    {"philox_seed", LADDER_PARAM_U64, P(philox_seed), 0, EXACT_U64, 0, "the dropout generator's key"},
    {"philox_offset", LADDER_PARAM_U64, P(philox_offset), 0, EXACT_U64, 0, "the Philox output element 0 draws"},
    {"splits", LADDER_PARAM_I64, P(splits), 0, HUGE_SIZE, 0, "split-key forward: 0 automatic, 1 none, N blocks"},
    {"deterministic", LADDER_PARAM_BOOL, P(deterministic), 0, 1, 0, "no atomics in the backward"},
    {"allow_tf32", LADDER_PARAM_BOOL, P(allow_tf32), 0, 1, 0,
     "--dtype fp32 at gpu_tensorcore: one TF32 product per multiply, not three (fp32-level)"},
};

static const ladder_tensor_spec tensors[] = {
    {"q", "B,Hq,Sq,D", LADDER_IN_FWD, A(q), NULL, LADDER_FILL_NORMAL},
    {"k", "B,Hkv,Sk,D", LADDER_IN_FWD, A(k), NULL, LADDER_FILL_NORMAL},
    {"v", "B,Hkv,Sk,Dv", LADDER_IN_FWD, A(v), NULL, LADDER_FILL_NORMAL},
    {"cu_seqlens_q", "N+1", LADDER_INDEX | LADDER_OPTIONAL, A(cu_seqlens_q), NULL, LADDER_FILL_NORMAL},
    {"cu_seqlens_k", "N+1", LADDER_INDEX | LADDER_OPTIONAL, A(cu_seqlens_k), NULL, LADDER_FILL_NORMAL},
    {"bias", "B,Hq,Sq,Sk", LADDER_IN_FWD | LADDER_OPTIONAL | LADDER_BROADCAST, A(bias), NULL, LADDER_FILL_NORMAL},
    {"o", "B,Hq,Sq,Dv", LADDER_OUT_FWD | LADDER_READ_BY_BWD, A(o), NULL, LADDER_FILL_NORMAL},
    {"lse", "B,Hq,Sq", LADDER_OUT_FWD | LADDER_READ_BY_BWD | LADDER_KEEP_F32, A(lse), NULL, LADDER_FILL_NORMAL},
    {"do", "B,Hq,Sq,Dv", LADDER_IN_BWD, A(dout), "o", LADDER_FILL_NORMAL},
    {"dlse", "B,Hq,Sq", LADDER_IN_BWD | LADDER_OPTIONAL | LADDER_KEEP_F32, A(dlse), "lse", LADDER_FILL_NORMAL},
    {"dq", "B,Hq,Sq,D", LADDER_OUT_BWD, A(dq), "q", LADDER_FILL_NORMAL},
    {"dk", "B,Hkv,Sk,D", LADDER_OUT_BWD, A(dk), "k", LADDER_FILL_NORMAL},
    {"dv", "B,Hkv,Sk,Dv", LADDER_OUT_BWD, A(dv), "v", LADDER_FILL_NORMAL},
    {"dbias", "B,Hq,Sq,Sk", LADDER_OUT_BWD | LADDER_OPTIONAL | LADDER_FREEZABLE, A(dbias), "bias", LADDER_FILL_NORMAL},
};
enum { BIAS = 5 }; /* tensors[BIAS] is the bias */

/* N+1, the length of cu_seqlens_q and cu_seqlens_k (N packed sequences). */
static int64_t derived_dim(const void *problem, const ladder_tensor *index, const char *name) {
    (void)problem;
    return index && strcmp(name, "N+1") == 0 ? index->shape[0] : -1;
}

static ladder_status call(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return pass == LADDER_PASS_FWD ? ladder_memeff_fwd(rung, problem, args) : ladder_memeff_bwd(rung, problem, args);
}

static ladder_status call_rung(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return (pass == LADDER_PASS_FWD ? memeff_fwd_rungs : memeff_bwd_rungs)[rung](problem, args);
}

/* The tensor-core rung's reference: the kept P and dS rounded to @p round where that rung rounds them, and o read by
 * the backward as that rung stores it (common/attention_tc_reference.h, behind common/memeff.c's checks). */
static ladder_status call_emulating(ladder_dtype round, ladder_pass pass, const void *problem, const void *args) {
    return pass == LADDER_PASS_FWD ? memeff_fwd_emulating(problem, args, round)
                                   : memeff_bwd_emulating(problem, args, round);
}

/* The bias (and dbias) counted at full size, [B,Hq,Sq,Sk], when present: the costs see the problem, not the case's
 * broadcast, and the bench problems that carry a bias carry a full one. */
static double bytes(const void *problem, uint32_t present, ladder_pass pass, ladder_dtype dtype) {
    const ladder_memeff_problem *p = problem;
    const double bias = (present >> BIAS) & 1u ? (double)p->attn.B * (double)p->attn.Hq * (double)p->attn.Sq *
                                                     (double)p->attn.Sk
                                               : 0.0;
    return pass == LADDER_PASS_FWD ? ladder_memeff_fwd_bytes(p, dtype, bias)
                                   : ladder_memeff_bwd_bytes(p, dtype, bias, bias);
}

/* FlashAttention's count: forward 4*B*H*Sq*Sk*D (with Dv: 2*B*H*Sq*Sk*(D+Dv)), half if causal; backward 2.5x. */
static double flops(const void *problem, ladder_pass pass) {
    const ladder_memeff_problem *p = problem;
    return pass == LADDER_PASS_FWD ? ladder_attention_fwd_flops(&p->attn) : ladder_attention_bwd_flops(&p->attn);
}

/* First a small size at which every rung runs, the cpu rung as the reference; then issue 19's three sizes where
 * PyTorch's efficient backend is measured: D = 64, S = 2048, B = 4, H = 16 with a full bias that needs its
 * gradient and dropout 0.1; plain D = 128, S = 4096 (flash's headline size); and decoding, one query row against
 * 32768 keys with GQA. Last, the plain size again with a full bias alone (its gradient included), for what the bias
 * costs over plain. */
#define BENCH(b, hq, hkv, sq, sk, d, p)                                                                                \
    {.attn = {.B = (b), .Hq = (hq), .Hkv = (hkv), .Sq = (sq), .Sk = (sk), .D = (d), .Dv = (d),                        \
              .mask = {.causal = 0, .window_left = -1, .window_right = -1}},                                          \
     .dropout_p = (p)}
static const ladder_memeff_problem bench_problems[] = {
    BENCH(1, 8, 8, 512, 512, 64, 0.1),
    BENCH(4, 16, 16, 2048, 2048, 64, 0.1),
    BENCH(4, 16, 16, 4096, 4096, 128, 0.0),
    BENCH(8, 32, 8, 1, 32768, 128, 0.0),
    BENCH(4, 16, 16, 4096, 4096, 128, 0.0),
};
#define FAST_RUNGS (LADDER_RUNGS_GPU & ~(1u << LADDER_RUNG_GPU_NAIVE)) /* gpu_tiled and gpu_tensorcore */
static const uint32_t bench_rungs[] = {LADDER_RUNGS_ALL, FAST_RUNGS, FAST_RUNGS, LADDER_RUNGS_GPU, FAST_RUNGS};
static const uint32_t bench_with[] = {1u << BIAS, 1u << BIAS, 0, 0, 1u << BIAS};
_Static_assert(sizeof bench_rungs / sizeof bench_rungs[0] == sizeof bench_problems / sizeof bench_problems[0],
               "one rung set per bench problem");
_Static_assert(sizeof bench_with / sizeof bench_with[0] == sizeof bench_problems / sizeof bench_problems[0],
               "one tensor set per bench problem");

const ladder_algo ladder_memeff_algo = {
    .name = "memeff",
    .summary = "memory-efficient attention: flash plus an additive (broadcast) bias and its gradient, dropout",
    .problem_size = sizeof(ladder_memeff_problem),
    .args_size = sizeof(ladder_memeff_args),
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .varlen_dim = "Sq",
    .varlen_dim2 = "Sk",
    .varlen_batch = "B",
    .derived_dim = derived_dim,
    .call = call,
    .call_rung = call_rung,
    .call_emulating = call_emulating,
    .bytes = bytes,
    .flops = flops,
    .bench_problems = bench_problems,
    .n_bench_problems = sizeof bench_problems / sizeof bench_problems[0],
    .bench_rungs = bench_rungs,
    .bench_with = bench_with,
    .run_with = 1u << BIAS,
    .tc_f32 = true,
    .magnitudes = memeff_magnitudes,
};

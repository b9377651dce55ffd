/* flash as the engine sees it: its tensors, sizes and options, dispatcher and costs (see engine.h). */
#include <stddef.h>
#include <string.h>

#include "engine.h"
#include "flash.h"
#include "flash_rungs.h"

#define P(field) offsetof(ladder_flash_problem, field)
#define A(field) offsetof(ladder_flash_args, field)
#define HUGE_SIZE (1LL << 40) /* no limit but memory */

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
    {"deterministic", LADDER_PARAM_BOOL, P(deterministic), 0, 1, 0, "dQ by a separate pass, not atomics"},
};

static const ladder_tensor_spec tensors[] = {
    {"q", "B,Hq,Sq,D", LADDER_IN_FWD, A(q), NULL, LADDER_FILL_NORMAL},
    {"k", "B,Hkv,Sk,D", LADDER_IN_FWD, A(k), NULL, LADDER_FILL_NORMAL},
    {"v", "B,Hkv,Sk,Dv", LADDER_IN_FWD, A(v), NULL, LADDER_FILL_NORMAL},
    {"cu_seqlens_q", "N+1", LADDER_INDEX | LADDER_OPTIONAL, A(cu_seqlens_q), NULL, LADDER_FILL_NORMAL},
    {"cu_seqlens_k", "N+1", LADDER_INDEX | LADDER_OPTIONAL, A(cu_seqlens_k), NULL, LADDER_FILL_NORMAL},
    {"o", "B,Hq,Sq,Dv", LADDER_OUT_FWD | LADDER_READ_BY_BWD, A(o), NULL, LADDER_FILL_NORMAL},
    {"lse", "B,Hq,Sq", LADDER_OUT_FWD | LADDER_READ_BY_BWD | LADDER_KEEP_F32, A(lse), NULL, LADDER_FILL_NORMAL},
    {"do", "B,Hq,Sq,Dv", LADDER_IN_BWD, A(dout), "o", LADDER_FILL_NORMAL},
    {"dlse", "B,Hq,Sq", LADDER_IN_BWD | LADDER_OPTIONAL | LADDER_KEEP_F32, A(dlse), "lse", LADDER_FILL_NORMAL},
    {"dq", "B,Hq,Sq,D", LADDER_OUT_BWD, A(dq), "q", LADDER_FILL_NORMAL},
    {"dk", "B,Hkv,Sk,D", LADDER_OUT_BWD, A(dk), "k", LADDER_FILL_NORMAL},
    {"dv", "B,Hkv,Sk,Dv", LADDER_OUT_BWD, A(dv), "v", LADDER_FILL_NORMAL},
};

/* N+1, the length of cu_seqlens_q and cu_seqlens_k (N packed sequences). */
static int64_t derived_dim(const void *problem, const ladder_tensor *index, const char *name) {
    (void)problem;
    return index && strcmp(name, "N+1") == 0 ? index->shape[0] : -1;
}

static ladder_status call(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return pass == LADDER_PASS_FWD ? ladder_flash_fwd(rung, problem, args) : ladder_flash_bwd(rung, problem, args);
}

static ladder_status call_rung(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return (pass == LADDER_PASS_FWD ? flash_fwd_rungs : flash_bwd_rungs)[rung](problem, args);
}

/* The tensor-core rung's reference: P (both passes) and dS rounded to @p round where that rung rounds them, and o
 * read by the backward as that rung stores it (common/attention_tc_reference.h, behind common/flash.c's checks). */
static ladder_status call_emulating(ladder_dtype round, ladder_pass pass, const void *problem, const void *args) {
    return pass == LADDER_PASS_FWD ? flash_fwd_emulating(problem, args, round)
                                   : flash_bwd_emulating(problem, args, round);
}

static double bytes(const void *problem, uint32_t present, ladder_pass pass, ladder_dtype dtype) {
    (void)present; /* flash's optional tensors (dlse, cu_seqlens) are too small to count */
    return pass == LADDER_PASS_FWD ? ladder_flash_fwd_bytes(problem, dtype) : ladder_flash_bwd_bytes(problem, dtype);
}

/* FlashAttention's count: forward 4*B*H*Sq*Sk*D (with Dv: 2*B*H*Sq*Sk*(D+Dv)), half if causal; backward 2.5x. */
static double flops(const void *problem, ladder_pass pass) {
    const ladder_flash_problem *p = problem;
    return pass == LADDER_PASS_FWD ? ladder_attention_fwd_flops(&p->attn) : ladder_attention_bwd_flops(&p->attn);
}

/* First a size at which every rung runs, the cpu rung as the reference (the chapter's rung-by-rung tables); then
 * the sweep at FlashAttention-2's sizes, 16k tokens per batch (B = 16384/S), hidden 2048 (H = 2048/D), causal and
 * not, where the cpu rung would take many minutes a problem and gpu_naive hours: there gpu_tiled is the reference;
 * last, the headline size again in deterministic mode, whose cost the chapter states. */
#define BENCH(b, h, d, s, c, det)                                                                                      \
    {.attn = {.B = (b), .Hq = (h), .Hkv = (h), .Sq = (s), .Sk = (s), .D = (d), .Dv = (d),                             \
              .mask = {.causal = (c), .window_left = -1, .window_right = -1}},                                        \
     .deterministic = (det)}
#define SWEEP(d, s, c) BENCH(16384 / (s), 2048 / (d), d, s, c, false)
static const ladder_flash_problem bench_problems[] = {
    BENCH(1, 8, 64, 1024, 0, false), SWEEP(64, 1024, 0),  SWEEP(64, 1024, 1),   SWEEP(64, 4096, 0),
    SWEEP(64, 4096, 1),              SWEEP(64, 16384, 0), SWEEP(64, 16384, 1),  SWEEP(128, 1024, 0),
    SWEEP(128, 1024, 1),             SWEEP(128, 4096, 0), SWEEP(128, 4096, 1),  SWEEP(128, 16384, 0),
    SWEEP(128, 16384, 1),            BENCH(4, 16, 128, 4096, 0, true),
};
#define FAST_RUNGS (LADDER_RUNGS_GPU & ~(1u << LADDER_RUNG_GPU_NAIVE)) /* gpu_tiled and gpu_tensorcore */
static const uint32_t bench_rungs[] = {LADDER_RUNGS_ALL, FAST_RUNGS, FAST_RUNGS, FAST_RUNGS, FAST_RUNGS,
                                       FAST_RUNGS, FAST_RUNGS, FAST_RUNGS, FAST_RUNGS, FAST_RUNGS,
                                       FAST_RUNGS, FAST_RUNGS, FAST_RUNGS, FAST_RUNGS};
_Static_assert(sizeof bench_rungs / sizeof bench_rungs[0] == sizeof bench_problems / sizeof bench_problems[0],
               "one rung set per bench problem");

const ladder_algo ladder_flash_algo = {
    .name = "flash",
    .summary = "FlashAttention-2: o = softmax(scale * q k^T, masked) v and lse, forward and backward",
    .problem_size = sizeof(ladder_flash_problem),
    .args_size = sizeof(ladder_flash_args),
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
};

/* dynconv as the engine sees it: its tensors, sizes, dispatcher and costs (see engine.h). */
#include <stddef.h>
#include <string.h>

#include "dynconv.h"
#include "dynconv_rungs.h"
#include "engine.h"

#define P(field) offsetof(ladder_dynconv_problem, field)
#define A(field) offsetof(ladder_dynconv_args, field)

static const ladder_param params[] = {
    {"B", LADDER_PARAM_I64, P(B), 1, 1LL << 40, 2, "batch size"},
    {"T", LADDER_PARAM_I64, P(T), 1, 1LL << 40, 1024, "tokens per batch row"},
    {"D", LADDER_PARAM_I64, P(D), 1, 1LL << 40, 512, "channels"},
    {"W", LADDER_PARAM_INT, P(W), 1, LADDER_DYNCONV_MAX_W, 4, "kernel width"},
};

static const ladder_tensor_spec tensors[] = {
    {"x", "B,T,D", LADDER_IN_FWD, A(x), NULL, LADDER_FILL_NORMAL},
    {"kernels", "B,T,D,W", LADDER_IN_FWD, A(kernels), NULL, LADDER_FILL_FAN_IN},
    {"cu_seqlens", "N+1", LADDER_INDEX | LADDER_OPTIONAL, A(cu_seqlens), NULL, LADDER_FILL_NORMAL},
    {"out", "B,T,D", LADDER_OUT_FWD, A(out), NULL, LADDER_FILL_NORMAL},
    {"dout", "B,T,D", LADDER_IN_BWD, A(dout), "out", LADDER_FILL_NORMAL},
    {"dx", "B,T,D", LADDER_OUT_BWD, A(dx), "x", LADDER_FILL_NORMAL},
    {"dkernels", "B,T,D,W", LADDER_OUT_BWD, A(dkernels), "kernels", LADDER_FILL_NORMAL},
};

/* N+1, the length of cu_seqlens (N packed sequences). */
static int64_t derived_dim(const void *problem, const ladder_tensor *index, const char *name) {
    (void)problem;
    return index && strcmp(name, "N+1") == 0 ? index->shape[0] : -1;
}

static ladder_status call(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return pass == LADDER_PASS_FWD ? ladder_dynconv_fwd(rung, problem, args) : ladder_dynconv_bwd(rung, problem, args);
}

static ladder_status call_rung(ladder_rung rung, ladder_pass pass, const void *problem, const void *args) {
    return (pass == LADDER_PASS_FWD ? dynconv_fwd_rungs : dynconv_bwd_rungs)[rung](problem, args);
}

static double bytes(const void *problem, uint32_t present, ladder_pass pass, ladder_dtype dtype) {
    (void)present; /* every tensor but cu_seqlens is required */
    return pass == LADDER_PASS_FWD ? ladder_dynconv_fwd_bytes(problem, dtype) : ladder_dynconv_bwd_bytes(problem, dtype);
}

/* Forward: W multiply-adds per output. Backward: W multiply-adds for dx plus W multiplies for dkernels. */
static double flops(const void *problem, ladder_pass pass) {
    const ladder_dynconv_problem *p = problem;
    return (pass == LADDER_PASS_FWD ? 2.0 : 3.0) * p->W * (double)p->B * (double)p->T * (double)p->D;
}

/* The headline shape, every rung (the cpu rung the reference), then the sweep over W that chapter 01's chart shows
 * (% of copy against W), which times the GPU rungs only: there gpu_naive is the reference. (The sweep's W = 64
 * problem still takes about 40 s on the H100 machine: its kernels tensor is 4 GB, made and compared on the host.) */
static const ladder_dynconv_problem bench_problems[] = {
    {.B = 8, .T = 4096, .D = 2048, .W = 4},  {.B = 2, .T = 4096, .D = 2048, .W = 2},
    {.B = 2, .T = 4096, .D = 2048, .W = 4},  {.B = 2, .T = 4096, .D = 2048, .W = 8},
    {.B = 2, .T = 4096, .D = 2048, .W = 16}, {.B = 2, .T = 4096, .D = 2048, .W = 32},
    {.B = 2, .T = 4096, .D = 2048, .W = 64},
};
static const uint32_t bench_rungs[] = {LADDER_RUNGS_ALL, LADDER_RUNGS_GPU, LADDER_RUNGS_GPU, LADDER_RUNGS_GPU,
                                       LADDER_RUNGS_GPU, LADDER_RUNGS_GPU, LADDER_RUNGS_GPU};
_Static_assert(sizeof bench_rungs / sizeof bench_rungs[0] == sizeof bench_problems / sizeof bench_problems[0],
               "one rung set per bench problem");

const ladder_algo ladder_dynconv_algo = {
    .name = "dynconv",
    .summary = "dynamic causal depthwise convolution: out[b,t,d] = sum_w kernels[b,t,d,w] * x[b,t+w-W+1,d]",
    .problem_size = sizeof(ladder_dynconv_problem),
    .args_size = sizeof(ladder_dynconv_args),
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
    .bench_rungs = bench_rungs,
};

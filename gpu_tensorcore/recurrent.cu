/*
 * gpu_tensorcore/recurrent.cu: gated linear attention in the chunked form, on the tensor cores: the pipeline.
 *
 * What changed since gpu_tiled/: the recurrence no longer runs one step at a time. The steps are cut into chunks of
 * SC = 64, and with S_c the state at chunk c's start and A, B the cumulative row and column log gates from there,
 * every output of the chunk is its state part, a product with S_c, plus its pairs inside the chunk (chapter 2, "The
 * chunked forward"). Only the states form a chain. So the rung is a pipeline of passes:
 *
 * 1. The states pass (recurrent_states.cu): S carried 64 steps a link, one product of depth 64 on the matrix units
 *    per link, the state tiled over blocks (the update is separable by rows and columns), stored at every chunk's
 *    start. Run from the end with q for k and do for v, the same kernel carries dH = dL/dS.
 * 2. The outputs (recurrent_out.cu): every chunk's o in parallel from its stored state. The pairs form a 64 x 64
 *    matrix P built from 16-step sub-chunks, so that every factor is at most 1: exp(A_t), exp(A_63 - A_s), and
 *    exp(A_t - A_s) for s <= t, never exp(-A_s) alone (a per-step gate of -30 overflows that within 3 steps). Pairs
 *    between sub-chunks factor around a sub-chunk's edge into products of bounded operands; pairs inside a sub-chunk
 *    are summed in fp32, exp(A_t - A_s) per pair and channel (one per pair without gk). With gv the pair weight
 *    depends on the column too, and P's products with v are summed in fp32 per pair and column.
 * 3. The backward's states: S again and dH from 0 (the do part), both stored in fp32; with dht, its part dHZ (a
 *    decay of dht alone) in a third pass.
 * 4. The gradients (recurrent_bwd.cu): rows_kernel (dq, dk) and cols_kernel (dv), every chunk in parallel, the
 *    state parts from the stored states and the pairs as in 2., three kinds in rows_kernel (between sub-chunks,
 *    across the halves of one, inside a half). With gv, o's version without each step's own term from the
 *    outputs' kernel in its backward mode.
 * 5. The gate gradients (recurrent_gates.cu) in chapter 2's rearranged form: each gradient without its own step's
 *    diagonal term and dht's part apart (what cancels kept apart), summed in double in one pass over the sequence.
 *
 * Precision. The forward rounds its operands once to the input dtype (as fla does): the stored states, the decayed
 * q and k, P. That leaves about 2^-9 of each (bf16; 2^-12 in fp16), well inside the tolerances. An fp16 forward
 * state past 65504 would overflow, as in any kernel with fp16 operands; the backward has no such limit. The
 * backward's gate gradients are long sums of terms that cancel, and singly rounded operands missed them (chapter 2,
 * "What the rounding costs"), so every operand of its products is two bf16 numbers, hi = round(x) and
 * lo = round(x - hi), and a product takes hi*hi + hi*lo + lo*hi: about 16 bits of x, the states stored in fp32.
 * bf16, not fp16, whatever the inputs: under strong decay the states, dH and the decayed operands fall below
 * fp16's normal range (6e-5), where neither half keeps its bits, and a large state would overflow fp16; bf16 has
 * fp32's exponent range. An fp16 input is exactly a bf16 hi + lo (11 significant bits in two of 8), split in shared
 * memory where a product takes it against a state (split_f16_tile); a bf16 input is its own hi. Products of two
 * inputs (D = do v^T, q . k) are exact in the fp32 accumulator in either dtype and run on the input's own mma. The
 * fp32 sums (the pairs inside sub-chunks, the column weights of gv) need no split.
 *
 * Preconditions: validated by ladder_recurrent_fwd/bwd (q, k, v, do, o, dq, dk, dv all bf16 or all f16; gates,
 * states and their gradients f32; device pointers; any input strides; contiguous outputs; K, V <= 256).
 * Run it:  build/bin/ladder run recurrent --rung gpu_tensorcore --dtype bf16
 */
#include <stdint.h>

#include "cuda_check.cuh"
#include "cuda_util.cuh"
#include "recurrent_gpu.cuh"
#include "recurrent_rungs.h"
#include "recurrent_tc.cuh"

namespace {

using namespace rec_tc;

template <class U> view<U> view_of(const ladder_tensor &t) {
    view<U> x = {(const U *)t.data, {0, 0, 0, 0}, false};
    for (int d = 0; t.data && d < t.rank; d++) x.s[d] = t.strides[d];
    x.vec = t.data && t.rank == 4 && ladder_rows16(&t, 1);
    return x;
}

tc_call call_of(const ladder_recurrent_problem *p, const ladder_recurrent_args *ar) {
    tc_call a = {};
    a.c = rec_call_of(p, ar);
    a.q = view_of<uint16_t>(ar->q), a.k = view_of<uint16_t>(ar->k), a.v = view_of<uint16_t>(ar->v);
    a.dO = view_of<uint16_t>(ar->do_);
    a.gk = view_of<float>(ar->gk), a.gv = view_of<float>(ar->gv);
    a.o = (uint16_t *)ar->o.data;
    return a;
}

/*
 * A states pass's store: N H (T/SC + 1) K V numbers, their rows padded to 8 (16 bytes of 16-bit numbers, so that
 * the outputs' kernel copies them by cp.async). The states are the price of the parallel passes.
 */
struct state_store {
    ladder_scratch mem;
    int64_t vpitch = 0;
    ladder_status alloc(const rec_call &c, size_t elem, int count) {
        vpitch = (c.V + 7) / 8 * 8;
        return mem.alloc((size_t)(count * state_slots(c) * c.H * c.K * vpitch) * elem);
    }
    int64_t per(const rec_call &c) const { return state_slots(c) * c.H * c.K * vpitch; }
};

template <class T> ladder_status fwd(const ladder_recurrent_problem *p, const ladder_recurrent_args *ar) {
    const tc_call a = call_of(p, ar);
    state_store st;
    LADDER_TRY(st.alloc(a.c, sizeof(uint16_t), 1));
    LADDER_TRY(states_pass<T>(a, ST_FWD, st.mem.ptr, st.vpitch));
    return out_pass<T>(a, st.mem.ptr, st.vpitch, false);
}

/*
 * The backward. The gate sums of recurrent.h, taken as they stand, subtract numbers of order one whose difference
 * is tiny under strong decay: q_t dq_t and k_t dk_t both hold the step's own term scale (q_t . k_t)(v_t . do_t),
 * and the dht part of the k dk sums cancels ht * dht. So, as cpu/recurrent.c does, the kernels keep apart what
 * cancels: dq°, dk°, dv° and o° without their own step's term (for the gate sums), and dk, dv, dh0 from dht (dkz,
 * dvz, dh0z) from a pass of their own; the outputs get every part, the gate kernels the small differences.
 */
template <class T> ladder_status bwd(const ladder_recurrent_problem *p, const ladder_recurrent_args *ar) {
    tc_call a = call_of(p, ar);
    const rec_call &c = a.c;
    const int64_t tokens = token_count(a);
    const bool gv = c.gv.p != nullptr, dht = c.dht.p != nullptr, rows = c.dgk || c.dg || c.dg_gamma;
    const int64_t sizes[] = {rows ? tokens * c.K : 0, rows ? tokens * c.K : 0, gv ? tokens * c.V : 0,
                             gv ? tokens * c.V : 0,   dht ? tokens * c.K : 0,  dht ? tokens * c.V : 0,
                             dht ? c.N * c.H * c.K * c.V : 0};
    float **parts[] = {&a.dq_part, &a.dk_part, &a.o32, &a.dv32, &a.dkz, &a.dvz, &a.dh0z};
    int64_t floats = 0;
    for (int64_t n : sizes) floats += (n + 3) / 4 * 4;
    ladder_scratch mem;
    LADDER_TRY(mem.alloc((size_t)floats * sizeof(float)));
    float *at = (float *)mem.ptr;
    for (int i = 0; i < 7; i++) *parts[i] = sizes[i] ? at : nullptr, at += (sizes[i] + 3) / 4 * 4;
    state_store st; /* S, dH and with dht dHZ, in fp32 */
    LADDER_TRY(st.alloc(c, sizeof(float), dht ? 3 : 2));
    float *S = (float *)st.mem.ptr, *dH = S + st.per(c), *Z = dht ? dH + st.per(c) : nullptr;
    LADDER_TRY(states_pass<T>(a, ST_S, S, st.vpitch));
    LADDER_TRY(states_pass<T>(a, ST_DH, dH, st.vpitch));
    if (dht) LADDER_TRY(states_pass<T>(a, ST_Z, Z, st.vpitch));
    LADDER_TRY(grads_pass<T>(a, S, dH, Z, st.vpitch, (uint16_t *)ar->dq.data, (uint16_t *)ar->dk.data,
                             (uint16_t *)ar->dv.data));
    if (gv) LADDER_TRY(out_pass<T>(a, S, st.vpitch, true)); /* o°, for dgv */
    return rec_has_gates(c) ? gate_grads<T>(a) : LADDER_OK;
}

} // namespace

extern "C" ladder_status recurrent_fwd_gpu_tensorcore(const ladder_recurrent_problem *p,
                                                      const ladder_recurrent_args *a) {
    return a->q.dtype == LADDER_BF16 ? fwd<__nv_bfloat16>(p, a) : fwd<__half>(p, a);
}

extern "C" ladder_status recurrent_bwd_gpu_tensorcore(const ladder_recurrent_problem *p,
                                                      const ladder_recurrent_args *a) {
    return a->q.dtype == LADDER_BF16 ? bwd<__nv_bfloat16>(p, a) : bwd<__half>(p, a);
}

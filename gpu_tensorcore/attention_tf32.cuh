/*
 * gpu_tensorcore/attention_tf32.cuh: the tensor-core attention family on fp32 inputs, through the TF32 mma
 * (common/mma.cuh): the entry points that gpu_tensorcore/memeff.cu calls, and what the forward
 * (attention_tf32_fwd.cu) and the backward (attention_tf32_bwd.cu) share.
 *
 * What changes from the 16-bit kernels (attention_tc_fwd.cuh, attention_tc_bwd.cuh), and only that:
 *   - tiles are staged in shared memory as fp32, 4 floats per cp.async, rows padded by 4 floats (16 bytes), so
 *     that the 8 rows one ldmatrix reads start in 8 different 16-byte bank groups;
 *   - every product is m16n8k8 on TF32 operands: one product per step (allow_tf32: about 2^-11 relative error
 *     per operand), or three (x = big + small, each TF32, and a b ~ big big + big small + small big: fp32-level
 *     error), chosen at compile time (THREE), so that the one-product kernels carry no splitting code;
 *   - fp32 has no ldmatrix.trans: the operands stored [k][n] (V in P V, dO in P^T dO, Q in dS^T Q, K in dS K)
 *     and [k][m] (P^T, dS^T) are read with 32-bit shared loads;
 *   - the forward keeps P in registers as the A of P V by reading k in the order of the C tile (common/mma.cuh).
 * Everything else is the family's: the same block ranges, key ranges and masks (common/attention.h), the same
 * hooks (bias through its strides, Philox dropout, dS into the bias's gradient: common/attention_gpu.cuh), split
 * keys and their combine, GQA, varlen, dlse, the Delta preprocess, atomic and deterministic dQ. There is one
 * policy: every hook is a uniform run-time branch (fp32 attention is the precise path, not the fast one).
 *
 * Head dims: kernels for (HD, HDV) = (64, 64) and (128, 128); any D, Dv <= 128 runs on the smaller that holds
 * both, the padding zero in shared memory. Larger head dims are refused by the dispatcher
 * (LADDER_MEMEFF_TF32_MAX_HEAD_DIM in memeff.h): an fp32 tile is twice a 16-bit one, and at 192 or 256 the
 * backward's K, V, Q, dO tiles would not fit the shared memory of one block with room to spare.
 */
#ifndef LADDER_GPU_TENSORCORE_ATTENTION_TF32_CUH
#define LADDER_GPU_TENSORCORE_ATTENTION_TF32_CUH

#include "attention_tc.cuh"

namespace attn_tc {

/* The forward on fp32 tensors (a.q, a.k, a.v, a.bias hold floats; a.o is written as floats): o and lse, with
 * three TF32 products per multiply when @p three, else one. D, Dv <= 128. */
ladder_status fwd_tf32(const args &a, bool three);
/* The backward on fp32 tensors: dq, dk, dv as floats, and dS into a.hooks.dbias when set. */
ladder_status bwd_tf32(args a, bool deterministic, bool three);

/* The padded head dim both D and Dv run at: 64 or 128. */
inline int tf32_head_dim(int64_t D, int64_t Dv) { return D <= 64 && Dv <= 64 ? 64 : 128; }

/* Row @p r of head @p h of batch row @p b of an fp32 view (its p holds floats). */
__device__ __forceinline__ const float *f32_row(const view4 &v, int64_t b, int64_t h, int64_t r) {
    return reinterpret_cast<const float *>(v.p) + b * v.s[0] + h * v.s[1] + r * v.s[2];
}

/*
 * @p n rows of @p width floats from @p src (rows @p rs apart, elements @p cs apart) into smem[ROWS][ld], zero past
 * the rows and the width up to COLS, by a block of THREADS threads. With 16-byte row starts and a width that is a
 * multiple of 4 (@p vec), one cp.async of 4 floats per chunk (committed by the caller); otherwise element by
 * element.
 */
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_tile_f32(float *smem, int ld, const float *src, int64_t rs, int64_t cs, bool vec,
                                              int64_t n, int64_t width) {
    constexpr int CHUNKS = COLS / 4, TOTAL = ROWS * CHUNKS;
    if (vec && width % 4 == 0) {
#pragma unroll
        for (int x0 = 0; x0 < TOTAL; x0 += THREADS) {
            const int x = x0 + (int)threadIdx.x, r = x / CHUNKS, c = x % CHUNKS * 4;
            if (TOTAL % THREADS != 0 && x >= TOTAL) break;
            const bool in = r < n && c < width;
            ladder_cp_async16(smem + r * ld + c, in ? src + r * rs + c : src, in);
        }
        return;
    }
    for (int x = threadIdx.x; x < ROWS * COLS; x += THREADS) {
        const int r = x / COLS, c = x % COLS;
        smem[r * ld + c] = r < n && c < width ? src[r * rs + c * cs] : 0.0f;
    }
}

/* Rows [r0, r0 + n) of head h of batch row b of @p v, @p width columns, through load_tile_f32. */
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_rows_f32(float *smem, int ld, const view4 &v, int64_t b, int64_t h, int64_t r0,
                                              int64_t n, int64_t width) {
    load_tile_f32<ROWS, COLS, THREADS>(smem, ld, f32_row(v, b, h, r0), v.s[2], v.s[3], v.rows16, n, width);
}

} // namespace attn_tc

#endif

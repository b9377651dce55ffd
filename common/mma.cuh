/**
 * @file mma.cuh
 * @brief Tensor-core helpers shared by the gpu_tensorcore rungs: the warp-wide
 *        mma.sync m16n8k8 and m16n8k16 (bf16 or fp16 in, fp32 accumulate) and
 *        their fragment layouts, ldmatrix (x1, x4, plain and transposed), and the
 *        16-bit packing and conversion helpers around them; then the TF32 m16n8k8
 *        (fp32 data, rounded to TF32 or split into three TF32 products) with its own
 *        layout. The cp.async copies that stage the tiles are in cp_async.cuh, included here.
 *
 * Elements travel as raw 16-bit patterns (uint16_t) so that loads, stores and
 * shared-memory tiles need no knowledge of the format; only the two places
 * where a number is formed, the conversions and the mma itself, are templated
 * on T = __nv_bfloat16 or __half.
 *
 * The fragment layouts are drawn below, once, for every rung that uses the mma.
 */
#ifndef LADDER_MMA_CUH
#define LADDER_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "cp_async.cuh"

// clang-format off
/*
 * Fragment layout of mma.sync.aligned.m16n8k8.row.col.f32.{bf16,f16}.{bf16,f16}.f32, from the
 * PTX ISA, section "Matrix Fragments for mma.m16n8k8" (floating point types)
 * (docs.nvidia.com/cuda/parallel-thread-execution/index.html#warp-level-matrix-fragment-mma-1688).
 *
 * lane = 4*g + t, with g = groupID = lane / 4 (0..7) and t = threadID_in_group = lane % 4 (0..3).
 * A 32-bit register holds two elements, the lower-numbered one in its low 16 bits.
 *
 *   A (16 x 8, row-major), two registers:   a[0]: row g,   columns 2t and 2t+1
 *                                           a[1]: row g+8, columns 2t and 2t+1
 *   B (8 x 8, column-major), one register:  b:    rows 2t and 2t+1, column g
 *   C and D (16 x 8, fp32), four floats:    c[0]: (g, 2t)    c[1]: (g, 2t+1)
 *                                           c[2]: (g+8, 2t)  c[3]: (g+8, 2t+1)
 *
 * So entry (row i, column n) of C is in lane 4*(i % 8) + n/2, as c[2*(i/8) + n%2].
 *
 * ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 reads an 8 x 8 matrix M of 16-bit elements whose
 * row r (8 consecutive elements, 16 bytes) starts at the address lane r passes (lanes 0..7), and
 * gives lane 4g+t the elements M[2t][g] and M[2t+1][g]: exactly the B register above when the rows of
 * M are the rows of B. A [token][channel] tile thus feeds B (k = token, n = channel) as it lies.
 */
// clang-format on

/** Raw 16-bit pattern -> float (exact for both formats). */
template <class T> __device__ __forceinline__ float ladder_to_float(uint16_t bits);
template <> __device__ __forceinline__ float ladder_to_float<__nv_bfloat16>(uint16_t bits) {
    return __bfloat162float(__ushort_as_bfloat16(bits));
}
template <> __device__ __forceinline__ float ladder_to_float<__half>(uint16_t bits) {
    return __half2float(__ushort_as_half(bits));
}

/** float -> raw 16-bit pattern, rounded to nearest even (as the host's ladder_f32_to_bf16/_f16). */
template <class T> __device__ __forceinline__ uint16_t ladder_from_float(float f);
template <> __device__ __forceinline__ uint16_t ladder_from_float<__nv_bfloat16>(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}
template <> __device__ __forceinline__ uint16_t ladder_from_float<__half>(float f) {
    return __half_as_ushort(__float2half_rn(f));
}

/** Two elements -> one 32-bit register, @p lo in the low half (the lower-numbered fragment element). */
__device__ __forceinline__ uint32_t ladder_pack2(uint16_t lo, uint16_t hi) {
    return (uint32_t)lo | ((uint32_t)hi << 16);
}

/** Two floats -> one register of two 16-bit elements, rounded to nearest even. */
template <class T> __device__ __forceinline__ uint32_t ladder_pack2_float(float lo, float hi) {
    return ladder_pack2(ladder_from_float<T>(lo), ladder_from_float<T>(hi));
}

/** Eight 16-bit elements -> one 16-byte vector, element 0 in the lowest bytes (as in memory). */
__device__ __forceinline__ uint4 ladder_pack8(const uint16_t (&e)[8]) {
    return make_uint4(ladder_pack2(e[0], e[1]), ladder_pack2(e[2], e[3]), ladder_pack2(e[4], e[5]),
                      ladder_pack2(e[6], e[7]));
}

/** One 32-bit word of shared memory: two consecutive elements at an even element index. */
__device__ __forceinline__ uint32_t ladder_lds32(const uint16_t *p) {
    return *reinterpret_cast<const uint32_t *>(p);
}

/** The B register of an 8 x 8 tile whose row r starts at @p row in lane r (r < 8), 16-byte aligned. */
__device__ __forceinline__ uint32_t ladder_ldsm_x1_trans(const uint16_t *row) {
    uint32_t b;
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(b)
                 : "r"((unsigned)__cvta_generic_to_shared(row))
                 : "memory");
    return b;
}

/**
 * D = A * B + D on the tensor cores, one warp-wide m16n8k8 step with fp32
 * accumulation. Every lane of the warp must call it together (it is .sync and
 * .aligned), each passing its own fragments in the layout drawn above.
 */
template <class T> __device__ __forceinline__ void ladder_mma_m16n8k8(float (&d)[4], const uint32_t (&a)[2], uint32_t b);

template <>
__device__ __forceinline__ void ladder_mma_m16n8k8<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[2], uint32_t b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
}

template <>
__device__ __forceinline__ void ladder_mma_m16n8k8<__half>(float (&d)[4], const uint32_t (&a)[2], uint32_t b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b));
}

// clang-format off
/*
 * Fragment layout of mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32, from the PTX ISA,
 * section "Matrix Fragments for mma.m16n8k16 with floating point type"
 * (docs.nvidia.com/cuda/parallel-thread-execution/index.html#warp-level-matrix-fragment-mma-16816-float).
 * Drawn in chapters/figures/flash-mma-m16n8k16-fragments.svg. lane = 4*g + t as above.
 *
 *   A (16 x 16, row-major), four registers:   a[0]: row g,   k 2t, 2t+1       a[2]: row g,   k 2t+8, 2t+9
 *                                             a[1]: row g+8, k 2t, 2t+1       a[3]: row g+8, k 2t+8, 2t+9
 *   B (16 x 8, k x n), two registers:         b[0]: k 2t, 2t+1, column g      b[1]: k 2t+8, 2t+9, column g
 *   C and D (16 x 8, fp32), four floats:      as for m16n8k8: c[0], c[1] row g; c[2], c[3] row g+8; columns 2t, 2t+1
 *
 * ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 reads four 8 x 8 matrices; lanes 8i .. 8i+7 pass the
 * addresses of the 8 rows (16 bytes each) of matrix i, and register i of every lane receives matrix i:
 *   without .trans: lane 4g+t gets M[g][2t], M[g][2t+1]    (row g, as A and C hold their rows)
 *   with .trans:     lane 4g+t gets M[2t][g], M[2t+1][g]    (column g, as B holds its columns)
 * So A comes from a row-major [row][k] tile with lane l passing row l % 16, column 8 * (l / 16) (matrices:
 * rows 0-7 | rows 8-15, then k 8-15); B comes without .trans from a tile stored [n][k] (K's rows for K^T),
 * and with .trans from a tile stored [k][n] (V's rows for P V). Two C tiles side by side (columns 0-7 and
 * 8-15), rounded to 16 bits and packed in pairs, are exactly an A fragment: S becomes P for P V in registers.
 *
 * These helpers take shared-memory tiles and fragments, not kernels: a Hopper wgmma path (operands read
 * straight from shared memory by a warpgroup) can reuse the tile layouts and replace only the products.
 */
// clang-format on

/** Four 8 x 8 matrices of 16-bit elements from shared memory; lane l passes the address @p row (16-byte aligned). */
__device__ __forceinline__ void ladder_ldsm_x4(uint32_t (&r)[4], const uint16_t *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((unsigned)__cvta_generic_to_shared(row))
                 : "memory");
}

/** The same, transposed: lane 4g+t receives column g of each matrix (see the diagram above). */
__device__ __forceinline__ void ladder_ldsm_x4_trans(uint32_t (&r)[4], const uint16_t *row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((unsigned)__cvta_generic_to_shared(row))
                 : "memory");
}

/**
 * D = A * B + D, one warp-wide m16n8k16 step with fp32 accumulation (layout above). Every lane of the warp
 * calls it together, each passing its own fragments.
 */
template <class T>
__device__ __forceinline__ void ladder_mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

template <>
__device__ __forceinline__ void ladder_mma_m16n8k16<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                                   uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void ladder_mma_m16n8k16<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                            uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/**
 * The two m16n8k16 steps that one ldmatrix.x4 B operand feeds: @p b holds two n8 halves (b[0], b[1] and b[2],
 * b[3]), multiplied by the same A fragment @p a into @p d0 and @p d1, a 16 x 16 block of the product.
 */
template <class T>
__device__ __forceinline__ void ladder_mma_m16n16k16(float (&d0)[4], float (&d1)[4], const uint32_t (&a)[4],
                                                     const uint32_t (&b)[4]) {
    ladder_mma_m16n8k16<T>(d0, a, b[0], b[1]);
    ladder_mma_m16n8k16<T>(d1, a, b[2], b[3]);
}

/**
 * acc += A B for one warp over a tile of MT*16 rows, NT*8 columns (NT even) and K16*16 k's, A and B 16-bit in
 * shared memory, acc fp32 in C fragments (acc[mt][nt] is rows mt*16.., columns nt*8..). @p A points at the
 * tile's first (row, k) and is stored [m][k] (row-major, stride @p lda) or, with A_KM, [k][m] (read through
 * ldmatrix.trans, so A = Xᵀ of a stored X); @p B points at its first (k, column) and is stored [n][k] (a K tile
 * for Kᵀ) or, with B_KN, [k][n] (read through ldmatrix.trans). Each A fragment feeds NT mmas and each B pair
 * 2 * MT: a warp tile of two row blocks halves the shared-memory bytes per mma of one.
 */
template <class T, int MT, int NT, int K16, bool A_KM, bool B_KN>
__device__ __forceinline__ void ladder_mma_warp_tile(float (&acc)[MT][NT][4], const uint16_t *A, int lda,
                                                     const uint16_t *B, int ldb, int lane) {
    static_assert(NT % 2 == 0, "B fragments come in pairs of 8-column tiles");
#pragma unroll
    for (int kk = 0; kk < K16; kk++) {
        uint32_t a[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            if (A_KM) /* matrices: k 0-7 | 0-7 | 8-15 | 8-15 against rows 0-7 | 8-15 | 0-7 | 8-15 */
                ladder_ldsm_x4_trans(a[mt], A + (kk * 16 + lane % 8 + (lane / 16) * 8) * lda + mt * 16 + (lane / 8 % 2) * 8);
            else
                ladder_ldsm_x4(a[mt], A + (mt * 16 + lane % 16) * lda + kk * 16 + (lane / 16) * 8);
        }
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
            uint32_t b[4]; /* b[0], b[1]: columns nt*8..; b[2], b[3]: the next 8 */
            if (B_KN)
                ladder_ldsm_x4_trans(b, B + (kk * 16 + lane % 8 + (lane / 8 % 2) * 8) * ldb + nt * 8 + (lane / 16) * 8);
            else
                ladder_ldsm_x4(b, B + (nt * 8 + lane % 8 + (lane / 16) * 8) * ldb + kk * 16 + (lane / 8 % 2) * 8);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                ladder_mma_m16n8k16<T>(acc[mt][nt], a[mt], b[0], b[1]);
                ladder_mma_m16n8k16<T>(acc[mt][nt + 1], a[mt], b[2], b[3]);
            }
        }
    }
}

/** acc = 0, for every fragment of a warp tile. */
template <int MT, int NT> __device__ __forceinline__ void ladder_zero_tile(float (&acc)[MT][NT][4]) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
}

// clang-format off
/*
 * Fragment layout of mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, from the PTX ISA, section "Matrix
 * Fragments for mma.m16n8k8", .tf32 type
 * (docs.nvidia.com/cuda/parallel-thread-execution/index.html#warp-level-matrix-fragment-mma-1688).
 * lane = 4*g + t as above. A register holds ONE element here (TF32 lives in 32 bits: fp32's sign and 8-bit
 * exponent, 10 of its 23 mantissa bits, the other 13 zero), so the same 16 x 8 A takes four registers, and k
 * runs down the lanes' t and then jumps by 4, where the 16-bit layout packs k 2t, 2t+1 into one register:
 *
 *   A (16 x 8, row-major), four registers:  a[0]: row g,   k t      a[2]: row g,   k t+4
 *                                           a[1]: row g+8, k t      a[3]: row g+8, k t+4
 *   B (8 x 8, k x n), two registers:        b[0]: k t, column g     b[1]: k t+4, column g
 *   C and D (16 x 8, fp32), four floats:    as for the 16-bit m16n8k8: c[0], c[1] row g; c[2], c[3] row g+8;
 *                                           columns 2t, 2t+1
 *
 * So a C tile is NOT an A fragment as it is (C holds columns 2t, 2t+1; A wants k t and t+4). Since an mma sums
 * over k, any order of k serves if A and B agree on it: read slot t as k 2t and slot t+4 as k 2t+1, and the C
 * registers c[0], c[2], c[1], c[3] are the A registers a[0..3] of the permuted k; B must then be read at rows 2t
 * and 2t+1 (ladder_lds_b_tf32_pairs()).
 *
 * ldmatrix moves 16-byte rows whatever they hold: on fp32 data, matrix row r is 4 floats and lane 4g+t receives
 * float t of row g (its 16-bit elements 2t, 2t+1). An x4 over a [row][k] tile, lane l passing row l % 16 and k
 * 4 * (l / 16), gives exactly a[0..3] above; over a [n][k] tile (K's rows for K^T), lane l passing n l % 8 + 8 *
 * (l / 16) and k 4 * (l / 8 % 2), the b[0], b[1] of two n8 blocks. There is no .trans for 32-bit elements: an
 * operand stored [k][m] or [k][n] (P^T, V for P V) is read with plain 32-bit shared loads.
 */
// clang-format on

/** @p x rounded to TF32 (cvt.rna: to nearest, ties away from zero), as the 32-bit pattern the mma reads. */
__device__ __forceinline__ uint32_t ladder_tf32(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}

/**
 * The operand registers @p x (fp32 bit patterns) made ready for the TF32 mma. One product (THREE false): each
 * rounded to TF32 in place, a relative error up to 2^-11. Three products: x = big + small, big = tf32(x) in place
 * and small = tf32(x - big) into @p small; x - big is exact in fp32 (it has at most 13 significant bits), and
 * rounding it leaves an error of at most 2^-22 |x|, so that big + small carries x to about fp32's precision.
 * (An infinite x gives small = NaN: attention's operands are finite, or NaN already.)
 */
template <bool THREE, int N>
__device__ __forceinline__ void ladder_tf32_prepare(uint32_t (&x)[N], uint32_t (&small)[N]) {
#pragma unroll
    for (int i = 0; i < N; i++) {
        const float f = __uint_as_float(x[i]);
        x[i] = ladder_tf32(f);
        if (THREE) small[i] = ladder_tf32(f - __uint_as_float(x[i]));
    }
}

/** D = A * B + D, one warp-wide TF32 m16n8k8 step with fp32 accumulation (layout above). */
__device__ __forceinline__ void ladder_mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                        uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/**
 * D += A B for fp32 A and B prepared by ladder_tf32_prepare(): one TF32 product (big alone), or three, as
 * CUTLASS's 3xTF32 "fast accurate" fp32 GEMM does: a b = (a_big + a_small)(b_big + b_small) ~ a_big b_big +
 * a_big b_small + a_small b_big, the dropped a_small b_small being at most 2^-22 |a b|. The two small products go
 * first, so that they meet the accumulator while it is still small.
 */
template <bool THREE>
__device__ __forceinline__ void ladder_mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&a_small)[4],
                                                uint32_t b0, uint32_t b1, uint32_t b0_small, uint32_t b1_small) {
    if (THREE) {
        ladder_mma_m16n8k8_tf32(d, a_small, b0, b1);
        ladder_mma_m16n8k8_tf32(d, a, b0_small, b1_small);
    }
    ladder_mma_m16n8k8_tf32(d, a, b0, b1);
}

/**
 * The A fragment (16 rows by k 8, layout above) of fp32 data in shared memory, as raw bits: stored [m][k] (row
 * stride @p ld, 16-byte aligned rows) through one ldmatrix.x4, or, with KM, stored [k][m] (A = X^T of a stored
 * X) through four 32-bit loads.
 */
template <bool KM>
__device__ __forceinline__ void ladder_lds_a_tf32(uint32_t (&a)[4], const float *A, int ld, int lane) {
    const int g = lane / 4, t = lane % 4;
    if (KM) {
        a[0] = __float_as_uint(A[t * ld + g]), a[1] = __float_as_uint(A[t * ld + g + 8]);
        a[2] = __float_as_uint(A[(t + 4) * ld + g]), a[3] = __float_as_uint(A[(t + 4) * ld + g + 8]);
    } else {
        ladder_ldsm_x4(a, reinterpret_cast<const uint16_t *>(A + (lane % 16) * ld + (lane / 16) * 4));
    }
}

/**
 * The B fragments of two n8 blocks (k 8 by n 16) of fp32 data, as raw bits: b[0], b[1] for columns 0-7, b[2],
 * b[3] for 8-15. Stored [n][k] (K's rows for K^T) through one ldmatrix.x4, or, with KN, stored [k][n] through
 * four 32-bit loads.
 */
template <bool KN>
__device__ __forceinline__ void ladder_lds_b2_tf32(uint32_t (&b)[4], const float *B, int ld, int lane) {
    const int g = lane / 4, t = lane % 4;
    if (KN) {
        b[0] = __float_as_uint(B[t * ld + g]), b[1] = __float_as_uint(B[(t + 4) * ld + g]);
        b[2] = __float_as_uint(B[t * ld + 8 + g]), b[3] = __float_as_uint(B[(t + 4) * ld + 8 + g]);
    } else {
        const float *row = B + (lane % 8 + (lane / 16) * 8) * ld + (lane / 8 % 2) * 4;
        ladder_ldsm_x4(b, reinterpret_cast<const uint16_t *>(row));
    }
}

/**
 * The B fragment of one n8 block, stored [k][n], in the permuted k order of a C tile used as A (slot t = k 2t,
 * slot t + 4 = k 2t + 1; see the layout above): rows 2t and 2t + 1 of column g.
 */
__device__ __forceinline__ void ladder_lds_b_tf32_pairs(uint32_t (&b)[2], const float *B, int ld, int lane) {
    const int g = lane / 4, t = lane % 4;
    b[0] = __float_as_uint(B[2 * t * ld + g]), b[1] = __float_as_uint(B[(2 * t + 1) * ld + g]);
}

/**
 * acc += A B for one warp over a tile of MT*16 rows, NT*8 columns (NT even) and K8*8 k's of fp32 data in shared
 * memory, with one TF32 product per step or three (THREE). As ladder_mma_warp_tile: @p A points at the tile's
 * first (row, k), stored [m][k] or, with A_KM, [k][m]; @p B at its first (k, column), stored [n][k] or, with B_KN,
 * [k][n]. Each fragment is split (or rounded) once, after its load, and feeds NT or 2 * MT mmas.
 */
template <int MT, int NT, int K8, bool A_KM, bool B_KN, bool THREE>
__device__ __forceinline__ void ladder_mma_warp_tile_tf32(float (&acc)[MT][NT][4], const float *A, int lda,
                                                          const float *B, int ldb, int lane) {
    static_assert(NT % 2 == 0, "B fragments come in pairs of 8-column tiles");
#pragma unroll
    for (int kk = 0; kk < K8; kk++) {
        uint32_t a[MT][4], a_small[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            ladder_lds_a_tf32<A_KM>(a[mt], A_KM ? A + kk * 8 * lda + mt * 16 : A + mt * 16 * lda + kk * 8, lda, lane);
            ladder_tf32_prepare<THREE>(a[mt], a_small[mt]);
        }
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
            uint32_t b[4], b_small[4];
            ladder_lds_b2_tf32<B_KN>(b, B_KN ? B + kk * 8 * ldb + nt * 8 : B + nt * 8 * ldb + kk * 8, ldb, lane);
            ladder_tf32_prepare<THREE>(b, b_small);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                ladder_mma_tf32<THREE>(acc[mt][nt], a[mt], a_small[mt], b[0], b[1], b_small[0], b_small[1]);
                ladder_mma_tf32<THREE>(acc[mt][nt + 1], a[mt], a_small[mt], b[2], b[3], b_small[2], b_small[3]);
            }
        }
    }
}

#endif

/**
 * @file mma.cuh
 * @brief Tensor-core helpers shared by the gpu_tensorcore rungs: the warp-wide
 *        mma.sync m16n8k8 and m16n8k16 (bf16 or fp16 in, fp32 accumulate) and
 *        their fragment layouts, ldmatrix (x1, x4, plain and transposed), and the
 *        16-bit packing and conversion helpers around them. The cp.async copies that stage
 *        the tiles are in cp_async.cuh, included here.
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

#endif

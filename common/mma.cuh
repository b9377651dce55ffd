/**
 * @file mma.cuh
 * @brief Tensor-core helpers shared by the gpu_tensorcore rungs: the warp-wide
 *        mma.sync.m16n8k16 (bf16 or fp16 in, fp32 accumulate), its fragment
 *        layout, and the 16-bit packing and conversion helpers around it.
 *
 * Elements travel as raw 16-bit patterns (uint16_t) so that loads, stores and
 * shared-memory tiles need no knowledge of the format; only the two places
 * where a number is formed, the conversions and the mma itself, are templated
 * on T = __nv_bfloat16 or __half.
 *
 * The fragment layout is drawn below, once, for every rung that uses the mma.
 */
#ifndef LADDER_MMA_CUH
#define LADDER_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

// clang-format off
/*
 * Fragment layout of mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32, from the
 * PTX ISA, section "Matrix Fragments for mma.m16n8k16 with floating point type"
 * (docs.nvidia.com/cuda/parallel-thread-execution/index.html#warp-level-matrix-fragment-mma-16816-float).
 *
 * lane = 4*g + t, with g = groupID = lane / 4 (0..7) and t = threadID_in_group = lane % 4 (0..3).
 * A 32-bit register holds two elements, the lower-numbered one in its low 16 bits.
 *
 * A (16 x 16, row-major): four registers a[0..3] per lane, (row, columns)
 *
 *                 columns 0..7                 columns 8..15
 *              +----------------------------+----------------------------+
 *   rows 0..7  | a[0]: (g,   2t and 2t+1)   | a[2]: (g,   2t+8 and 2t+9) |
 *   rows 8..15 | a[1]: (g+8, 2t and 2t+1)   | a[3]: (g+8, 2t+8 and 2t+9) |
 *              +----------------------------+----------------------------+
 *
 *   register r: row g + 8*(r & 1), columns 2t + 8*(r >> 1) and the next one.
 *   (The PTX ISA numbers the elements a0..a7: a[0] = {a0,a1}, a[1] = {a2,a3},
 *    a[2] = {a4,a5}, a[3] = {a6,a7}.)
 *
 * B (16 x 8, column-major): two registers b[0..1] per lane, (rows, column)
 *
 *   b[0]: (2t and 2t+1,   g)         b[1]: (2t+8 and 2t+9,   g)
 *
 * C and D (16 x 8, fp32): four floats c[0..3] per lane, (row, column)
 *
 *   c[0]: (g,   2t)    c[1]: (g,   2t+1)
 *   c[2]: (g+8, 2t)    c[3]: (g+8, 2t+1)
 *
 * So column 0 of C is held by the lanes with t == 0 (lanes 0, 4, ..., 28): c[0] is its row g,
 * c[2] its row g+8; and column 0 of B by lanes 0..3 (g == 0).
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

/** Element k (0..7) of a 16-byte vector (k is a compile-time constant in an unrolled loop). */
__device__ __forceinline__ uint16_t ladder_elem8(uint4 v, int k) {
    const uint32_t w = k < 2 ? v.x : k < 4 ? v.y : k < 6 ? v.z : v.w;
    return (uint16_t)((k & 1) ? w >> 16 : w & 0xFFFFu);
}

/** One 32-bit word of shared memory: two consecutive elements at an even element index. */
__device__ __forceinline__ uint32_t ladder_lds32(const uint16_t *p) {
    return *reinterpret_cast<const uint32_t *>(p);
}
/** Store two consecutive elements (@p v as from ladder_pack2()) at an even element index. */
__device__ __forceinline__ void ladder_sts32(uint16_t *p, uint32_t v) { *reinterpret_cast<uint32_t *>(p) = v; }

/**
 * D = A * B + D on the tensor cores, one warp-wide m16n8k16 step with fp32
 * accumulation. Every lane of the warp must call it together (it is .sync and
 * .aligned), each passing its own fragments in the layout drawn above.
 */
template <class T>
__device__ __forceinline__ void ladder_mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);

template <>
__device__ __forceinline__ void ladder_mma_m16n8k16<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                                   const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <>
__device__ __forceinline__ void ladder_mma_m16n8k16<__half>(float (&d)[4], const uint32_t (&a)[4],
                                                            const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#endif

/**
 * @file wgmma.cuh
 * @brief Hopper's warpgroup matrix instructions (sm_90a), for the tensor-core rung's NAME.sm90a.cu kernels: the
 *        shared-memory matrix descriptor and the two tile layouts it describes here (core-matrix tiles that
 *        cp.async fills, and the 128-byte swizzled panels that TMA fills), wgmma.mma_async m64nNk16
 *        with fp32 accumulators for bf16 and fp16 (A from shared memory or from registers), the fences, commits
 *        and waits around it, and fence.proxy.async for tiles that ordinary stores or cp.async wrote.
 *
 * What changes against mma.sync (mma.cuh): a warpgroup of four warps, not one warp, issues one product of 64 rows;
 * the B operand (and, in the "SS" form, A too) is read by the tensor cores straight from shared memory, described
 * by a 64-bit descriptor, instead of being loaded into every lane's registers by ldmatrix first; and the product
 * is asynchronous: started by wgmma.mma_async, grouped by wgmma.commit_group, finished by wgmma.wait_group. Until
 * then its accumulators may not be touched, nor the shared memory it reads overwritten.
 *
 * Only files compiled for sm_90a (NAME.sm90a.cu) may include this header: wgmma exists nowhere else.
 */
#ifndef LADDER_WGMMA_CUH
#define LADDER_WGMMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include <type_traits>

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "common/wgmma.cuh needs the sm_90a target: include it from NAME.sm90a.cu files only"
#endif

// clang-format off
/*
 * Shared-memory operands: core matrices. PTX ISA, "Shared Memory Matrix Layout" and "Matrix Descriptor Format"
 * (docs.nvidia.com/cuda/parallel-thread-execution/index.html#asynchronous-warpgroup-level-matrix-shared-memory-layout
 * and ...#asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor).
 *
 * wgmma reads its shared-memory operands as core matrices: 8 rows of 16 bytes (8 x 8 elements of 16 bits), the
 * 8 rows at consecutive 16-byte addresses, 128 contiguous bytes (without swizzling; the 128-byte swizzle is further down). A
 * k16 step's A (64 x 16) is 8 x 2 core matrices, its B (16 x N) is 2 x N/8 of them. A core-matrix row is 8
 * consecutive elements of the operand's contiguous dimension:
 *   K-major (the transpose flag 0): 8 consecutive k of one m (or n): A = Q stored [m][k], B = K^T from K stored [n][k];
 *   MN-major (the transpose flag 1, B here): 8 consecutive n of one k: B = V stored [k][n].
 * Where the core matrices lie relative to one another is two byte strides of the descriptor, for K-major and
 * MN-major operands alike when nothing is swizzled (PTX ISA, "Strides"):
 *   LBO, the leading dimension byte offset: from a core matrix to the next one along K;
 *   SBO, the stride dimension byte offset:  from a core matrix to the next one along M (or N).
 * (With a swizzle mode, K-major operands ignore LBO and an MN-major operand's two strides mean other things: the
 * 128-byte swizzle below, which the TMA kernel uses.)
 *
 * The tiles of this rung: a "core-matrix tile" of ROWS x COLS 16-bit elements (both multiples of 8) is the row-major
 * tile cut into 8 x 8 blocks, each block stored as one core matrix, the blocks in row-major order:
 *
 *     element (r, c) at  ((r / 8) * (COLS / 8) + c / 8) * 64  +  (r % 8) * 8 + c % 8          (ladder_cm_index)
 *
 *                 columns 0-7     8-15        ...   COLS-8 .. COLS-1
 *     rows 0-7    [block 0]       [block 1]   ...   [block COLS/8 - 1]      each block, 128 bytes:
 *     rows 8-15   [block COLS/8]  ...                                        row 0 | row 1 | ... | row 7
 *     ...                                                                     (16 bytes = 8 elements each)
 *
 *   The next block to the right is 128 bytes on; the next block down, COLS * 16 bytes on. So:
 *   - stored [m or n][k] (Q, K), the tile is a K-major operand:  LBO = 128,        SBO = COLS * 16;
 *     its k16 step s starts 2s blocks to the right (256 s bytes on).
 *   - stored [k][n] (V), it is an MN-major operand:              LBO = COLS * 16,  SBO = 128;
 *     its k16 step s starts 2s blocks down (32 s COLS bytes on).
 *   One 16-byte piece of a tile row (8 elements) is one cp.async, and it lands in one core-matrix row.
 *
 * The descriptor (64 bits; every address and offset in units of 16 bytes, its 4 low bits dropped):
 *   bits  0-13  start address >> 4 (a shared-memory address, under 256 KB)
 *   bits 16-29  LBO >> 4
 *   bits 32-45  SBO >> 4
 *   bits 49-51  base offset: 0 (it matters only for swizzled tiles that do not start on the swizzle's period)
 *   bits 62-63  swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
 * Stepping a descriptor by a multiple of 16 bytes is adding that many units to it: the address field stays below
 * 2^14 and never carries into the LBO.
 */

/*
 * Register fragments of wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}.{bf16,f16}, PTX ISA "Register
 * Fragments" (docs.nvidia.com/cuda/parallel-thread-execution/index.html#asynchronous-warpgroup-level-matrix-register-fragment-wgmma-64n16).
 * The warpgroup is 4 consecutive warps of the block whose first is a multiple of 4 (warps 4k .. 4k+3); warp w of
 * it (w = warp % 4) owns rows 16w .. 16w+15 of the 64, and within them holds exactly what one warp holds of
 * mma.sync's m16n8 tiles (mma.cuh), lane = 4g + t:
 *
 *   D (64 x N, fp32), d[N/8][4]:  d[i][0]: (16w + g,     8i + 2t)    d[i][1]: (16w + g,     8i + 2t + 1)
 *                                 d[i][2]: (16w + g + 8, 8i + 2t)    d[i][3]: (16w + g + 8, 8i + 2t + 1)
 *                                 i = 0 .. N/8 - 1: N/8 m16n8 C fragments side by side
 *   A from registers (64 x 16), a[4], two 16-bit elements each, the lower column in the low half:
 *                                 a[0]: row 16w + g,     k 2t, 2t+1       a[2]: row 16w + g,     k 2t+8, 2t+9
 *                                 a[1]: row 16w + g + 8, k 2t, 2t+1       a[3]: row 16w + g + 8, k 2t+8, 2t+9
 *                                 (the A fragment of mma.sync m16n8k16)
 *
 * So, as with mma.sync, the accumulators d[2j] and d[2j+1] (16 columns), rounded to 16 bits and packed in pairs,
 * are the A operand of a k16 step: S = Q K^T becomes P for O += P V without leaving registers.
 */
// clang-format on

/** Element (r, c) of a core-matrix tile with @p cols columns (the layout drawn above), as an index from its start. */
__host__ __device__ constexpr int ladder_cm_index(int r, int c, int cols) {
    return ((r / 8) * (cols / 8) + c / 8) * 64 + (r % 8) * 8 + c % 8;
}

/** A descriptor's fields but the address: @p lbo and @p sbo in bytes (multiples of 16, under 256 KB), base offset 0,
 *  swizzle mode @p swizzle. A descriptor is these plus ladder_wgmma_desc_address(): a kernel that needs many may keep
 *  one address and add each one's byte offset / 16 and fields, compile-time constants, instead of holding them all. */
__host__ __device__ constexpr uint64_t ladder_wgmma_desc_fields(uint32_t lbo, uint32_t sbo, uint32_t swizzle) {
    return (uint64_t)((lbo >> 4) & 0x3fffu) << 16 | (uint64_t)((sbo >> 4) & 0x3fffu) << 32 | (uint64_t)swizzle << 62;
}

/** A descriptor's address field: @p smem (16-byte aligned) in 16-byte units. */
__device__ __forceinline__ uint64_t ladder_wgmma_desc_address(const void *smem) {
    return ((uint32_t)__cvta_generic_to_shared(smem) >> 4) & 0x3fffu;
}

/** A shared-memory matrix descriptor without swizzling: @p smem its first core matrix (16-byte aligned), @p lbo and
 *  @p sbo the byte strides to the next core matrix along K and along M or N (multiples of 16, under 256 KB). */
__device__ __forceinline__ uint64_t ladder_wgmma_desc(const void *smem, uint32_t lbo, uint32_t sbo) {
    return ladder_wgmma_desc_address(smem) | ladder_wgmma_desc_fields(lbo, sbo, 0);
}

/** The descriptor of a K-major operand stored as rows of a core-matrix tile with @p cols columns (Q for A, K for
 *  K^T as B), its first row and k at @p at: LBO = 128 bytes, SBO = cols * 16 bytes. */
__device__ __forceinline__ uint64_t ladder_wgmma_desc_k(const uint16_t *at, int cols) {
    return ladder_wgmma_desc(at, 128u, (uint32_t)cols * 16u);
}

/** The descriptor of an MN-major B (k down the rows, n along them: V for P V) stored as a core-matrix tile with
 *  @p cols columns, its first k and n at @p at: LBO = cols * 16 bytes, SBO = 128 bytes. */
__device__ __forceinline__ uint64_t ladder_wgmma_desc_mn(const uint16_t *at, int cols) {
    return ladder_wgmma_desc(at, (uint32_t)cols * 16u, 128u);
}

// clang-format off
/*
 * The 128-byte swizzle (the layout TMA writes, tma.cuh). A tile of R rows x C columns (C a multiple of 64) is stored
 * as C/64 "panels" of R rows x 64 columns, each R * 128 bytes, panel p holding columns 64p .. 64p+63, 1024-byte
 * aligned. Row r of a panel is 128 contiguous bytes at r * 128, cut into eight 16-byte pieces (8 elements each),
 * and piece c of row r lies at position c XOR (r % 8): each group of 8 rows (1024 bytes, the "swizzle atom")
 * spreads the column pieces of its rows over all 32 banks, so that neither TMA's writes nor the tensor cores'
 * reads of a column of pieces collide. The descriptor names the mode (bits 62-63 = 1) and the hardware undoes the
 * permutation; the strides are those of the unswizzled panels (PTX ISA, "Strides", "Canonical Layouts"):
 *
 *   K-major (Q and K, stored [row][k]):  SBO = 1024 bytes (8 rows to the next 8); LBO unused (encoded as 1).
 *                                        A k16 step s is 32 bytes to the right inside the panel while s % 4 < 4:
 *                                        its start address is panel s / 4 plus (s % 4) * 32 bytes.
 *   MN-major (V, stored [k][n]):         SBO = 1024 bytes (8 k-rows to the next 8); LBO = R * 128 bytes (one panel
 *                                        of 64 n to the next). A k16 step s is 16 rows down: 2048 s bytes.
 *
 *                  panel 0 (columns 0-63)          panel 1 (columns 64-127)
 *     rows 0-7     [atom: 8 x 128 B, swizzled]     [atom]            next 8 rows: +1024 B (SBO)
 *     rows 8-15    [atom]                          [atom]            next panel:  +R * 128 B
 *     ...
 */
// clang-format on

/** A descriptor of a tile in the 128-byte swizzle (the layout drawn above): @p smem its first element (inside a
 *  1024-byte aligned panel), @p lbo and @p sbo as for ladder_wgmma_desc(). */
__device__ __forceinline__ uint64_t ladder_wgmma_desc_sw128(const void *smem, uint32_t lbo, uint32_t sbo) {
    return ladder_wgmma_desc_address(smem) | ladder_wgmma_desc_fields(lbo, sbo, 1);
}

/** A K-major operand in 128-byte swizzled panels (Q for A, K for K^T as B), its first row at @p at. */
__device__ __forceinline__ uint64_t ladder_wgmma_desc_sw128_k(const uint16_t *at) {
    return ladder_wgmma_desc_sw128(at, 16u, 1024u);
}

/** An MN-major B in 128-byte swizzled panels of @p rows rows (V for P V: k down the rows), its first k at @p at. */
__device__ __forceinline__ uint64_t ladder_wgmma_desc_sw128_mn(const uint16_t *at, int rows) {
    return ladder_wgmma_desc_sw128(at, (uint32_t)rows * 128u, 1024u);
}

/**
 * wgmma.fence: the registers that a following wgmma.mma_async reads or accumulates into (D, and A in the RS form)
 * were last written by ordinary instructions, which must be done first. Needed before the first wgmma of a
 * warpgroup and after any such write (a rescaled O, a freshly packed P); a chain of wgmmas on the same
 * accumulators needs none between them. Every thread of the warpgroup executes it.
 */
__device__ __forceinline__ void ladder_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

/** wgmma.commit_group: the wgmmas this warpgroup issued since the last commit become one group. */
__device__ __forceinline__ void ladder_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

/** wgmma.wait_group N: wait until at most @p N committed groups are in flight (0: all done). Only then may their
 *  accumulators be read, and the shared memory they read be overwritten. */
template <int N> __device__ __forceinline__ void ladder_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/**
 * fence.proxy.async.shared::cta: wgmma reads shared memory through the async proxy, and writes made through the
 * generic proxy (st.shared, and cp.async's copies) are not ordered with it by a barrier alone. Each thread that
 * wrote a tile runs this after its writes are complete (after cp.async.wait_group), and before the __syncthreads()
 * that lets the warpgroups multiply the tile.
 */
__device__ __forceinline__ void ladder_fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/**
 * Pin the registers @p d (accumulators) in place for the compiler: ordinary instructions that write them stay
 * before this point, and those that read them after it. Put before ladder_wgmma_fence() and after
 * ladder_wgmma_wait(), so that the compiler moves no access to them into the window where the tensor cores own them.
 */
template <int N8> __device__ __forceinline__ void ladder_wgmma_hold(float (&d)[N8][4]) {
#pragma unroll
    for (int i = 0; i < N8; i++)
#pragma unroll
        for (int c = 0; c < 4; c++) asm volatile("" : "+f"(d[i][c])::"memory");
}

/** The same for an A fragment in registers (the RS form). */
__device__ __forceinline__ void ladder_wgmma_hold(uint32_t (&a)[4]) {
#pragma unroll
    for (int c = 0; c < 4; c++) asm volatile("" : "+r"(a[c])::"memory");
}

// clang-format off
/* The accumulator operands of an m64nN step: N / 2 registers a thread, d[0][0..3], d[1][0..3], ... (ACC) and their
 * places in the PTX string (DREGS), for N = 32, 64, 128 and 256 */
#define LADDER_WGMMA_ACC4(d, i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define LADDER_WGMMA_ACC16(d, i)                                                                                      \
    LADDER_WGMMA_ACC4(d, i), LADDER_WGMMA_ACC4(d, i + 1), LADDER_WGMMA_ACC4(d, i + 2), LADDER_WGMMA_ACC4(d, i + 3)
#define LADDER_WGMMA_ACC32(d, i) LADDER_WGMMA_ACC16(d, i), LADDER_WGMMA_ACC16(d, i + 4)
#define LADDER_WGMMA_ACC64(d, i) LADDER_WGMMA_ACC32(d, i), LADDER_WGMMA_ACC32(d, i + 8)
#define LADDER_WGMMA_ACC128(d) LADDER_WGMMA_ACC64(d, 0), LADDER_WGMMA_ACC64(d, 16)
#define LADDER_WGMMA_D16                                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define LADDER_WGMMA_D32                                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                         \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define LADDER_WGMMA_D64                                                                                              \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                         \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define LADDER_WGMMA_D128                                                                                             \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                         \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                                \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                                \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                                \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                    \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"

/*
 * The PTX, per form and N (TY: bf16 or f16). Operands: the accumulators, then (SS) the A and B descriptors or (RS)
 * A's four registers and the B descriptor, then scale-d (a predicate: 0 means D = A B, ignoring D's old value), then
 * the immediates imm-scale-a = 1, imm-scale-b = 1 (no negation), imm-trans-a (SS only; 0: A K-major, 1: A MN-major)
 * and imm-trans-b (0: B K-major, 1: B MN-major).
 */
#define LADDER_WGMMA_SS(TY, N, DREGS, DOPS, IA, IB, IS, ITA, IT)                                                      \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IS ", 0;\n"                                                    \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " DREGS ", %" IA ", %" IB              \
                 ", p, 1, 1, %" ITA ", %" IT ";\n}\n"                                                                  \
                 : DOPS                                                                                                \
                 : "l"(a), "l"(b), "r"((int)accumulate), "n"(A_MN ? 1 : 0), "n"(B_MN ? 1 : 0)                        \
                 : "memory")
#define LADDER_WGMMA_RS(TY, N, DREGS, DOPS, A0, IB, IS, IT)                                                           \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" IS ", 0;\n"                                                    \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " DREGS ", " A0 ", %" IB              \
                 ", p, 1, 1, %" IT ";\n}\n"                                                                            \
                 : DOPS                                                                                                \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"((int)accumulate), "n"(B_MN ? 1 : 0)        \
                 : "memory")
/* one SS (or RS) step for each N the rung multiplies: the operand numbers follow the N / 2 accumulators */
#define LADDER_WGMMA_SS_N(TY)                                                                                         \
    if constexpr (N == 32)                                                                                            \
        LADDER_WGMMA_SS(TY, 32, LADDER_WGMMA_D16, LADDER_WGMMA_ACC16(d, 0), "16", "17", "18", "19", "20");            \
    else if constexpr (N == 64)                                                                                       \
        LADDER_WGMMA_SS(TY, 64, LADDER_WGMMA_D32, LADDER_WGMMA_ACC32(d, 0), "32", "33", "34", "35", "36");            \
    else if constexpr (N == 128)                                                                                      \
        LADDER_WGMMA_SS(TY, 128, LADDER_WGMMA_D64, LADDER_WGMMA_ACC64(d, 0), "64", "65", "66", "67", "68");           \
    else                                                                                                              \
        LADDER_WGMMA_SS(TY, 256, LADDER_WGMMA_D128, LADDER_WGMMA_ACC128(d), "128", "129", "130", "131", "132")
#define LADDER_WGMMA_RS_N(TY)                                                                                         \
    if constexpr (N == 32)                                                                                            \
        LADDER_WGMMA_RS(TY, 32, LADDER_WGMMA_D16, LADDER_WGMMA_ACC16(d, 0), "{%16, %17, %18, %19}", "20", "21", "22"); \
    else if constexpr (N == 64)                                                                                       \
        LADDER_WGMMA_RS(TY, 64, LADDER_WGMMA_D32, LADDER_WGMMA_ACC32(d, 0), "{%32, %33, %34, %35}", "36", "37", "38"); \
    else if constexpr (N == 128)                                                                                      \
        LADDER_WGMMA_RS(TY, 128, LADDER_WGMMA_D64, LADDER_WGMMA_ACC64(d, 0), "{%64, %65, %66, %67}", "68", "69",      \
                        "70");                                                                                        \
    else                                                                                                              \
        LADDER_WGMMA_RS(TY, 256, LADDER_WGMMA_D128, LADDER_WGMMA_ACC128(d), "{%128, %129, %130, %131}", "132", "133", \
                        "134")
// clang-format on

/**
 * D (+)= A B, one warpgroup-wide m64nNk16 step (N = 32, 64, 128 or 256) with fp32 accumulators @p d (the layout drawn
 * above), A (64 x 16; K-major, or MN-major with @p A_MN: 8 consecutive m of one k per core-matrix row, as B's
 * MN-major layout with m for n) and B (16 x N; K-major, or MN-major with @p B_MN) both read from shared memory
 * through the descriptors @p a and @p b. @p accumulate false: D = A B, whatever @p d held. Asynchronous: issue it
 * between ladder_wgmma_fence() and ladder_wgmma_commit(), and read @p d after ladder_wgmma_wait(). All 128 threads
 * of the warpgroup call it together.
 */
template <class T, int N, bool B_MN, bool A_MN = false>
__device__ __forceinline__ void ladder_wgmma_ss(float (&d)[N / 8][4], uint64_t a, uint64_t b, bool accumulate) {
    static_assert(N == 32 || N == 64 || N == 128 || N == 256, "this rung multiplies 32- to 256-column tiles");
    constexpr bool BF16 = std::is_same<T, __nv_bfloat16>::value;
    static_assert(BF16 || std::is_same<T, __half>::value, "bf16 or fp16 operands");
    if constexpr (BF16) {
        LADDER_WGMMA_SS_N("bf16");
    } else {
        LADDER_WGMMA_SS_N("f16");
    }
}

/**
 * The same with A from registers (the RS form): @p a is the warp's A fragment of the 64 x 16 A (layout above), B
 * (16 x N) from shared memory through the descriptor @p b, K-major or, with @p B_MN, MN-major. ladder_wgmma_fence()
 * must also separate the instructions that wrote @p a from this one, and @p a must stay unchanged until the wait.
 */
template <class T, int N, bool B_MN>
__device__ __forceinline__ void ladder_wgmma_rs(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t b,
                                                bool accumulate) {
    static_assert(N == 32 || N == 64 || N == 128 || N == 256, "this rung multiplies 32- to 256-column tiles");
    constexpr bool BF16 = std::is_same<T, __nv_bfloat16>::value;
    static_assert(BF16 || std::is_same<T, __half>::value, "bf16 or fp16 operands");
    if constexpr (BF16) {
        LADDER_WGMMA_RS_N("bf16");
    } else {
        LADDER_WGMMA_RS_N("f16");
    }
}

#undef LADDER_WGMMA_SS_N
#undef LADDER_WGMMA_RS_N
#undef LADDER_WGMMA_SS
#undef LADDER_WGMMA_RS
#undef LADDER_WGMMA_D16
#undef LADDER_WGMMA_D32
#undef LADDER_WGMMA_D64
#undef LADDER_WGMMA_D128
#undef LADDER_WGMMA_ACC4
#undef LADDER_WGMMA_ACC16
#undef LADDER_WGMMA_ACC32
#undef LADDER_WGMMA_ACC64
#undef LADDER_WGMMA_ACC128

#endif

/**
 * @file flex_lines.h
 * @brief The lines of the Sq x Sk plane along which a buffer read takes one element, and the numbering that a tiled
 *        backward sums a buffer gradient with, tile by tile (gcc and nvcc).
 *
 * A buffer gradient is the sum of dS * dS/dx over every score that read element x (common/flex.h). Every built-in
 * read takes an element that depends on the score's position (i, j) through one line of the plane only, and on the
 * batch row not at all: a diagonal j - i (alibi's slope, rel_bias, t5_bias's bucket), a row i (bq) or a column j (bk)
 * (ladder_flex_read_line()). So the gradient is a sum of line sums, and the fast GPU rungs (common/flex_gpu.cuh) find
 * them in three steps, each sum in a fixed order, with no atomics:
 *
 *   1. tile: the dQ pass's block owns query tile qt (rows qt*BR ...) of head h in batch row b and visits each of its
 *      key tiles once. A BR x BC tile at keys j0 crosses BR + BC - 1 diagonals, BR rows and BC columns, numbered
 *      within the tile by ladder_flex_tile_line(); the block sums the tile's shares along each and adds the sum into
 *      its own row of partials, part[b, h, qt, slot], at slot ladder_flex_tile_slot(). A row holds a slot for every
 *      line that a tile of those rows can cross (ladder_flex_partial_width()): Sk + BR - 1 diagonals, BR rows or Sk
 *      columns, so that the scratch grows with the lines times the query tiles, not with Sq x Sk.
 *   2. plane: one thread per line n of the plane (ladder_flex_lines()) and head adds the partials of that line,
 *      batch rows outer, query tiles in order, each at slot ladder_flex_partial_slot() of its query tile.
 *   3. scatter: the element that line n reads (asked of the mod at ladder_flex_line_first()) gets the line's sum.
 *
 * Steps 1 and 2 meet at one identity: element (r, c) of the tile at (qt*BR, j0), on tile line l, lies on the plane's
 * line n, and ladder_flex_partial_slot(n, qt) == ladder_flex_tile_slot(l, j0). tests/test_flex.c proves it for every
 * kind of line on tiles of every width the rungs use.
 */
#ifndef LADDER_FLEX_LINES_H
#define LADDER_FLEX_LINES_H

#include <assert.h>
#include <stdint.h>

#include "flex_mods.h"
#include "host_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The line of the Sq x Sk plane along which the element a read takes stays the same. */
typedef enum ladder_flex_line {
    LADDER_FLEX_DIAGONAL, /**< j - i: line n = j - i + Sq - 1 */
    LADDER_FLEX_ROW,      /**< row i: line n = i */
    LADDER_FLEX_COLUMN    /**< column j: line n = j */
} ladder_flex_line;

static_assert(LADDER_FLEX_SCORE_COUNT == 6, "a new score mod: name the line of each of its reads here");

/** The line of read @p r of score mod @p mod (one line per read of a buffer: a new mod adds its own here). */
LADDER_HOST_DEVICE ladder_flex_line ladder_flex_read_line(int mod, int r) {
    if (mod == LADDER_FLEX_BIAS_QK) return r == 0 ? LADDER_FLEX_ROW : LADDER_FLEX_COLUMN; /* bq[h, i], bk[h, j] */
    return LADDER_FLEX_DIAGONAL; /* alibi slopes[h] (every diagonal), rel_bias[h, j - i], t5_bias[h, bucket(j - i)] */
}

/** Lines of each kind in the plane: Sq + Sk - 1 diagonals, Sq rows, Sk columns. */
LADDER_HOST_DEVICE int64_t ladder_flex_lines(ladder_flex_line line, int64_t Sq, int64_t Sk) {
    return line == LADDER_FLEX_DIAGONAL ? Sq + Sk - 1 : line == LADDER_FLEX_ROW ? Sq : Sk;
}

/** The line through position (i, j): diagonal n = j - i + Sq - 1, row i or column j. */
LADDER_HOST_DEVICE int64_t ladder_flex_line_of(ladder_flex_line line, int64_t i, int64_t j, int64_t Sq) {
    return line == LADDER_FLEX_DIAGONAL ? j - i + Sq - 1 : line == LADDER_FLEX_ROW ? i : j;
}

/** The first position (*i, *j) of line @p n (its smallest i, then its smallest j). */
LADDER_HOST_DEVICE void ladder_flex_line_first(ladder_flex_line line, int64_t n, int64_t Sq, int64_t *i, int64_t *j) {
    if (line == LADDER_FLEX_DIAGONAL) {
        const int64_t d = n - (Sq - 1); /* j - i */
        *i = d < 0 ? -d : 0, *j = d < 0 ? 0 : d;
    } else if (line == LADDER_FLEX_ROW) {
        *i = n, *j = 0;
    } else {
        *i = 0, *j = n;
    }
}

/** Lines of each kind that a BR x BC tile crosses: BR + BC - 1 diagonals, BR rows, BC columns. */
LADDER_HOST_DEVICE int ladder_flex_tile_lines(ladder_flex_line line, int BR, int BC) {
    return line == LADDER_FLEX_DIAGONAL ? BR + BC - 1 : line == LADDER_FLEX_ROW ? BR : BC;
}

/** The tile's own number of the line through its element (r, c): diagonal c - r + BR - 1, row r or column c. */
LADDER_HOST_DEVICE int ladder_flex_tile_line(ladder_flex_line line, int r, int c, int BR) {
    return line == LADDER_FLEX_DIAGONAL ? c - r + BR - 1 : line == LADDER_FLEX_ROW ? r : c;
}

/** Slots in a query tile's row of partials: the lines that its BR rows meet, Sk + BR - 1 diagonals (j - i from
 *  -(BR - 1) past its first row to Sk - 1), its BR rows, or Sk columns. */
LADDER_HOST_DEVICE int64_t ladder_flex_partial_width(ladder_flex_line line, int64_t Sk, int BR) {
    return line == LADDER_FLEX_DIAGONAL ? Sk + BR - 1 : line == LADDER_FLEX_ROW ? BR : Sk;
}

/** The slot of tile line @p l of the key tile that starts at key @p j0, in its query tile's row of partials
 *  (>= the width: only past the keys, where the tile's shares are zero). */
LADDER_HOST_DEVICE int64_t ladder_flex_tile_slot(ladder_flex_line line, int l, int64_t j0) {
    return (line == LADDER_FLEX_ROW ? 0 : j0) + l;
}

/** The slot of the plane's line @p n in query tile @p qt's row of partials (tiles of @p BR rows); outside
 *  [0, ladder_flex_partial_width()) where no tile of those rows crosses the line. */
LADDER_HOST_DEVICE int64_t ladder_flex_partial_slot(ladder_flex_line line, int64_t n, int64_t qt, int BR, int64_t Sq) {
    if (line == LADDER_FLEX_DIAGONAL) return n - (Sq - 1) + qt * BR + BR - 1; /* j - i + i0 + BR - 1 */
    return line == LADDER_FLEX_ROW ? n - qt * BR : n;
}

/** Floats of one read's partials: a row of ladder_flex_partial_width() per query tile of @p BR rows, per head and
 *  batch row. */
LADDER_HOST_DEVICE int64_t ladder_flex_partial_numel(ladder_flex_line line, int64_t B, int64_t Hq, int64_t Sq,
                                                     int64_t Sk, int BR) {
    return B * Hq * ((Sq + BR - 1) / BR) * ladder_flex_partial_width(line, Sk, BR);
}

#ifdef __cplusplus
}
#endif
#endif

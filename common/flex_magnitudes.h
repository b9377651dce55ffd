/*
 * common/flex_magnitudes.h: flex's ladder_algo::magnitudes, the magnitudes its dq, dk, dv and buffer gradients are
 * checked against (common/flex_magnitudes.c says what they are and why).
 */
#ifndef LADDER_FLEX_MAGNITUDES_H
#define LADDER_FLEX_MAGNITUDES_H

#include "engine.h"

/** The magnitudes of case @p c's dq, dk, dv and buffer gradients (those it writes) into @p m (ladder_algo::magnitudes). */
ladder_status flex_magnitudes(const ladder_case *c, ladder_magnitudes *m);

#endif

/*
 * common/memeff_magnitudes.h: memeff's ladder_algo::magnitudes, the magnitudes its bias's gradient is checked
 * against (common/memeff_magnitudes.c says why, and when).
 */
#ifndef LADDER_MEMEFF_MAGNITUDES_H
#define LADDER_MEMEFF_MAGNITUDES_H

#include "engine.h"

/** The magnitudes of case @p c's dbias, where the case writes one, into @p m (ladder_algo::magnitudes). */
ladder_status memeff_magnitudes(const ladder_case *c, ladder_magnitudes *m);

#endif

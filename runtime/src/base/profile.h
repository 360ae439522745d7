/*
 * Work profile hooks (tgr.h: tgr_profile_op, tgr_profile_unit). A runtime built with
 * TGR_PROFILE=1, the firmware's `profile=1`, calls the application's hooks around every op run
 * and every execution unit, by direct calls (the stack analysis sees them); every other build
 * compiles the calls away, so profiling costs nothing where it is off.
 */
#ifndef TGR_BASE_PROFILE_H
#define TGR_BASE_PROFILE_H

#include "tgr.h"

#ifndef TGR_PROFILE
#define TGR_PROFILE 0
#endif

#if !TGR_PROFILE
#define tgr_profile_op(op, end) ((void)0)
#define tgr_profile_unit(stage, end) ((void)0)
#endif

#endif /* TGR_BASE_PROFILE_H */

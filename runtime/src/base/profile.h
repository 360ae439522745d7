/*
 * Work profile hooks (tgr.h: tgr_profile_op, tgr_profile_unit) and the stage memory hook
 * (tgr_stage_memory). A runtime built with TGR_PROFILE=1, the firmware's `profile=1`, calls the
 * application's hooks around every op run and every execution unit, by direct calls (the stack
 * analysis sees them); every other build compiles the calls away, so profiling costs nothing
 * where it is off.
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

/* Stage memory hook (tgr.h: tgr_stage_memory). A runtime built with TGR_STAGE_MEMORY=1, the
 * firmware's `stage_memory=1`, measures each execution unit's fast and slow high-water marks
 * (executor.c) and reports them to the application; every other build has neither the
 * measurement nor the call. */
#ifndef TGR_STAGE_MEMORY
#define TGR_STAGE_MEMORY 0
#endif

#endif /* TGR_BASE_PROFILE_H */

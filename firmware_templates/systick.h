/*
 * A deterministic count of work on SysTick (docs/firmware.md#work-counter).
 *
 * SysTick runs on the processor clock (CLKSOURCE=1), which QEMU mps3-an547 models as 32 MHz of
 * virtual time. Under `qemu-system-arm -icount shift=0` virtual time advances one nanosecond per
 * guest instruction, so one tick is 31.25 instructions and a reading is identical run to run.
 * Without -icount the counter follows host time and varies. Either way it is a count of work,
 * not a latency: QEMU does not model the M55's timing, caches or memory speeds.
 *
 * The 24-bit down counter is extended to 32 bits by counting its wraps in SysTick_Handler, so
 * differences of fw_work_now() are exact up to 2^32 ticks (about 134 G instructions).
 */
#ifndef FW_SYSTICK_H
#define FW_SYSTICK_H

#include <stdint.h>

/* The board's SysTick clock as the WORK line names it; main.c defines it per board. */
#ifndef FW_WORK_CLOCK
#define FW_WORK_CLOCK "32MHz-virtual"
#endif

/* Restart the counter from 0; returns 0 if SysTick never started counting (then readings are 0). */
int fw_work_start(void);
/* Ticks since fw_work_start(), modulo 2^32 (subtract two readings for an interval). */
uint32_t fw_work_now(void);
/* Stop the counter and drop a pending SysTick interrupt. */
void fw_work_stop(void);

#endif /* FW_SYSTICK_H */

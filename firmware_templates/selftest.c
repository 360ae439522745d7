/*
 * Test-only fault/exit hooks. NOT part of the default firmware: compile this file and main.c
 * with -DFW_SELFTEST=<n> to make main() call fw_selftest(n) right after BENCH_START.
 *
 *   1  load from 0xF0000000 (bus error)         -> HardFault report, exit 3
 *   2  UDF instruction                          -> HardFault report, exit 3
 *   3  unbounded recursion (MSPLIM stack overflow, STKOF) -> HardFault report, exit 3
 *   4  pend + enable IRQ 5                      -> Default_Handler report, exit 4
 *   5  AIRCR.SYSRESETREQ (guest reset)          -> with -no-reboot QEMU exits 0 without BENCH_END
 *   6  semihosting exit with status 42          -> exit 42
 *   7  spin forever                             -> only the external timeout ends it
 *   8  read the SysTick work counter (systick.h) until it passes three wraps of its 24-bit
 *      counter; prints `SYSTICK wraps=.. readings=.. max_step=.. backwards=..`, exit 0
 *      (run with -icount shift=5: about 50 M instructions)
 *   9  SHA-256 of the plan in its window (file_size from its header), timed on the SysTick work
 *      counter: `SHA256 bytes=.. ticks=.. first_word=..`, exit 0 -- what validate=digest costs
 *      at boot (with -icount shift=0: ticks x 31.25 = instructions on mps3-an547)
 * Any other value returns and the firmware continues normally.
 */
#include <stdint.h>

#include "semihosting.h"
#include "sha256.h"
#include "systick.h"

extern const uint8_t __plan_base[];

void fw_selftest(int which);

#define NVIC_ISER0 (*(volatile uint32_t *)0xE000E100u)
#define NVIC_ISPR0 (*(volatile uint32_t *)0xE000E200u)
#define SCB_AIRCR (*(volatile uint32_t *)0xE000ED0Cu)

__attribute__((noinline)) static uint32_t fw_selftest_recurse(volatile uint32_t depth)
{
    volatile uint8_t pad[256];
    if (depth == 0xFFFFFFFFu) {
        return 0u;                      /* never: keeps -Winfinite-recursion quiet */
    }
    pad[depth & 0xFFu] = (uint8_t)depth;
    return fw_selftest_recurse(depth + 1u) + pad[(depth + 1u) & 0xFFu];
}

void fw_selftest(int which)
{
    sh_puts("SELFTEST ");
    sh_put_i32(which);
    sh_newline();
    switch (which) {
    case 1:
        (void)*(volatile uint32_t *)0xF0000000u;
        break;
    case 2:
        __asm__ volatile("udf #0");
        break;
    case 3:
        (void)fw_selftest_recurse(0u);
        break;
    case 4:
        NVIC_ISER0 = 1u << 5;
        NVIC_ISPR0 = 1u << 5;
        __asm__ volatile("dsb\n\tisb\n\tcpsie i" ::: "memory");
        break;
    case 5:
        SCB_AIRCR = (0x05FAu << 16) | (1u << 2);
        __asm__ volatile("dsb" ::: "memory");
        for (;;) {
        }
    case 6:
        sh_exit(42);
    case 7:
        for (;;) {
        }
    case 8: {
        const uint32_t end = (3u << 24) + 4096u;
        uint32_t readings = 0u, max_step = 0u, backwards = 0u;
        const int counting = fw_work_start();
        uint32_t prev = fw_work_now(), now = prev;
        while (counting && now < end && readings < 100000000u) {
            now = fw_work_now();
            if (now < prev) {
                ++backwards;
            } else if (now - prev > max_step) {
                max_step = now - prev;
            }
            prev = now;
            ++readings;
        }
        fw_work_stop();
        sh_puts("SYSTICK");
        sh_put_kv_u32("wraps", now >> 24);
        sh_put_kv_u32("readings", readings);
        sh_put_kv_u32("max_step", max_step);
        sh_put_kv_u32("backwards", backwards);
        sh_put_kv_u32("after_stop", fw_work_now());
        sh_newline();
        sh_exit(0);
    }
    case 9: {
        uint8_t digest[32];
        const uint32_t size = (uint32_t)__plan_base[8] | ((uint32_t)__plan_base[9] << 8) |
                              ((uint32_t)__plan_base[10] << 16) | ((uint32_t)__plan_base[11] << 24);
        const int counting = fw_work_start();
        fw_sha256(__plan_base, size, digest);
        const uint32_t ticks = counting ? fw_work_now() : 0u;
        fw_work_stop();
        sh_puts("SHA256");
        sh_put_kv_u32("bytes", size);
        sh_put_kv_u32("ticks", ticks);
        sh_put_kv_u32("first_word", ((uint32_t)digest[0] << 24) | ((uint32_t)digest[1] << 16) |
                                        ((uint32_t)digest[2] << 8) | digest[3]);
        sh_newline();
        sh_exit(0);
    }
    default:
        break;
    }
    sh_puts("SELFTEST ");
    sh_put_i32(which);
    sh_puts(" returned");
    sh_newline();
}

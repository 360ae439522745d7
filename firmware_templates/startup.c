/*
 * Start-up code for the Cortex-M cores of the supported boards (mps3-an547 Cortex-M55, mps2-an386
 * Cortex-M4, mps2-an500 Cortex-M7, mps2-an505 Cortex-M33; also fine on the real FPGA images).
 *
 * - Vector table: 16 system entries + 96 IRQs, 512-byte aligned, section .vectors (linked at 0).
 * - Reset_Handler (naked): enables CP10/CP11 before any compiler-generated FP code, sets the
 *   stack pointer and, on Armv8-M, the stack limit (MSPLIM = __stack_limit, so a stack overflow
 *   raises a STKOF UsageFault instead of silently overwriting .bss/arenas), then jumps to reset_c().
 * - fw_reset_c(): copies .data, zeroes .bss, paints the free stack, runs .preinit_array and
 *   .init_array, sets VTOR, calls main() and hands its return value to the semihosting exit
 *   (QEMU exit status). fw_stack_peak_bytes() reads the stack high-water mark back.
 * - HardFault_Handler: reports pc, lr, xpsr, CFSR, HFSR, BFAR, MMFAR and exits with status 3.
 * - Default_Handler: every other exception/IRQ; reports IPSR and exits with status 4.
 */
#include <stdint.h>

#include "semihosting.h"

#define FW_EXIT_HARDFAULT 3
#define FW_EXIT_UNEXPECTED_EXCEPTION 4

#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define SCB_CFSR (*(volatile uint32_t *)0xE000ED28u)
#define SCB_HFSR (*(volatile uint32_t *)0xE000ED2Cu)
#define SCB_MMFAR (*(volatile uint32_t *)0xE000ED34u)
#define SCB_BFAR (*(volatile uint32_t *)0xE000ED38u)

#define FW_NUM_SYSTEM_VECTORS 16u
/* External interrupt vectors. The firmware enables no interrupt (SysTick is a system exception),
 * so the core never fetches one and a product build carries none: 384 bytes less flash. The
 * self-test build keeps all 96, so that an unexpected interrupt is reported (self-test 4). */
#ifdef FW_SELFTEST
#define FW_NUM_IRQ_VECTORS 96u
#else
#define FW_NUM_IRQ_VECTORS 0u
#endif

typedef void (*fw_handler_t)(void);

/* Linker-script symbols (firmware.ld). */
extern uint32_t __stack_top[];
extern uint32_t __stack_limit[];
extern uint32_t __data_load[];
extern uint32_t __data_start[];
extern uint32_t __data_end[];
extern uint32_t __bss_start[];
extern uint32_t __bss_end[];
extern fw_handler_t __preinit_array_start[];
extern fw_handler_t __preinit_array_end[];
extern fw_handler_t __init_array_start[];
extern fw_handler_t __init_array_end[];

int main(void);

void Reset_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);
__attribute__((noreturn)) void fw_reset_c(void);
uint32_t fw_stack_peak_bytes(void);

#define FW_STACK_PAINT 0xCDCDCDCDu
__attribute__((noreturn)) void fw_hardfault_report(const uint32_t *frame, uint32_t exc_return);

/* Overridable system handlers: all default to Default_Handler (exit 4). */
void NMI_Handler(void) __attribute__((weak, alias("Default_Handler")));
void MemManage_Handler(void) __attribute__((weak, alias("Default_Handler")));
void BusFault_Handler(void) __attribute__((weak, alias("Default_Handler")));
void UsageFault_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SecureFault_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SVC_Handler(void) __attribute__((weak, alias("Default_Handler")));
void DebugMon_Handler(void) __attribute__((weak, alias("Default_Handler")));
void PendSV_Handler(void) __attribute__((weak, alias("Default_Handler")));
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));

/* A vector is a handler address, except entry 0 (the initial MSP): a union keeps both ISO C. */
typedef union fw_vector {
    fw_handler_t handler;
    const void *stack_top;
} fw_vector_t;

#define FW_H(h) { .handler = (h) }
#define FW_IRQ16(h) FW_H(h), FW_H(h), FW_H(h), FW_H(h), FW_H(h), FW_H(h), FW_H(h), FW_H(h), \
                    FW_H(h), FW_H(h), FW_H(h), FW_H(h), FW_H(h), FW_H(h), FW_H(h), FW_H(h)

__attribute__((section(".vectors"), used, aligned(512)))
const fw_vector_t fw_vector_table[FW_NUM_SYSTEM_VECTORS + FW_NUM_IRQ_VECTORS] = {
    { .stack_top = __stack_top },   /* 0: initial MSP */
    FW_H(Reset_Handler),            /* 1 */
    FW_H(NMI_Handler),              /* 2 */
    FW_H(HardFault_Handler),        /* 3 */
    FW_H(MemManage_Handler),        /* 4 */
    FW_H(BusFault_Handler),         /* 5 */
    FW_H(UsageFault_Handler),       /* 6 */
    FW_H(SecureFault_Handler),      /* 7 */
    FW_H(0), FW_H(0), FW_H(0),      /* 8-10: reserved */
    FW_H(SVC_Handler),              /* 11 */
    FW_H(DebugMon_Handler),         /* 12 */
    FW_H(0),                        /* 13: reserved */
    FW_H(PendSV_Handler),           /* 14 */
    FW_H(SysTick_Handler),          /* 15 */
#ifdef FW_SELFTEST
    /* 16..111: external interrupts 0..95 */
    FW_IRQ16(Default_Handler), FW_IRQ16(Default_Handler), FW_IRQ16(Default_Handler),
    FW_IRQ16(Default_Handler), FW_IRQ16(Default_Handler), FW_IRQ16(Default_Handler),
#endif
};

/* Armv8-M cores (M33, M55) have stack limit registers: MSPLIM = __stack_limit turns a stack
 * overflow into a STKOF UsageFault. Armv7-M (M4, M7) has none; there the stack paint is all. */
#if defined(__ARM_ARCH) && __ARM_ARCH >= 8
#define FW_SET_MSPLIM \
    "movw r0, #:lower16:__stack_limit\n" \
    "movt r0, #:upper16:__stack_limit\n" \
    "msr  msplim, r0\n"
#define FW_CLEAR_STACK_LIMITS \
    "movs  r2, #0\n" \
    "msr   msplim, r2\n" \
    "msr   psplim, r2\n"
#else
#define FW_SET_MSPLIM
#define FW_CLEAR_STACK_LIMITS
#endif

/* Runs before anything else: no stack use, no FP, no C. */
__attribute__((naked, noreturn)) void Reset_Handler(void)
{
    __asm__ volatile(
        /* CPACR (0xE000ED88) |= CP10/CP11 full access */
        "movw r0, #0xED88\n"
        "movt r0, #0xE000\n"
        "ldr  r1, [r0]\n"
        "orr  r1, r1, #(0xF << 20)\n"
        "str  r1, [r0]\n"
        "dsb\n"
        "isb\n"
        /* MSP = __stack_top (also in vector 0), MSPLIM = __stack_limit */
        "movw r0, #:lower16:__stack_top\n"
        "movt r0, #:upper16:__stack_top\n"
        "msr  msp, r0\n"
        FW_SET_MSPLIM
        "isb\n"
        "b    fw_reset_c\n");
}

__attribute__((used, noreturn, noinline, optimize("no-tree-loop-distribute-patterns")))
void fw_reset_c(void)
{
    const uint32_t *src = __data_load;
    for (uint32_t *dst = __data_start; dst < __data_end; ++dst) {
        *dst = *src++;
    }
    for (uint32_t *dst = __bss_start; dst < __bss_end; ++dst) {
        *dst = 0u;
    }
    /* Paint the unused stack (up to 64 bytes below the current SP) for fw_stack_peak_bytes(). */
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (uint32_t *dst = __stack_limit; dst < sp - 16; ++dst) {
        *dst = FW_STACK_PAINT;
    }
    SCB_VTOR = (uint32_t)(uintptr_t)fw_vector_table;
    __asm__ volatile("dsb\n\tisb" ::: "memory");

    for (fw_handler_t *fn = __preinit_array_start; fn < __preinit_array_end; ++fn) {
        (*fn)();
    }
    for (fw_handler_t *fn = __init_array_start; fn < __init_array_end; ++fn) {
        (*fn)();
    }

    sh_exit(main());
}

/* Deepest main-stack use so far, in bytes below __stack_top: the first word from the bottom that
 * no longer holds the paint marks the high-water mark (a word that happened to be written with
 * the paint value would under-report by that word). */
uint32_t fw_stack_peak_bytes(void)
{
    const uint32_t *p = __stack_limit;
    while (p < __stack_top && *p == FW_STACK_PAINT) {
        ++p;
    }
    return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

/* Naked so the stacked frame is found before anything is pushed. Disables the stack limit
 * first: after a stack overflow (STKOF) the report itself needs a little stack below it. */
__attribute__((naked, noreturn)) void HardFault_Handler(void)
{
    __asm__ volatile(
        FW_CLEAR_STACK_LIMITS
        "tst   lr, #4\n"
        "ite   eq\n"
        "mrseq r0, msp\n"
        "mrsne r0, psp\n"
        "mov   r1, lr\n"
        "b     fw_hardfault_report\n");
}

__attribute__((used, noreturn, noinline))
void fw_hardfault_report(const uint32_t *frame, uint32_t exc_return)
{
    /* Basic frame: r0 r1 r2 r3 r12 lr pc xpsr (an FP extended frame starts the same way). */
    sh_ensure_line_start();
    sh_puts("HARDFAULT");
    sh_put_kv_hex32("pc", frame[6]);
    sh_put_kv_hex32("lr", frame[5]);
    sh_put_kv_hex32("xpsr", frame[7]);
    sh_put_kv_hex32("cfsr", SCB_CFSR);
    sh_put_kv_hex32("hfsr", SCB_HFSR);
    sh_put_kv_hex32("bfar", SCB_BFAR);
    sh_put_kv_hex32("mmfar", SCB_MMFAR);
    sh_put_kv_hex32("exc_return", exc_return);
    sh_put_kv_hex32("sp", (uint32_t)(uintptr_t)frame);
    sh_newline();
    sh_exit(FW_EXIT_HARDFAULT);
}

void Default_Handler(void)
{
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    ipsr &= 0x1FFu;
    sh_ensure_line_start();
    sh_puts("UNEXPECTED_EXCEPTION");
    sh_put_kv_u32("ipsr", ipsr);
    if (ipsr >= FW_NUM_SYSTEM_VECTORS) {
        sh_put_kv_u32("irq", ipsr - FW_NUM_SYSTEM_VECTORS);
    }
    sh_newline();
    sh_exit(FW_EXIT_UNEXPECTED_EXCEPTION);
}

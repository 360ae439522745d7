/*
 * SysTick work counter (systick.h; docs/firmware.md#work-counter):
 *   start: CSR = 0, RVR = 0xFFFFFF, clear CVR, wraps = 0, CSR = 7, wait until CVR != 0;
 *   SysTick_Handler counts wraps (every 2^24 ticks);
 *   now = (wraps << 24) + (0xFFFFFF - CVR), read consistently with interrupts masked.
 */
#include "systick.h"

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)

#define SYST_CSR_ENABLE_TICKINT_CPUCLK 7u   /* ENABLE | TICKINT | CLKSOURCE = processor clock */
#define SYST_RELOAD_MAX 0x00FFFFFFu
#define SCB_ICSR_PENDSTSET (1u << 26)
#define SCB_ICSR_PENDSTCLR (1u << 25)
#define FW_WORK_START_SPINS (1u << 24)      /* far more than one tick takes, even without -icount */

static volatile uint32_t fw_work_wraps;
static int fw_work_running;

/* Overrides the weak alias to Default_Handler in startup.c. */
void SysTick_Handler(void)
{
    fw_work_wraps = fw_work_wraps + 1u;
}

int fw_work_start(void)
{
    SYST_CSR = 0u;
    SYST_RVR = SYST_RELOAD_MAX;
    SYST_CVR = 0u;                          /* any write clears the counter */
    SCB_ICSR = SCB_ICSR_PENDSTCLR;
    fw_work_wraps = 0u;
    SYST_CSR = SYST_CSR_ENABLE_TICKINT_CPUCLK;
    /* CVR reads 0 until the first tick reloads it from RVR; a reading before that is garbage. */
    for (uint32_t spin = 0u; spin < FW_WORK_START_SPINS; ++spin) {
        if (SYST_CVR != 0u) {
            fw_work_running = 1;
            return 1;
        }
    }
    fw_work_stop();
    return 0;
}

uint32_t fw_work_now(void)
{
    if (!fw_work_running) {
        return 0u;
    }
    uint32_t primask;
    __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(primask) : : "memory");
    uint32_t cvr = SYST_CVR;
    uint32_t wraps = fw_work_wraps;
    if ((SCB_ICSR & SCB_ICSR_PENDSTSET) != 0u) {
        /* The counter reached 0 and the handler has not run yet (interrupts are masked). Read
         * again: once reloaded (CVR != 0) that wrap belongs to this reading. */
        cvr = SYST_CVR;
        if (cvr != 0u) {
            wraps += 1u;
        }
    }
    __asm__ volatile("msr primask, %0" : : "r"(primask) : "memory");
    return (wraps << 24) + (SYST_RELOAD_MAX - cvr);
}

void fw_work_stop(void)
{
    SYST_CSR = 0u;
    SCB_ICSR = SCB_ICSR_PENDSTCLR;
    fw_work_running = 0;
}

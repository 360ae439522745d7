/*
 * Minimal Arm semihosting layer for the TiGrIS bare-metal firmware (Cortex-M, BKPT 0xAB).
 *
 * No stdio, no malloc. Text goes through a small line buffer that is flushed with one
 * SYS_WRITE0 call per line (or per 128 bytes), so long lines cost few traps. With QEMU's
 * `-semihosting-config ...,chardev=sh0 -chardev stdio,id=sh0` the text appears on stdout.
 */
#ifndef FW_SEMIHOSTING_H
#define FW_SEMIHOSTING_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Semihosting operation numbers used here. */
#define SH_SYS_WRITEC 0x03u
#define SH_SYS_WRITE0 0x04u
#define SH_SYS_EXIT 0x18u
#define SH_SYS_EXIT_EXTENDED 0x20u

/* Reason codes for SYS_EXIT / SYS_EXIT_EXTENDED. */
#define SH_ADP_STOPPED_APPLICATION_EXIT 0x20026u
#define SH_ADP_STOPPED_RUNTIME_ERROR_UNKNOWN 0x20023u

/* Raw, unbuffered calls. */
void sh_write0(const char *s);          /* SYS_WRITE0: NUL-terminated string */
void sh_writec(char c);                 /* SYS_WRITEC: one character */

/* Buffered text output. */
void sh_putc(char c);
void sh_puts(const char *s);            /* no newline appended */
void sh_put_u32(uint32_t v);            /* decimal */
void sh_put_i32(int32_t v);             /* signed decimal */
void sh_put_hex32(uint32_t v);          /* "0x" + 8 lowercase hex digits */
void sh_put_hex8(uint8_t v);            /* 2 lowercase hex digits, no prefix */
void sh_put_kv_u32(const char *key, uint32_t v);    /* " key=<decimal>" */
void sh_put_kv_hex32(const char *key, uint32_t v);  /* " key=0x%08x" */
void sh_newline(void);                  /* '\n' and flush */
void sh_flush(void);
/* Start a fresh line if the current one is not empty (used by the fault handlers). */
void sh_ensure_line_start(void);

/* Flush, then end the simulation with `code` as the host process exit status
 * (SYS_EXIT_EXTENDED {0x20026, code}; falls back to SYS_EXIT if the host lacks it). */
__attribute__((noreturn)) void sh_exit(int code);

#ifdef __cplusplus
}
#endif

#endif /* FW_SEMIHOSTING_H */

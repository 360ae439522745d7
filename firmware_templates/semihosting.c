/*
 * Semihosting calls and small text formatting helpers (see semihosting.h).
 * Written for this project; no stdio, no malloc, no global constructors.
 */
#include "semihosting.h"

#include <stddef.h>

#define SH_LINE_BUFFER 128u

static char sh_buf[SH_LINE_BUFFER + 1u];
static uint32_t sh_len;
static uint8_t sh_mid_line;             /* 1 when the last character written was not '\n' */

static inline uint32_t sh_call(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void sh_write0(const char *s)
{
    (void)sh_call(SH_SYS_WRITE0, s);
}

void sh_writec(char c)
{
    (void)sh_call(SH_SYS_WRITEC, &c);
}

void sh_flush(void)
{
    if (sh_len != 0u) {
        sh_buf[sh_len] = '\0';
        sh_write0(sh_buf);
        sh_len = 0u;
    }
}

void sh_putc(char c)
{
    if (c == '\0') {
        return;                         /* SYS_WRITE0 cannot carry NUL */
    }
    sh_buf[sh_len++] = c;
    sh_mid_line = (uint8_t)(c != '\n');
    if (c == '\n' || sh_len == SH_LINE_BUFFER) {
        sh_flush();
    }
}

void sh_puts(const char *s)
{
    while (*s != '\0') {
        sh_putc(*s++);
    }
}

void sh_newline(void)
{
    sh_putc('\n');
}

void sh_ensure_line_start(void)
{
    if (sh_mid_line) {
        sh_newline();
    }
}

void sh_put_u32(uint32_t v)
{
    char digits[10];
    uint32_t n = 0u;
    do {
        digits[n++] = (char)('0' + (v % 10u));
        v /= 10u;
    } while (v != 0u);
    while (n != 0u) {
        sh_putc(digits[--n]);
    }
}

void sh_put_i32(int32_t v)
{
    if (v < 0) {
        sh_putc('-');
        sh_put_u32(0u - (uint32_t)v);   /* also right for INT32_MIN */
    } else {
        sh_put_u32((uint32_t)v);
    }
}

static const char sh_hex_digits[16] = {
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'
};

void sh_put_hex8(uint8_t v)
{
    sh_putc(sh_hex_digits[v >> 4]);
    sh_putc(sh_hex_digits[v & 0x0Fu]);
}

void sh_put_hex32(uint32_t v)
{
    sh_putc('0');
    sh_putc('x');
    for (int shift = 28; shift >= 0; shift -= 4) {
        sh_putc(sh_hex_digits[(v >> shift) & 0x0Fu]);
    }
}

void sh_put_kv_u32(const char *key, uint32_t v)
{
    sh_putc(' ');
    sh_puts(key);
    sh_putc('=');
    sh_put_u32(v);
}

void sh_put_kv_hex32(const char *key, uint32_t v)
{
    sh_putc(' ');
    sh_puts(key);
    sh_putc('=');
    sh_put_hex32(v);
}

void sh_exit(int code)
{
    sh_flush();
    /* SYS_EXIT_EXTENDED: r1 -> {reason, subcode}; the subcode becomes the exit status. */
    uint32_t block[2];
    block[0] = SH_ADP_STOPPED_APPLICATION_EXIT;
    block[1] = (uint32_t)code;
    (void)sh_call(SH_SYS_EXIT_EXTENDED, block);   /* the asm has a "memory" clobber */
    /* Host without SYS_EXIT_EXTENDED: plain SYS_EXIT can only say "ok" or "failed". On
     * AArch32 its argument is the reason code itself, not a pointer. */
    (void)sh_call(SH_SYS_EXIT, (const void *)(uintptr_t)(code == 0
                                                              ? SH_ADP_STOPPED_APPLICATION_EXIT
                                                              : SH_ADP_STOPPED_RUNTIME_ERROR_UNKNOWN));
    for (;;) {
        __asm__ volatile("wfi");
    }
}

/*
 * Failure reporting (error.c): a status code plus a message, formatted without stdio so the
 * firmware can say why a plan was refused without linking printf.
 *
 * TGR_MESSAGES=0 (the build's `messages=0`) keeps every status code and drops every message
 * text at compile time, for the smallest image: tgr_fail's format and arguments, and the reason
 * strings wrapped in TGR_TEXT, are never compiled, so neither they nor what only they used (op
 * and path names, the formatter) reach the linker. err->message is then empty.
 */
#ifndef TGR_BASE_ERROR_H
#define TGR_BASE_ERROR_H

#include "tgr.h"

#ifndef TGR_MESSAGES
#define TGR_MESSAGES 1
#endif

/* Keeps a call's arguments as an unevaluated sizeof operand (`(void)sizeof tgr_unevaluated(...)`):
 * type-checked and counted as used, never compiled. What TGR_MESSAGES=0 does to messages and
 * TGR_TRACE=0 (memory/pools.h) to trace events. */
static inline int tgr_unevaluated(const volatile void *first, ...)
{
    (void)first;
    return 0;
}

#if TGR_MESSAGES
/* Record `status` and a message in `err` (may be NULL). The format understands %u (unsigned),
 * %d (int), %x (unsigned, hex) and %s. Returns `status`. */
tgr_status tgr_fail(tgr_error *err, tgr_status status, const char *fmt, ...);
/* A reason string (selection and band checks hand these up to a message). */
#define TGR_TEXT(text) text
#else
/* Record `status` with an empty message in `err` (may be NULL). Returns `status`. */
tgr_status tgr_fail_status(tgr_error *err, tgr_status status);
#define tgr_fail(err, status, ...) ((void)sizeof tgr_unevaluated(__VA_ARGS__), tgr_fail_status((err), (status)))
#define TGR_TEXT(text) ""
#endif

#endif /* TGR_BASE_ERROR_H */

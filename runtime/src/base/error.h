/*
 * Failure reporting (error.c): a status code plus a message, formatted without stdio so the
 * firmware can say why a plan was refused without linking printf.
 */
#ifndef TGR_BASE_ERROR_H
#define TGR_BASE_ERROR_H

#include "tgr.h"

/* Record `status` and a message in `err` (may be NULL). The format understands %u (unsigned),
 * %d (int), %x (unsigned, hex) and %s. Returns `status`. */
tgr_status tgr_fail(tgr_error *err, tgr_status status, const char *fmt, ...);

#endif /* TGR_BASE_ERROR_H */

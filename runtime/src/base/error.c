/*
 * Error reporting without stdio: a bounded formatter for the handful of conversions the
 * runtime's messages use, so the firmware can print why a plan was refused without pulling
 * printf into the image.
 */
#include "base/error.h"

#include <stdarg.h>
#include <stdint.h>

#if TGR_MESSAGES

typedef struct text_sink {
    char *buf;
    uint32_t cap;
    uint32_t len;
} text_sink;

static void put_char(text_sink *s, char c)
{
    if (s->len + 1u < s->cap) {
        s->buf[s->len++] = c;
    }
}

static void put_str(text_sink *s, const char *text)
{
    if (text == NULL) {
        text = "(null)";
    }
    while (*text != '\0') {
        put_char(s, *text++);
    }
}

static void put_unsigned(text_sink *s, uint32_t value, uint32_t base)
{
    char digits[10];
    uint32_t n = 0;
    do {
        uint32_t d = value % base;
        digits[n++] = (char)(d < 10u ? '0' + d : 'a' + (d - 10u));
        value /= base;
    } while (value != 0u);
    while (n > 0u) {
        put_char(s, digits[--n]);
    }
}

tgr_status tgr_fail(tgr_error *err, tgr_status status, const char *fmt, ...)
{
    text_sink sink;
    va_list args;
    if (err == NULL) {
        return status;
    }
    err->status = status;
    sink.buf = err->message;
    sink.cap = (uint32_t)sizeof err->message;
    sink.len = 0;
    va_start(args, fmt);
    for (; *fmt != '\0'; ++fmt) {
        if (*fmt != '%' || fmt[1] == '\0') {
            put_char(&sink, *fmt);
            continue;
        }
        ++fmt;
        switch (*fmt) {
        case 'u':
            put_unsigned(&sink, va_arg(args, unsigned), 10u);
            break;
        case 'x':
            put_unsigned(&sink, va_arg(args, unsigned), 16u);
            break;
        case 'd': {
            int value = va_arg(args, int);
            if (value < 0) {
                put_char(&sink, '-');
                put_unsigned(&sink, (uint32_t)(-(int64_t)value), 10u);
            } else {
                put_unsigned(&sink, (uint32_t)value, 10u);
            }
            break;
        }
        case 's':
            put_str(&sink, va_arg(args, const char *));
            break;
        default:
            put_char(&sink, '%');
            put_char(&sink, *fmt);
            break;
        }
    }
    va_end(args);
    sink.buf[sink.len] = '\0';
    return status;
}
#else
tgr_status tgr_fail_status(tgr_error *err, tgr_status status)
{
    if (err != NULL) {
        err->status = status;
        err->message[0] = '\0';
    }
    return status;
}
#endif

const char *tgr_status_name(tgr_status status)
{
    switch (status) {
    case TGR_OK: return "TGR_OK";
    case TGR_ERR_ARGUMENT: return "TGR_ERR_ARGUMENT";
    case TGR_ERR_PLATFORM: return "TGR_ERR_PLATFORM";
    case TGR_ERR_TRUNCATED: return "TGR_ERR_TRUNCATED";
    case TGR_ERR_MAGIC: return "TGR_ERR_MAGIC";
    case TGR_ERR_VERSION: return "TGR_ERR_VERSION";
    case TGR_ERR_SECTION: return "TGR_ERR_SECTION";
    case TGR_ERR_RANGE: return "TGR_ERR_RANGE";
    case TGR_ERR_TENSOR: return "TGR_ERR_TENSOR";
    case TGR_ERR_QUANT: return "TGR_ERR_QUANT";
    case TGR_ERR_WEIGHT: return "TGR_ERR_WEIGHT";
    case TGR_ERR_OP: return "TGR_ERR_OP";
    case TGR_ERR_STAGE: return "TGR_ERR_STAGE";
    case TGR_ERR_ATTRIBUTE: return "TGR_ERR_ATTRIBUTE";
    case TGR_ERR_UNSUPPORTED: return "TGR_ERR_UNSUPPORTED";
    case TGR_ERR_LIMIT: return "TGR_ERR_LIMIT";
    case TGR_ERR_ARENA: return "TGR_ERR_ARENA";
    case TGR_ERR_EXEC: return "TGR_ERR_EXEC";
    }
    return "TGR_ERR_UNKNOWN";
}

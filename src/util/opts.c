/* opts.c — strict parsers for option and environment values (opts.h). */
#include "opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool opt_int(const char *s, long long lo, long long hi, long long *out)
{
    const char *p = s;
    if (*p == '-' && lo < 0) p++;
    if (!is_digit(*p)) return false;
    for (const char *q = p; *q; q++)
        if (!is_digit(*q)) return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool opt_u64(const char *s, uint64_t *out)
{
    if (!is_digit(*s)) return false;
    for (const char *q = s; *q; q++)
        if (!is_digit(*q)) return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = (uint64_t)v;
    return true;
}

/* digits, optionally "." and digits: its length, 0 if none */
static size_t decimal_len(const char *s)
{
    size_t i = 0;
    while (is_digit(s[i])) i++;
    if (i == 0) return 0;
    if (s[i] == '.') {
        size_t j = i + 1;
        while (is_digit(s[j])) j++;
        if (j == i + 1) return 0; /* "1." */
        i = j;
    }
    return i;
}

bool opt_number(const char *s, double lo, double hi, double *out)
{
    size_t n = decimal_len(s);
    if (!n || s[n]) return false;
    double v = strtod(s, NULL);
    if (!isfinite(v) || v < lo || v > hi) return false;
    *out = v;
    return true;
}

bool opt_size(const char *s, uint64_t *out)
{
    size_t n = decimal_len(s);
    if (!n) return false;
    double v = strtod(s, NULL), mult = 1;
    const char *p = s + n;
    switch (*p) {
    case 'k':
    case 'K':
        mult = 1024.0;
        p++;
        break;
    case 'm':
    case 'M':
        mult = 1024.0 * 1024;
        p++;
        break;
    case 'g':
    case 'G':
        mult = 1024.0 * 1024 * 1024;
        p++;
        break;
    case 't':
    case 'T':
        mult = 1024.0 * 1024 * 1024 * 1024;
        p++;
        break;
    default: break;
    }
    if (mult > 1 && (*p == 'i' || *p == 'I')) p++;
    if (*p == 'b' || *p == 'B') p++;
    if (*p) return false;
    double bytes = v * mult;
    if (!(bytes >= 1) || bytes >= 9223372036854775808.0) return false;
    *out = (uint64_t)bytes;
    return true;
}

int opt_choice(const char *s, const char *const *words)
{
    for (int i = 0; words[i]; i++)
        if (strcmp(s, words[i]) == 0) return i;
    return -1;
}

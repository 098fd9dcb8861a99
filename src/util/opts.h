/* opts.h — one set of rules for the values of command-line options and
 * environment variables, so `--max-memory nan`, `--workers ' 4'` and
 * `QH_WORKERS=100000` are refused the same way everywhere. Every parser
 * takes the whole text (no leading or trailing blanks, no trailing
 * garbage) and returns false for anything else. Knows nothing of qh. */
#ifndef QH_OPTS_H
#define QH_OPTS_H

#include <stdbool.h>
#include <stdint.h>

/* A decimal integer in [lo, hi] ("-" only where lo < 0; no "+", no 0x). */
bool opt_int(const char *s, long long lo, long long hi, long long *out);
/* A non-negative decimal integer up to 2^64 - 1 (a seed). */
bool opt_u64(const char *s, uint64_t *out);
/* A size in bytes: a decimal number (digits, optionally "." and digits),
 * optionally K, M, G or T (powers of 1024, either case), optionally "i",
 * optionally "B": "4G", "512M", "1.5GiB", "100000". Greater than zero and
 * below 2^63 bytes; no nan, inf, exponents, hex or signs. */
bool opt_size(const char *s, uint64_t *out);
/* A decimal number (digits, optionally "." and digits) in [lo, hi]. */
bool opt_number(const char *s, double lo, double hi, double *out);
/* The index of s among the NULL-terminated words, or -1. */
int opt_choice(const char *s, const char *const *words);

#endif

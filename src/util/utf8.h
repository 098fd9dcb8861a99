/* utf8.h — the UTF-8 encoding of one code point, for every writer of text
 * (the JSON and Python-literal readers, chr() and string escapes). It checks
 * nothing: callers refuse surrogates and values past 0x10ffff themselves. */
#ifndef QH_UTF8_H
#define QH_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* writes cp's 1 to 4 bytes to o; returns how many */
static inline size_t utf8_put(uint32_t cp, char o[4])
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

#endif

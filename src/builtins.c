/* builtins.c — the registry of builtins: the rooms' tables joined in the
 * order they were added (one-time init at start-up, read-only afterwards),
 * looked up by name for the resolver and by index for the evaluator.
 * Knows values only. */
#include "builtins.h"
#include "qh_assert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* one-time init: filled by builtins_add before any thread starts */
static const BuiltinDef *all[512];
static int nall;

void builtins_add(const BuiltinDef *t)
{
    for (; t->name; t++) {
        if (nall == (int)(sizeof all / sizeof all[0])) {
            fputs("qh: too many builtins\n", stderr);
            abort();
        }
        qh_assert(t->min >= 0 && (t->max < 0 || t->max >= t->min)); /* an arity that can be met */
        all[nall++] = t;
    }
}

int builtin_lookup(const char *name)
{
    for (int i = 0; i < nall; i++)
        if (strcmp(all[i]->name, name) == 0) return i;
    return -1;
}

int builtin_count(void) { return nall; }

const BuiltinDef *builtin_get(int i)
{
    qh_assert(i >= 0 && i < nall);
    return all[i];
}

Value builtin_value(int i)
{
    qh_assert(i >= 0 && i < nall); /* a slot the resolver gave (builtin_lookup) */
    const BuiltinDef *b = all[i];
    if (b->flags & BI_CONST) return v_num(b->cval);
    Value v;
    v.t = T_BUILTIN;
    v.o = NULL;
    v.bi = b;
    return v;
}

Value builtin_named(const char *name)
{
    int i = builtin_lookup(name);
    if (i < 0) {
        fprintf(stderr, "qh: internal error: no builtin %s\n", name);
        abort();
    }
    return builtin_value(i);
}

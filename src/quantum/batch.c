/* batch.c — batches of states for parameter broadcasting (svmeas.h): n
 * states of the same width in one allocation, each member an SvState view
 * of its slice, and gates applied member by member with per-member
 * parameters (the op is validated once). Measurements are the ordinary
 * ones, called per member. Must not know how the language spells a
 * broadcast parameter.
 */
#include "svmeas.h"
#include "sv_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E_MEMBER "%s (batch member %d)"

size_t sv_batch_bytes(int nq, int n)
{
    size_t one = sv_bytes(nq);
    if (one == SIZE_MAX || n < 0) return SIZE_MAX;
    if (n > 0 && one > SIZE_MAX / (size_t)n) return SIZE_MAX;
    return one * (size_t)n;
}

int sv_batch_init(SvBatch *b, int nq, int n)
{
    memset(b, 0, sizeof *b);
    size_t bytes = sv_batch_bytes(nq, n);
    if (bytes == SIZE_MAX || n < 1) return -1;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes < 64 ? 64 : bytes) != 0 || !p) return -1;
    b->m = calloc((size_t)n, sizeof(SvState));
    if (!b->m) {
        free(p);
        return -1;
    }
    b->amp = p;
    b->n = n;
    b->nq = nq;
    size_t dim = (size_t)1 << nq;
    for (int i = 0; i < n; i++) {
        SvState *s = &b->m[i];
        s->nq = nq;
        s->dim = dim;
        s->amp = b->amp + (size_t)i * dim;
        s->nthreads = 1;
        s->simd = 1;
    }
    sv_batch_reset(b);
    return 0;
}

void sv_batch_free(SvBatch *b)
{
    if (!b) return;
    free(b->amp);
    free(b->m);
    memset(b, 0, sizeof *b);
}

void sv_batch_reset(SvBatch *b)
{
    if (!b || !b->amp) return;
    for (int i = 0; i < b->n; i++) sv_reset(&b->m[i]);
}

void sv_batch_set_threads(SvBatch *b, SvTeam *team, int nthreads)
{
    if (!b) return;
    for (int i = 0; i < b->n; i++) sv_set_threads(&b->m[i], team, nthreads);
}

int sv_batch_apply(SvBatch *b, const SvOp *op, const double *params, char *err, size_t errlen)
{
    if (!b || !b->amp) return sv_err(err, errlen, SV_E_NOSTATE, "sv_batch_apply");
    if (!op) return sv_err(err, errlen, SV_E_NOOP);
    if (!params) {
        for (int i = 0; i < b->n; i++)
            if (sv_apply(&b->m[i], op, err, errlen) != 0)
                return -1; /* the same op: fails on member 0 or never */
        return 0;
    }
    SvOp o = *op;
    int np = op->nparams;
    for (int i = 0; i < b->n; i++) {
        for (int p = 0; p < np && p < 3; p++)
            o.params[p] = params[(size_t)i * (size_t)np + (size_t)p];
        if (sv_apply(&b->m[i], &o, err, errlen) != 0) {
            if (err && errlen) {
                char msg[256];
                snprintf(msg, sizeof msg, "%s", err);
                snprintf(err, errlen, E_MEMBER, msg, i);
            }
            return -1;
        }
    }
    return 0;
}

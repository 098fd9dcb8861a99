/* qdist_none.c — qdist.h without MPI (the meson feature `mpi` off): no
 * state is ever distributed; distributed=true runs on the ordinary
 * statevector (lang/quantum.md). */
#include "qdist.h"
#include "qh_assert.h"

bool qdist_wanted(Interp *in, int nq, bool asked)
{
    (void)in;
    (void)nq;
    (void)asked;
    return false;
}
size_t qdist_local_bytes(Interp *in, int nq)
{
    (void)in;
    (void)nq;
    return 0;
}
QDState *qdist_acquire(Interp *in, int nq, const atomic_int *cancel, char *err, size_t errlen)
{
    (void)in;
    (void)nq;
    (void)cancel;
    snprintf(err, errlen, "this qh was built without MPI");
    return NULL;
}
void qdist_release(QDState *s)
{
    (void)s;
    qh_unreachable();
}
int qdist_nranks(const QDState *s)
{
    (void)s;
    qh_unreachable();
}
int qdist_apply(QDState *s, const SvOp *op, char *err, size_t errlen)
{
    (void)s;
    (void)op;
    (void)err;
    (void)errlen;
    qh_unreachable();
}
int qdist_expval(QDState *s, const QbRead *rq, double *out, char *err, size_t errlen)
{
    (void)s;
    (void)rq;
    (void)out;
    (void)err;
    (void)errlen;
    qh_unreachable();
}
int qdist_var(QDState *s, const QbRead *rq, double *out, char *err, size_t errlen)
{
    (void)s;
    (void)rq;
    (void)out;
    (void)err;
    (void)errlen;
    qh_unreachable();
}
int qdist_sample_pauli(QDState *s, const SvPauli *word, size_t shots, Rng *rng, double *out,
                       char *err, size_t errlen)
{
    (void)s;
    (void)word;
    (void)shots;
    (void)rng;
    (void)out;
    (void)err;
    (void)errlen;
    qh_unreachable();
}
int qdist_probs(QDState *s, const QbRead *rq, double *out, char *err, size_t errlen)
{
    (void)s;
    (void)rq;
    (void)out;
    (void)err;
    (void)errlen;
    qh_unreachable();
}
int qdist_sample(QDState *s, size_t shots, Rng *rng, uint64_t *out, char *err, size_t errlen)
{
    (void)s;
    (void)shots;
    (void)rng;
    (void)out;
    (void)err;
    (void)errlen;
    qh_unreachable();
}
int qdist_measure(QDState *s, int wire, int reset, Rng *rng, char *err, size_t errlen)
{
    (void)s;
    (void)wire;
    (void)reset;
    (void)rng;
    (void)err;
    (void)errlen;
    qh_unreachable();
}
int qdist_state(QDState *s, cplx **out, char *err, size_t errlen)
{
    (void)s;
    (void)out;
    (void)err;
    (void)errlen;
    qh_unreachable();
}

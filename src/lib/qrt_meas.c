/* qrt_meas.c — measurements: expval, var, probs, state, sample, counts,
 * measure (mid-circuit, reset, postselect), density_matrix, purity,
 * vn_entropy, mutual_info, on whichever device the running qfn has, with
 * what they report to drawing and to a differentiated run. Knows values,
 * arrays, the pool (results copied out are reserved from its budget) and
 * the simulators' measurement kernels. */
#include "nplib.h"
#include "qrt_impl.h"
#include "arrayval.h"
#include "array.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void rec_meas(QCtx *q, const char *label, const int *wires, int nw)
{
    QRecord *r = q->rec;
    if (r->nmeas == r->capmeas) {
        r->capmeas = r->capmeas ? 2 * r->capmeas : 4;
        r->meas = xrealloc(r->meas, (size_t)r->capmeas * sizeof(QMeasRec));
    }
    QMeasRec *m = &r->meas[r->nmeas++];
    snprintf(m->label, sizeof m->label, "%s", label);
    m->nwires = nw > 64 ? 64 : nw;
    for (int i = 0; i < m->nwires; i++) m->wires[i] = wires[i];
    m->implicit = false;
}

/* the matrix of a measured Hermitian (one term, a dense block), for drawing <𝓗(M0)> */
static void rec_meas_mat(QCtx *q, const SvTerm *t, int n)
{
    QRecord *r = q->rec;
    if (n != 1 || t[0].kind != SVB_DENSE || !t[0].m || t[0].k > SV_MAX_WIRES) return;
    if (r->nmats == r->capmats) {
        r->capmats = r->capmats ? 2 * r->capmats : 4;
        r->mats = xrealloc(r->mats, r->capmats * sizeof *r->mats);
    }
    size_t d = (size_t)1 << t[0].k;
    QMatRec *m = &r->mats[r->nmats++];
    m->op = SIZE_MAX;
    m->meas = r->nmeas - 1;
    m->dim = (int)d;
    m->m = xmalloc(2 * d * d * sizeof(double));
    for (size_t i = 0; i < d * d; i++) {
        m->m[2 * i] = creal(t[0].m[i]);
        m->m[2 * i + 1] = cimag(t[0].m[i]);
    }
}

/* a measurement of every wire, none named: drawn on the wires the drawing shows */
static void rec_meas_all(QCtx *q, const char *label)
{
    int all[64];
    for (int i = 0; i < q->nq && i < 64; i++) all[i] = i;
    rec_meas(q, label, all, q->nq);
    q->rec->meas[q->rec->nmeas - 1].implicit = true;
}

/* The label of an observable for drawing: Z, Z@Z, X@Y, 𝓗 (sums and
 * Hermitian), |10⟩⟨10| (basis projectors), P (state projectors). */
static void obs_label(const SvTerm *t, int n, char *out, size_t len, int *wires, int *nw)
{
    uint64_t all = 0;
    for (int i = 0; i < n; i++) {
        all |= t[i].x | t[i].z;
        for (int j = 0; t[i].kind != SVB_NONE && j < t[i].k; j++)
            if (t[i].wires[j] < 64) all |= (uint64_t)1 << t[i].wires[j];
    }
    *nw = 0;
    for (int w = 0; w < 64; w++)
        if ((all >> w) & 1) wires[(*nw)++] = w;
    if (n != 1) {
        snprintf(out, len, "\xf0\x9d\x93\x97");
        return;
    } /* script H */
    size_t at = 0;
    out[0] = 0;
    if (!t[0].x && !t[0].z && t[0].kind == SVB_NONE) {
        snprintf(out, len, "I");
        return;
    }
    for (int w = 0; w < 64; w++) {
        bool x = (t[0].x >> w) & 1, z = (t[0].z >> w) & 1;
        if (!x && !z) continue;
        int k = snprintf(out + at, len - at, "%s%s", at ? "@" : "", x && z ? "Y" : x ? "X" : "Z");
        if (k < 0 || (size_t)k >= len - at) break;
        at += (size_t)k;
    }
    if (t[0].kind != SVB_NONE && at < len) {
        char blk[80];
        if (t[0].kind == SVB_DENSE)
            snprintf(blk, sizeof blk, "𝓗");
        else if (t[0].kind == SVB_KET || t[0].k > 16)
            snprintf(blk, sizeof blk, "P");
        else {
            char bits[17];
            for (int i = 0; i < t[0].k; i++) bits[i] = (char)('0' + ((t[0].bits >> i) & 1));
            bits[t[0].k] = 0;
            snprintf(blk, sizeof blk, "|%s⟩⟨%s|", bits, bits);
        }
        snprintf(out + at, len - at, "%s%s", at ? "@" : "", blk);
    }
    if (t[0].coeff != 1) {
        char tmp[96];
        snprintf(tmp, sizeof tmp, "%.3g·%s", t[0].coeff, out);
        snprintf(out, len, "%s", tmp);
    }
}


/* sample(obs) / counts(obs) for drawing: Sample[Z] on the observable's
   wires, as qml.draw labels them */
static bool rec_obs_meas(VM *vm, QCtx *q, const char *what, Value obs, const Node *site)
{
    SvTerm *t;
    uint64_t *idw;
    int n;
    if (!as_terms(vm, obs, &t, &idw, &n, site)) return false;
    free(idw);
    char lb[96], l2[112];
    int ws[64], nw;
    obs_label(t, n, lb, sizeof lb, ws, &nw);
    snprintf(l2, sizeof l2, "%s[%s]", what, lb);
    rec_meas(q, l2, ws, nw);
    rec_meas_mat(q, t, n);
    sv_terms_free(t, n);
    return true;
}

/* ---------------------------------------------------------------- measurements */

/* The Pauli form of an observable without blocks (NULL: it has one). */
static SvPauli *pauli_of(const SvTerm *t, int n)
{
    if (n < 0) return NULL;
    for (int i = 0; i < n; i++)
        if (t[i].kind != SVB_NONE) return NULL;
    SvPauli *p = xmalloc(((size_t)n + 1) * sizeof(SvPauli));
    for (int i = 0; i < n; i++) p[i] = (SvPauli){ t[i].coeff, t[i].x, t[i].z };
    return p;
}

static QCtx *need_q(VM *vm, Args *a)
{
    if (!vm->q) {
        vm_error(vm, a->site, "%s() needs a running quantum function with a device", a->def->name);
        return NULL;
    }
    if (vm->q->capture) {
        vm_error(vm, a->site,
                 "%s() inside adjoint(f), ctrl(f) or matrix(f): only gates can be inverted or "
                 "controlled",
                 a->def->name);
        return NULL;
    }
    if (!qrt_flush(vm, vm->q, a->site)) return NULL; /* the measurement reads the state */
    return vm->q;
}

static bool check_terms(VM *vm, QCtx *q, const SvTerm *t, const uint64_t *idw, int n,
                        const Node *site)
{
    uint64_t all = 0;
    int far = -1;
    for (int i = 0; i < n; i++) {
        all |= t[i].x | t[i].z | (idw ? idw[i] : 0);
        for (int j = 0; t[i].kind != SVB_NONE && j < t[i].k; j++)
            if (t[i].wires[j] > far) far = t[i].wires[j];
    }
    if (all) {
        int hi = 63 - __builtin_clzll(all);
        if (hi > far) far = hi;
    }
    if (far >= q->nq) {
        vm_error(vm, site, "observable on wire %d, outside the %d-wire device", far, q->nq);
        return false;
    }
    return true;
}

/* the observable of expval/var/sample/counts, checked against the running device */
static QCtx *obs_arg(VM *vm, Args *a, SvTerm **t, int *n)
{
    QCtx *q = need_q(vm, a);
    uint64_t *idw;
    if (!q || !as_terms(vm, a->v[0], t, &idw, n, a->site)) return NULL;
    bool ok = check_terms(vm, q, *t, idw, *n, a->site);
    free(idw);
    if (!ok) {
        sv_terms_free(*t, *n);
        return NULL;
    }
    return q;
}

/* The eigen-decomposition of an observable and the probability of each
 * eigenvector on the running device (either kind): what sampling it draws
 * from. false with the error recorded. */
static bool obs_spectrum(VM *vm, QCtx *q, const SvTerm *t, int n, SvSpectrum *sp, double **pj,
                         const Node *site)
{
    char err[256];
    *pj = NULL;
    if (q->ds) {
        vm_error(vm, site,
                 "an observable's samples on a distributed device: only sample() of a single Pauli "
                 "word is available");
        return false;
    }
    if (sv_obs_spectrum(t, n, q->nq, sp, err, sizeof err) != 0) {
        vm_error(vm, site, "%s", err);
        return false;
    }
    *pj = xmalloc((size_t)sp->d * sizeof(double));
    int rc;
    if (!q->dm)
        rc = sv_spectrum_probs(q->s, sp, *pj, err, sizeof err);
    else if (sp->word) {
        SvPauli w = { 1.0, sp->w.x, sp->w.z };
        double e = dm_expval(q->dm, &w, 1), nrm = dm_trace(q->dm);
        double pp = fmax(0, 0.5 * (nrm + e)), pm = fmax(0, 0.5 * (nrm - e));
        (*pj)[0] = sp->w.coeff >= 0 ? pm : pp;
        (*pj)[1] = sp->w.coeff >= 0 ? pp : pm;
        rc = 0;
    } else if (sp->k == 0) {
        (*pj)[0] = 1;
        rc = 0;
    } else {
        size_t d = (size_t)sp->d;
        cplx *rho = xmalloc(d * d * sizeof(cplx));
        rc = dm_reduced(q->dm, sp->wires, sp->k, rho, err, sizeof err);
        if (rc == 0) rc = sv_spectrum_probs_rho(sp, rho, *pj, err, sizeof err);
        free(rho);
    }
    if (rc != 0) {
        free(*pj);
        *pj = NULL;
        sv_spectrum_free(sp);
        vm_error(vm, site, "%s", err);
        return false;
    }
    return true;
}

static uint64_t index_on_wires(uint64_t idx, int nq, const int *ws, int nw);
static bool device_wires_ok(VM *vm, const QCtx *q, const int *ws, int nw, const char *who,
                            const Node *site);

/* ---------------------------------------------------------------- one set of shots */

/* PennyLane draws one set of shots per execution: every shot-based
 * measurement of a call reads the same samples, so counts() are the tally
 * of sample(), a shot-based expval the mean of the samples' eigenvalues.
 * Measurements that need another basis on a wire (PauliX after PauliZ on
 * wire 0: not qubit-wise commuting, which PennyLane runs as another
 * execution) get a set of their own, drawn in their basis. A set holds the
 * basis indices of its shots, wire w read in the X basis when bit w of xm
 * is set, Y when of ym, else Z; it lasts while the state is unchanged
 * (QbDev.changes). */
typedef struct QShotSet {
    uint64_t xm, ym;
    uint64_t at; /* QbDev.changes when drawn */
    size_t n;
    uint64_t *idx;
} QShotSet;

#define MAX_SHOTSETS 16

void qrt_shots_free(QCtx *q)
{
    for (int i = 0; i < q->nshotset; i++) free(q->shotset[i].idx);
    free(q->shotset);
    q->shotset = NULL;
    q->nshotset = 0;
}

/* The state with wires xm turned to the X basis and ym to the Y basis
   (S^dagger then H, PennyLane's diagonalising gates), sampled. */
static int draw_rotated(QCtx *q, uint64_t xm, uint64_t ym, size_t shots, uint64_t *out, char *err,
                        size_t errlen)
{
    SvOp h = { .gate = SV_HADAMARD, .nwires = 1 };
    SvOp sdg = { .gate = SV_PHASESHIFT, .nwires = 1, .nparams = 1, .params = { -M_PI / 2 } };
    int rc = 0;
    if (q->dm) {
        DmState d;
        if (dm_init(&d, q->dm->n) != 0) return snprintf(err, errlen, "out of memory"), -1;
        memcpy(d.v.amp, q->dm->v.amp, q->dm->v.dim * sizeof(cplx));
        for (int w = 0; w < q->nq && !rc; w++) {
            h.wires[0] = sdg.wires[0] = w;
            if ((ym >> w) & 1) rc = dm_apply(&d, &sdg, err, errlen);
            if (!rc && ((xm | ym) >> w) & 1) rc = dm_apply(&d, &h, err, errlen);
        }
        if (!rc) dm_sample(&d, shots, &q->rng, out);
        dm_free(&d);
        return rc;
    }
    SvState s;
    if (sv_init(&s, q->s->nq) != 0) return snprintf(err, errlen, "out of memory"), -1;
    memcpy(s.amp, q->s->amp, q->s->dim * sizeof(cplx));
    for (int w = 0; w < q->nq && !rc; w++) {
        h.wires[0] = sdg.wires[0] = w;
        if ((ym >> w) & 1) rc = sv_apply(&s, &sdg, err, errlen);
        if (!rc && ((xm | ym) >> w) & 1) rc = sv_apply(&s, &h, err, errlen);
    }
    if (!rc) sv_sample(&s, shots, &q->rng, out);
    sv_free(&s);
    return rc;
}

/* The execution's shots for reading the wires wm, those of xm in the X
 * basis and of ym in the Y basis (both within wm): a set drawn earlier
 * from the same state whose bases agree on wm, else a new one. NULL after
 * the error (at site, naming who). */
static const uint64_t *shot_set(VM *vm, QCtx *q, uint64_t xm, uint64_t ym, uint64_t wm,
                                const char *who, const Node *site)
{
    size_t shots = (size_t)q->shots;
    if (q->nshotset && q->shotset[0].at != q->sim.changes) qrt_shots_free(q);
    for (int i = 0; i < q->nshotset; i++) {
        QShotSet *s = &q->shotset[i];
        if (s->n == shots && ((s->xm ^ xm) & wm) == 0 && ((s->ym ^ ym) & wm) == 0) return s->idx;
    }
    if ((xm | ym) && (q->ds || q->nq > 64)) {
        vm_error(vm, site,
                 "%s(): shots in the X or Y basis are not available on a distributed device", who);
        return NULL;
    }
    uint64_t *idx = malloc((shots ? shots : 1) * sizeof(uint64_t));
    if (!idx) {
        vm_error(vm, site, "%s(): out of memory", who);
        return NULL;
    }
    char de[256];
    int rc = (xm | ym) ? draw_rotated(q, xm, ym, shots, idx, de, sizeof de)
                       : q->sim.be->sample(&q->sim, shots, &q->rng, idx, de, sizeof de);
    if (rc) {
        free(idx);
        vm_error(vm, site, "%s(): %s", who, de);
        return NULL;
    }
    if (q->nshotset == MAX_SHOTSETS) { /* the oldest gives way */
        free(q->shotset[0].idx);
        memmove(q->shotset, q->shotset + 1, (MAX_SHOTSETS - 1) * sizeof(QShotSet));
        q->nshotset--;
    }
    if (!q->shotset) q->shotset = xmalloc(MAX_SHOTSETS * sizeof(QShotSet));
    q->shotset[q->nshotset++] = (QShotSet){ xm, ym, q->sim.changes, shots, idx };
    return idx;
}

/* bit of wire w in a basis index of an nq-wire state (wire 0 most significant) */
static inline int shot_bit(uint64_t idx, int nq, int w) { return (int)((idx >> (nq - 1 - w)) & 1); }

/* The wires of a Pauli word in the X and Y bases (Z: the rest of x|z). */
static void word_bases(uint64_t x, uint64_t z, uint64_t *xm, uint64_t *ym)
{
    *xm = x & ~z;
    *ym = x & z;
}

/* An observable made of Pauli words whose words are qubit-wise commuting
 * (on each wire one basis): its bases; false when two words disagree. */
static bool words_qwc(const SvPauli *t, int n, uint64_t *xm, uint64_t *ym, uint64_t *wm)
{
    *xm = *ym = *wm = 0;
    for (int i = 0; i < n; i++) {
        uint64_t x, y, w = t[i].x | t[i].z;
        word_bases(t[i].x, t[i].z, &x, &y);
        uint64_t both = w & *wm;
        if (((x ^ *xm) & both) || ((y ^ *ym) & both)) return false;
        *xm |= x;
        *ym |= y;
        *wm |= w;
    }
    return true;
}

/* The eigenvalue of the word sum t (qubit-wise commuting, bases as drawn)
   on the basis index idx: sum of c * prod over its wires of (-1)^bit. */
static double words_value(const SvPauli *t, int n, uint64_t idx, int nq)
{
    double v = 0;
    for (int i = 0; i < n; i++) {
        uint64_t w = t[i].x | t[i].z;
        int par = 0;
        for (int k = 0; k < nq && w >> k; k++)
            if ((w >> k) & 1) par ^= shot_bit(idx, nq, k);
        v += par ? -t[i].coeff : t[i].coeff;
    }
    return v;
}

/* What a moments read asks (expval, var): <O>, and <O^2> too when want_sq;
   who is the builtin its errors name, at site. */
typedef struct MomentAsk {
    bool want_sq;
    const char *who;
    const Node *site;
} MomentAsk;

/* A moments read's answer: <O> and <O^2> (0 where not asked or not read). */
typedef struct Moments {
    double e, e2;
} Moments;

/* <O> (and <O^2>) of a sum of Pauli words from the execution's shots:
 * each qubit-wise commuting group's words from one set (the first set a
 * word fits). Var needs every word in one group: otherwise false with
 * *grouped false (the caller estimates <O^2> another way). */
static bool words_from_shots(VM *vm, QCtx *q, const SvPauli *t, int n, const MomentAsk *ask,
                             Moments *m)
{
    const char *who = ask->who;
    const Node *site = ask->site;
    size_t shots = (size_t)q->shots;
    uint64_t xm, ym, wm;
    if (ask->want_sq || words_qwc(t, n, &xm, &ym, &wm)) {
        if (!words_qwc(t, n, &xm, &ym, &wm)) {
            vm_error(vm, site,
                     "%s(): with shots, the variance of a sum of Pauli words that do not commute "
                     "qubit-wise is not one measurement (measure each group)",
                     who);
            return false;
        }
        const uint64_t *idx = shot_set(vm, q, xm, ym, wm, who, site);
        if (!idx) return false;
        double s1 = 0, s2 = 0;
        for (size_t i = 0; i < shots; i++) {
            double v = words_value(t, n, idx[i], q->nq);
            s1 += v;
            s2 += v * v;
        }
        m->e = s1 / (double)shots;
        m->e2 = s2 / (double)shots;
        return true;
    }
    double s1 = 0;
    for (int j = 0; j < n; j++) {
        uint64_t x, y;
        word_bases(t[j].x, t[j].z, &x, &y);
        const uint64_t *idx = shot_set(vm, q, x, y, t[j].x | t[j].z, who, site);
        if (!idx) return false;
        double sj = 0;
        for (size_t i = 0; i < shots; i++) sj += words_value(t + j, 1, idx[i], q->nq);
        s1 += sj / (double)shots;
    }
    m->e = s1;
    m->e2 = 0;
    return true;
}

/* <O> and <O^2> estimated from the device's shots draws of O's
   eigenvalues. */
static bool obs_shots(VM *vm, QCtx *q, const SvTerm *t, int n, Moments *m, const Node *site)
{
    long shots = q->shots;
    SvSpectrum sp;
    double *pj;
    if (!obs_spectrum(vm, q, t, n, &sp, &pj, site)) return false;
    uint64_t *cnt = xcalloc((size_t)sp.d, sizeof(uint64_t));
    sv_multinomial(&q->rng, pj, (size_t)sp.d, (uint64_t)shots, cnt);
    double s1 = 0, s2 = 0;
    for (int j = 0; j < sp.d; j++) {
        s1 += (double)cnt[j] * sp.vals[j];
        s2 += (double)cnt[j] * sp.vals[j] * sp.vals[j];
    }
    m->e = s1 / (double)shots;
    m->e2 = s2 / (double)shots;
    free(cnt);
    free(pj);
    sv_spectrum_free(&sp);
    return true;
}

/* Exact <O> and <O^2> of an observable with Hermitian or Projector
 * factors: the state vector's own kernels, or on the mixed device
 * Tr(rho_S M) and Tr(rho_S M^2) with M its matrix on its support S. */
static bool obs_exact(VM *vm, QCtx *q, const SvTerm *t, int n, Moments *mo, const Node *site)
{
    char err[256];
    double *e = &mo->e, *e2 = &mo->e2;
    if (!q->dm) {
        *e = sv_obs_expval(q->s, t, n, err, sizeof err);
        double v = isnan(*e) ? NAN : sv_obs_var(q->s, t, n, err, sizeof err);
        if (isnan(*e) || isnan(v)) {
            vm_error(vm, site, "%s", err);
            return false;
        }
        *e2 = v + *e * *e;
        return true;
    }
    int ws[SV_MAX_WIRES];
    int k = sv_obs_support(t, n, ws);
    if (k > SV_MAX_DENSE) {
        vm_error(vm, site,
                 "an observable with Hermitian or Projector factors on %d wires on the mixed "
                 "device (at most %d)",
                 k, SV_MAX_DENSE);
        return false;
    }
    size_t d = (size_t)1 << k;
    cplx *m = xmalloc(d * d * sizeof(cplx)), *rho = xmalloc(d * d * sizeof(cplx));
    bool ok = sv_obs_matrix(t, n, ws, k, m, err, sizeof err) == 0 &&
              (k == 0 || dm_reduced(q->dm, ws, k, rho, err, sizeof err) == 0);
    if (ok) {
        if (k == 0) rho[0] = dm_trace(q->dm);
        double s1 = 0, s2 = 0;
        for (size_t r = 0; r < d; r++)
            for (size_t c = 0; c < d; c++) {
                s1 += creal(rho[c * d + r] * m[r * d + c]); /* Tr(rho M) */
                cplx m2 = 0;                                /* (M^2)[r][c] */
                for (size_t j = 0; j < d; j++) m2 += m[r * d + j] * m[j * d + c];
                s2 += creal(rho[c * d + r] * m2);
            }
        *e = s1;
        *e2 = s2;
    } else
        vm_error(vm, site, "%s", err);
    free(m);
    free(rho);
    return ok;
}

/* <O> and <O^2> (want_sq) as the device measures them: exact, or
 * estimated from its shots. */
static bool obs_moments(VM *vm, QCtx *q, const SvTerm *t, int n, const MomentAsk *ask, Moments *m)
{
    SvPauli *pw = pauli_of(t, n);
    size_t shots = (size_t)q->shots;
    m->e2 = 0;
    const char *fn = ask->who;
    const Node *site = ask->site;
    if (q->ds && !pw) { /* a distributed state (qdist.h): Pauli words and their sums */
        vm_error(vm, site,
                 "%s(): a Hermitian or Projector observable is not available on a distributed "
                 "device (sums of Pauli words are)",
                 fn);
        return false;
    }
    if (pw && shots) { /* the execution's shots */
        bool ok = words_from_shots(vm, q, pw, n, ask, m);
        free(pw);
        return ok;
    }
    if (pw) { /* the simulator's Pauli kernels: <O>, and <O^2> as the sum O^2 */
        char de[256];
        QbRead rq = { .terms = pw, .nterms = n, .shots = shots, .rng = &q->rng };
        int rc = q->sim.be->expval(&q->sim, &rq, &m->e, de, sizeof de);
        if (!rc && ask->want_sq) {
            SvPauli *sq = NULL;
            int nsq = sv_pauli_square(pw, n, &sq);
            QbRead rq2 = { .terms = sq, .nterms = nsq, .shots = shots, .rng = &q->rng };
            rc = nsq < 0 ? (snprintf(de, sizeof de, "out of memory"), -1)
                         : q->sim.be->expval(&q->sim, &rq2, &m->e2, de, sizeof de);
            free(sq);
        }
        free(pw);
        if (rc) {
            vm_error(vm, site, "%s(): %s", fn, de);
            return false;
        }
        return true;
    }
    if (shots) return obs_shots(vm, q, t, n, m, site);
    return obs_exact(vm, q, t, n, m, site);
}

Value bi_expval(VM *vm, Args *a)
{
    SvTerm *t;
    int n;
    QCtx *q = obs_arg(vm, a, &t, &n);
    if (!q) return v_exc();
    if (q->rec) {
        char lb[96], l2[112];
        int ws[64], nw;
        obs_label(t, n, lb, sizeof lb, ws, &nw);
        snprintf(l2, sizeof l2, "<%s>", lb);
        rec_meas(q, l2, ws, nw);
        rec_meas_mat(q, t, n);
    }
    Moments m;
    if (!obs_moments(vm, q, t, n, &(MomentAsk){ false, "expval", a->site }, &m)) {
        sv_terms_free(t, n);
        return v_exc();
    }
    Value r = q->grec ? qrec_expval(vm, q->grec, t, n, m.e, a->site) : v_num(m.e);
    sv_terms_free(t, n);
    return r;
}

Value bi_var(VM *vm, Args *a)
{
    Value x = a->v[0];
    double d;
    if (a->n != 1 || a->nkw || x.t == T_ARRAY || x.t == T_LIST || tp_number(x, &d) ||
        (x.t != T_OP && x.t >= T_FIRST_OBJ && (type_of(x)->flags & TF_INTERCEPT)))
        return np_var(vm, a, false); /* NumPy's var of an array (nplib.c) */
    SvTerm *t;
    int n;
    QCtx *q = obs_arg(vm, a, &t, &n);
    if (!q) return v_exc();
    if (q->rec) {
        char lb[96], l2[112];
        int ws[64], nw;
        obs_label(t, n, lb, sizeof lb, ws, &nw);
        snprintf(l2, sizeof l2, "Var[%s]", lb);
        rec_meas(q, l2, ws, nw);
        rec_meas_mat(q, t, n);
    }
    SvPauli *pw = q->grec ? NULL : pauli_of(t, n);
    if (pw && q->shots) { /* the variance of the execution's shots' eigenvalues */
        Moments m;
        bool ok = words_from_shots(vm, q, pw, n, &(MomentAsk){ true, "var", a->site }, &m);
        free(pw);
        sv_terms_free(t, n);
        if (!ok) return v_exc();
        double v = m.e2 - m.e * m.e;
        return v_num(v < 0 ? 0 : v);
    }
    if (pw) { /* the Pauli kernels' own variance (one pass) */
        double v;
        char de[256];
        QbRead rq = { .terms = pw, .nterms = n, .shots = (size_t)q->shots, .rng = &q->rng };
        int rc = q->sim.be->var(&q->sim, &rq, &v, de, sizeof de);
        free(pw);
        sv_terms_free(t, n);
        if (rc) return vm_error(vm, a->site, "var(): %s", de);
        return v_num(v);
    }
    /* a differentiated run follows <O> and <O^2> */
    Moments m;
    if (!obs_moments(vm, q, t, n, &(MomentAsk){ true, "var", a->site }, &m)) {
        sv_terms_free(t, n);
        return v_exc();
    }
    double v = m.e2 - m.e * m.e;
    Value r = q->grec ? qrec_var(vm, q->grec, t, n, m.e, m.e2, a->site) : v_num(v < 0 ? 0 : v);
    sv_terms_free(t, n);
    return r;
}

/* A large result copied out of a call (state(), probs() of many wires) is
 * memory the call holds beside its state until the call ends: it is
 * reserved from the pool's budget as a nested call's state is, never
 * waiting (lang/async.md, "Memory"). A budget that holds the state but not
 * the state and its copy fails with the budget error, instead of the
 * process being killed by the kernel. Small results are not counted. */
#define COPY_RESERVE_MIN ((size_t)1 << 20)
static bool reserve_copy(VM *vm, QCtx *q, size_t bytes, const char *what, const Node *site)
{
    QRuntime *rt = vm->in->qrt;
    if (bytes < COPY_RESERVE_MIN || !rt || q->capture) return true;
    size_t total = q->copy_bytes + bytes;
    if (q->copy_token) pool_release(rt->pool, q->copy_token, 0);
    q->copy_token = NULL;
    q->copy_bytes = 0;
    char key[48], err[256], b1[32], b2[32], b3[32];
    snprintf(key, sizeof key, "reserved:%zu", total);
    InstArg ia = { 0, false, true };
    void *t = pool_acquire_nested(rt->pool, key, total, &ia, vm->dev_bytes, err, sizeof err);
    if (!t) {
        vm_error(vm, site,
                 "%s(): its result needs %s beside the %s its call holds, and the budget is %s "
                 "(--max-memory)",
                 what, pool_format_bytes(b1, sizeof b1, total),
                 pool_format_bytes(b2, sizeof b2, vm->dev_bytes),
                 pool_format_bytes(b3, sizeof b3, pool_budget(rt->pool)));
        return false;
    }
    q->copy_token = t;
    q->copy_bytes = total;
    return true;
}

Value bi_probs(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    int ws[64];
    int nw = 0;
    Value *wk = arg_kw(a, "wires");
    Value wv = a->n > 0 ? a->v[0] : (wk ? *wk : v_nil());
    if (wv.t != T_NIL) {
        nw = collect_wires(vm, wv, ws, 30, "probs", a->site);
        if (nw < 0) return v_exc();
    }
    int outw = nw ? nw : q->nq;
    if (outw > 30) return vm_error(vm, a->site, "probs(): at most 30 wires");
    if (q->rec) {
        if (nw)
            rec_meas(q, "Probs", ws, nw);
        else
            rec_meas_all(q, "Probs");
    }
    size_t shape[1] = { (size_t)1 << outw };
    if (!reserve_copy(vm, q, shape[0] * sizeof(double), "probs", a->site)) return v_exc();
    char err[AR_ERRLEN];
    Array *r = ar_new(AR_F64, 1, shape, err);
    if (!r) return vm_error(vm, a->site, "%s", err);
    double *out = ar_f64(r);
    char e2[256];
    if (q->shots && q->nq <= 64) { /* the frequencies of the execution's shots */
        int all[64];
        const int *rw = ws;
        if (!nw) {
            for (int i = 0; i < q->nq; i++) all[i] = i;
            rw = all;
        }
        if (!device_wires_ok(vm, q, rw, outw, "probs", a->site)) {
            ar_free(r);
            return v_exc();
        }
        uint64_t wm = 0;
        for (int i = 0; i < outw; i++) wm |= (uint64_t)1 << rw[i];
        const uint64_t *idx = shot_set(vm, q, 0, 0, wm, "probs", a->site);
        if (!idx) {
            ar_free(r);
            return v_exc();
        }
        memset(out, 0, shape[0] * sizeof(double));
        for (long i = 0; i < q->shots; i++) out[index_on_wires(idx[i], q->nq, rw, outw)] += 1;
        for (size_t j = 0; j < shape[0]; j++) out[j] /= (double)q->shots;
    } else if (q->sim.be->probs(
                   &q->sim,
                   &(QbRead){
                       .wires = ws, .nwires = nw, .shots = (size_t)q->shots, .rng = &q->rng },
                   out, e2, sizeof e2) != 0) {
        ar_free(r);
        return vm_error_from(vm, a->site, "probs()", e2);
    }
    return q->grec ? qrec_probs(vm, q->grec, ws, nw, q->nq, r, a->site) : arr_wrap(r);
}

Value bi_state(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    char err[AR_ERRLEN];
    if (q->grec) qrec_nondiff(q->grec, "state", false);
    if (q->rec) { rec_meas_all(q, "State"); }
    if (q->ds) {
        size_t dshape[1] = { (size_t)1 << q->nq };
        char de[400];
        cplx *amp;
        if (qdist_state(q->ds, &amp, de, sizeof de))
            return vm_error(vm, a->site, "state(): %s", de);
        Array *r = ar_from_data(AR_C128, 1, dshape, amp, err);
        free(amp);
        if (!r) return vm_error(vm, a->site, "%s", err);
        return arr_wrap(r);
    }
    /* the mixed device's state is its density matrix, as default.mixed's qml.state() */
    size_t shape[2] = { q->dm ? q->dm->dim : q->s->dim, q->dm ? q->dm->dim : 0 };
    if (!reserve_copy(vm, q, (q->dm ? q->dm->v.dim : q->s->dim) * sizeof(cplx), "state", a->site))
        return v_exc();
    Array *r = q->dm ? ar_from_data(AR_C128, 2, shape, q->dm->v.amp, err)
                     : ar_from_data(AR_C128, 1, shape, q->s->amp, err);
    if (!r) return vm_error(vm, a->site, "%s", err);
    return arr_wrap(r);
}

static long need_shots(VM *vm, QCtx *q, Args *a)
{
    if (!q->shots) {
        vm_error(vm, a->site,
                 "%s() needs a device with shots, e.g. device(\"%s\", wires=%d, shots=1000)",
                 a->def->name, q->dev->name, q->nq);
        return -1;
    }
    return q->shots;
}

/* A measurement's wire list: each on the device and none twice, checked in
 * order (the error names WHO()); false after the error. */
static bool device_wires_ok(VM *vm, const QCtx *q, const int *ws, int nw, const char *who,
                            const Node *site)
{
    for (int i = 0; i < nw; i++) {
        if (ws[i] >= q->nq) {
            vm_error(vm, site, "%s(): wire %d out of range for a %d-wire device", who, ws[i],
                     q->nq);
            return false;
        }
        for (int j = 0; j < i; j++)
            if (ws[i] == ws[j]) {
                vm_error(vm, site, "%s(): wires must be distinct (wire %d twice)", who, ws[i]);
                return false;
            }
    }
    return true;
}

/* sample()/counts() wires=: the wires read, in the order given (PennyLane's
 * qml.sample(wires=...)); 0 when not given (every wire), -1 after an error.
 * *one: a single wire given as a number, not a list (sample() then drops
 * that axis, as NumPy's x[:, w] does; lang/quantum.md). */
static int meas_wires(VM *vm, QCtx *q, Args *a, int *ws, bool *one)
{
    const char *who = a->def->name;
    Value *wk = arg_kw(a, "wires");
    *one = false;
    if (!wk || wk->t == T_NIL) return 0;
    if (a->n > 0) {
        vm_error(vm, a->site, "%s(): give an observable or wires=, not both", who);
        return -1;
    }
    char what[32];
    snprintf(what, sizeof what, "%s()", who);
    int nw = collect_wires(vm, *wk, ws, 64, what, a->site);
    if (nw < 0) return -1;
    if (nw == 0) {
        vm_error(vm, a->site, "%s(): wires= is empty", who);
        return -1;
    }
    if (!device_wires_ok(vm, q, ws, nw, who, a->site)) return -1;
    *one = wk->t == T_NUM;
    return nw;
}

/* the bits of basis index IDX on wires WS (wire 0 most significant, as in
 * the full index), packed in that order into the low NW bits */
static uint64_t index_on_wires(uint64_t idx, int nq, const int *ws, int nw)
{
    uint64_t r = 0;
    for (int k = 0; k < nw; k++) r = (r << 1) | ((idx >> (nq - 1 - ws[k])) & 1);
    return r;
}
/* sample(obs): shots draws of an observable's eigenvalue, from the
   execution's shots where its Pauli words share one basis per wire, else
   from its own sampler or its spectrum. */
static Value sample_obs(VM *vm, QCtx *q, Args *a, long shots)
{
    char err[AR_ERRLEN];
    SvTerm *t;
    int n;
    uint64_t *idw;
    if (!as_terms(vm, a->v[0], &t, &idw, &n, a->site)) return v_exc();
    bool ok = check_terms(vm, q, t, idw, n, a->site);
    free(idw);
    if (!ok) {
        sv_terms_free(t, n);
        return v_exc();
    }
    size_t shape[1] = { (size_t)shots };
    Array *r = ar_new(AR_F64, 1, shape, err);
    if (!r) {
        sv_terms_free(t, n);
        return vm_error(vm, a->site, "%s", err);
    }
    SvPauli *pw = pauli_of(t, n);
    uint64_t xm, ym, wm;
    bool qwc = pw && words_qwc(pw, n, &xm, &ym, &wm) && (!(xm | ym) || !q->ds);
    if (qwc) { /* Pauli words, one basis per wire: the execution's shots */
        const uint64_t *idx = shot_set(vm, q, xm, ym, wm, "sample", a->site);
        if (idx) {
            double *out = ar_f64(r);
            for (long i = 0; i < shots; i++) out[i] = words_value(pw, n, idx[i], q->nq);
        }
        free(pw);
        sv_terms_free(t, n);
        if (!idx) {
            ar_free(r);
            return v_exc();
        }
        return arr_wrap(r);
    }
    free(pw);
    if (n == 1 && t[0].kind == SVB_NONE &&
        t[0].coeff == 1) { /* a Pauli word on a distributed device: its own sampler */
        SvPauli w = { 1, t[0].x, t[0].z };
        char de[256];
        if (q->sim.be->sample_pauli(&q->sim, &w, (size_t)shots, &q->rng, ar_f64(r), de,
                                    sizeof de)) {
            sv_terms_free(t, n);
            ar_free(r);
            return vm_error(vm, a->site, "sample(): %s", de);
        }
    } else { /* any observable: its eigenvalues, drawn with their probabilities */
        SvSpectrum sp;
        double *pj;
        if (!obs_spectrum(vm, q, t, n, &sp, &pj, a->site)) {
            ar_free(r);
            sv_terms_free(t, n);
            return v_exc();
        }
        uint64_t *idx = xmalloc((size_t)shots * sizeof(uint64_t));
        sv_draw(&q->rng, pj, (size_t)sp.d, (size_t)shots, idx);
        double *out = ar_f64(r);
        for (long i = 0; i < shots; i++) out[i] = sp.vals[idx[i]];
        free(idx);
        free(pj);
        sv_spectrum_free(&sp);
    }
    sv_terms_free(t, n);
    return arr_wrap(r);
}

Value bi_sample(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    long shots = need_shots(vm, q, a);
    if (shots < 0) return v_exc();
    int ws[64];
    bool one;
    int nw = meas_wires(vm, q, a, ws, &one);
    if (nw < 0) return v_exc();
    if (q->grec) qrec_nondiff(q->grec, "sample", false);
    if (q->rec) {
        if (nw)
            rec_meas(q, "Sample", ws, nw);
        else if (a->n == 0)
            rec_meas_all(q, "Sample");
        else if (!rec_obs_meas(vm, q, "Sample", a->v[0], a->site))
            return v_exc();
    }
    if (a->n > 0) return sample_obs(vm, q, a, shots);
    char err[AR_ERRLEN];
    int nq = q->nq, cols = nw ? nw : nq;
    if (!nw)
        for (int w = 0; w < nq; w++) ws[w] = w;
    size_t shape[2] = { (size_t)shots, (size_t)cols };
    Array *r = ar_new(AR_F64, one ? 1 : 2, shape, err);
    if (!r) return vm_error(vm, a->site, "%s", err);
    uint64_t wm = 0;
    for (int k = 0; k < cols; k++) wm |= (uint64_t)1 << ws[k];
    const uint64_t *idx = shot_set(vm, q, 0, 0, wm, "sample", a->site);
    if (!idx) {
        ar_free(r);
        return v_exc();
    }
    double *out = ar_f64(r);
    for (long i = 0; i < shots; i++)
        for (int k = 0; k < cols; k++)
            out[(size_t)i * (size_t)cols + (size_t)k] = (double)((idx[i] >> (nq - 1 - ws[k])) & 1);
    return arr_wrap(r);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static int cmp_f64(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

Value bi_counts(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    long shots = need_shots(vm, q, a);
    if (shots < 0) return v_exc();
    int ws[64];
    bool one;
    int nw = meas_wires(vm, q, a, ws, &one);
    if (nw < 0) return v_exc();
    if (q->grec) qrec_nondiff(q->grec, "counts", false);
    if (q->rec) {
        if (nw)
            rec_meas(q, "Counts", ws, nw);
        else if (a->n == 0)
            rec_meas_all(q, "Counts");
        else if (!rec_obs_meas(vm, q, "Counts", a->v[0], a->site))
            return v_exc();
    }
    if (a->n > 0) { /* counts of an observable's eigenvalues: {value: count}, ascending */
        SvTerm *t;
        int n;
        uint64_t *idw;
        if (!as_terms(vm, a->v[0], &t, &idw, &n, a->site)) return v_exc();
        bool ok = check_terms(vm, q, t, idw, n, a->site);
        free(idw);
        SvPauli *pw = ok ? pauli_of(t, n) : NULL;
        uint64_t xm, ym, wm;
        if (pw && words_qwc(pw, n, &xm, &ym, &wm) && (!(xm | ym) || !q->ds)) {
            /* Pauli words, one basis per wire: the tally of the execution's shots */
            sv_terms_free(t, n);
            const uint64_t *idx = shot_set(vm, q, xm, ym, wm, "counts", a->site);
            double *v = idx ? malloc((size_t)shots * sizeof(double)) : NULL;
            if (!v) {
                free(pw);
                return idx ? vm_error(vm, a->site, "counts(): out of memory") : v_exc();
            }
            for (long i = 0; i < shots; i++) v[i] = words_value(pw, n, idx[i], q->nq);
            free(pw);
            qsort(v, (size_t)shots, sizeof(double), cmp_f64);
            ObjDict *d = dict_new();
            for (long i = 0; i < shots;) {
                long j = i;
                while (j < shots && v[j] == v[i]) j++;
                dict_set(d, v_num(v[i]), v_num((double)(j - i)));
                i = j;
            }
            free(v);
            return v_obj(&d->h);
        }
        free(pw);
        SvSpectrum sp;
        double *pj;
        if (!ok || !obs_spectrum(vm, q, t, n, &sp, &pj, a->site)) {
            sv_terms_free(t, n);
            return v_exc();
        }
        sv_terms_free(t, n);
        double *lv = xmalloc((size_t)sp.d * sizeof(double)),
               *lp = xmalloc((size_t)sp.d * sizeof(double));
        int m = sv_spectrum_levels(&sp, pj, lv, lp);
        uint64_t *cnt = xcalloc((size_t)(m ? m : 1), sizeof(uint64_t));
        sv_multinomial(&q->rng, lp, (size_t)m, (uint64_t)shots, cnt);
        ObjDict *d = dict_new();
        for (int j = 0; j < m; j++)
            if (cnt[j]) dict_set(d, v_num(lv[j]), v_num((double)cnt[j]));
        free(cnt);
        free(lv);
        free(lp);
        free(pj);
        sv_spectrum_free(&sp);
        return v_obj(&d->h);
    }
    int nq = q->nq, cols = nw ? nw : nq;
    uint64_t wm = 0;
    for (int k = 0; k < nw; k++) wm |= (uint64_t)1 << ws[k];
    const uint64_t *drawn = shot_set(vm, q, 0, 0, nw ? wm : ~(uint64_t)0, "counts", a->site);
    if (!drawn) return v_exc();
    uint64_t *idx = malloc((size_t)shots * sizeof(uint64_t));
    if (!idx) return vm_error(vm, a->site, "counts(): out of memory");
    for (long i = 0; i < shots; i++) idx[i] = nw ? index_on_wires(drawn[i], nq, ws, nw) : drawn[i];
    qsort(idx, (size_t)shots, sizeof(uint64_t), cmp_u64);
    ObjDict *d = dict_new();
    char bits[65];
    for (long i = 0; i < shots;) {
        long j = i;
        while (j < shots && idx[j] == idx[i]) j++;
        for (int k = 0; k < cols; k++) bits[k] = (char)('0' + ((idx[i] >> (cols - 1 - k)) & 1));
        bits[cols] = 0;
        Value k = v_str(bits);
        dict_set(d, k, v_num((double)(j - i)));
        decref(k);
        i = j;
    }
    free(idx);
    return v_obj(&d->h);
}

/* A postselected outcome of probability 0: every later result is NaN, as
 * in PennyLane (the state has no meaning left). */
static void poison_state(QCtx *q)
{
    SvState *v = q->dm ? &q->dm->v : q->s;
    for (size_t i = 0; i < v->dim; i++) v->amp[i] = NAN;
    q->sim.changes++;
}

/* measure(w) on the mixed device, kept only for the outcome b: rho -> P rho P / p */
static int dm_postselect(DmState *d, int w, int b, double *prob, char *err, size_t errlen)
{
    double pr[2];
    if (dm_probs(d, &w, 1, pr, err, errlen) != 0) return -1;
    *prob = pr[b];
    if (!(pr[b] > 0)) return 0;
    double f = 1 / sqrt(pr[b]);
    cplx k[4] = { b == 0 ? f : 0, 0, 0, b == 1 ? f : 0 };
    return dm_apply_kraus(d, &w, 1, 1, k, err, errlen);
}

Value bi_measure(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    int w;
    if (!wire_value(vm, a->v[0], &w, "measure", a->site)) return v_exc();
    if (w >= q->nq)
        return vm_error(vm, a->site, "measure: wire %d out of range for a %d-wire device", w,
                        q->nq);
    Value *rk = arg_kw(a, "reset"), *pk = arg_kw(a, "postselect");
    bool reset = false;
    bool e = false;
    if (a->n > 1)
        reset = tp_truthy(vm, a->v[1], a->site, &e);
    else if (rk)
        reset = tp_truthy(vm, *rk, a->site, &e);
    if (e) return v_exc();
    int post = -1;
    if (pk && pk->t != T_NIL) {
        if (pk->t != T_NUM || (pk->n != 0 && pk->n != 1))
            return vm_error(vm, a->site, "measure: postselect must be 0, 1 or nil");
        post = (int)pk->n;
    }
    char err[256];
    if (q->grec) qrec_nondiff(q->grec, "measure", true);
    int r;
    if (post < 0) {
        r = q->sim.be->measure(&q->sim, w, reset, &q->rng, err, sizeof err);
        if (r < 0) return vm_error_from(vm, a->site, "measure", err);
    } else {
        double prob = 0;
        int rc;
        if (q->ds)
            return vm_error(vm, a->site,
                            "measure(): postselect is not available on a distributed device");
        if (q->dm) {
            rc = dm_postselect(q->dm, w, post, &prob, err, sizeof err);
            if (rc == 0 && prob > 0 && reset && post == 1) {
                SvOp x = { .gate = SV_PAULIX, .nwires = 1, .wires = { w } };
                rc = dm_apply(q->dm, &x, err, sizeof err);
            }
        } else {
            rc = sv_measure_post(q->s, w, post, reset, &prob, err, sizeof err);
            if (rc != 0 && !(prob > 0)) rc = 0; /* probability 0: see below */
        }
        if (rc != 0) return vm_error_from(vm, a->site, "measure", err);
        if (!(prob > 0))
            poison_state(q);
        else if (q->shots) { /* the shots that saw the outcome are kept */
            double pp[2] = { prob, 1 - prob };
            uint64_t c[2];
            sv_multinomial(&q->rng, pp, 2, (uint64_t)q->shots, c);
            q->shots = (long)c[0];
            if (q->shots == 0) {
                poison_state(q);
                q->shots = 1;
            }
        }
        r = post;
        q->sim.changes++; /* the state was changed in place (shot sets drawn from it are gone) */
    }
    if (q->rec) {
        QasmOp *o = qasm_add(&q->rec->c, QASM_MEASURE, &w, 0, 1);
        if (o) {
            o->clbit = q->rec->c.nclbits++;
            /* for drawing (qml.draw's marks): bit 0 a reset follows, bits 1-2 postselect + 1 */
            o->bits = (uint64_t)(reset ? 1 : 0) | (uint64_t)(post + 1) << 1;
        }
        if (o && reset) qasm_add(&q->rec->c, QASM_RESET, &w, 0, 1);
    }
    return v_num(r);
}

/* the wires= of the reduced-state measurements: nil means all of them */
static int rdm_wires(VM *vm, QCtx *q, Args *a, int *ws)
{
    if (q->ds) {
        vm_error(vm, a->site,
                 "%s() is not available on a distributed device (use probs, expval or sample)",
                 a->def->name);
        return -1;
    }
    Value *wk = arg_kw(a, "wires");
    Value wv = a->n > 0 ? a->v[0] : (wk ? *wk : v_nil());
    int nw;
    if (wv.t == T_NIL) {
        nw = q->nq;
        for (int i = 0; i < nw && i < 64; i++) ws[i] = i;
    } else {
        nw = collect_wires(vm, wv, ws, 64, a->def->name, a->site);
        if (nw < 0) return -1;
    }
    if (nw > 14) {
        vm_error(vm, a->site, "%s(): at most 14 wires, got %d", a->def->name, nw);
        return -1;
    }
    if (nw < 1) {
        vm_error(vm, a->site, "%s(): needs at least one wire", a->def->name);
        return -1;
    }
    return device_wires_ok(vm, q, ws, nw, a->def->name, a->site) ? nw : -1;
}

/* the reduced density matrix of the wires, on either device (heap) */
static cplx *reduced(VM *vm, QCtx *q, Args *a, const int *ws, int nw)
{
    if (q->ds) {
        vm_error(vm, a->site,
                 "%s() is not available on a distributed device (use probs, expval or sample)",
                 a->def->name);
        return NULL;
    }
    size_t d = (size_t)1 << nw;
    cplx *m = malloc(d * d * sizeof(cplx));
    char err[256];
    if (!m) {
        vm_error(vm, a->site, "%s(): out of memory", a->def->name);
        return NULL;
    }
    int rc = q->sim.be->reduced(&q->sim, ws, nw, m, err, sizeof err);
    if (rc != 0) {
        free(m);
        char who[80];
        snprintf(who, sizeof who, "%s()", a->def->name);
        vm_error_from(vm, a->site, who, err);
        return NULL;
    }
    return m;
}

/* The reduced density matrix a builtin of the wires argument measures
 * (density_matrix, purity): its wires checked, the measurement noted for
 * a differentiated run (not differentiable) and for drawing (label). */
static cplx *reduced_arg(VM *vm, Args *a, const char *label, int *nw)
{
    QCtx *q = need_q(vm, a);
    if (!q) return NULL;
    int ws[64];
    *nw = rdm_wires(vm, q, a, ws);
    if (*nw < 0) return NULL;
    if (q->grec) qrec_nondiff(q->grec, a->def->name, false);
    if (q->rec) rec_meas(q, label, ws, *nw);
    return reduced(vm, q, a, ws, *nw);
}

Value bi_density_matrix(VM *vm, Args *a)
{
    int nw;
    cplx *m = reduced_arg(vm, a, "DensityMatrix", &nw);
    if (!m) return v_exc();
    size_t d = (size_t)1 << nw, shape[2] = { d, d };
    char err[AR_ERRLEN];
    Array *r = ar_from_data(AR_C128, 2, shape, m, err);
    free(m);
    if (!r) return vm_error(vm, a->site, "%s", err);
    return arr_wrap(r);
}

Value bi_purity(VM *vm, Args *a)
{
    int nw;
    cplx *m = reduced_arg(vm, a, "Purity", &nw);
    if (!m) return v_exc();
    double pu = sv_purity_of(m, 1 << nw);
    free(m);
    return v_num(pu);
}

Value bi_vn_entropy(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    int ws[64];
    int nw = rdm_wires(vm, q, a, ws);
    if (nw < 0) return v_exc();
    Value *lb = arg_kw(a, "log_base");
    double base = 0;
    if (lb && lb->t != T_NIL) {
        if (lb->t != T_NUM || !(lb->n > 0) || lb->n == 1)
            return vm_error(vm, a->site,
                            "vn_entropy(): log_base must be a positive number other than 1");
        base = lb->n;
    }
    if (q->grec) qrec_nondiff(q->grec, "vn_entropy", false);
    if (q->rec) rec_meas(q, "Entropy", ws, nw);
    cplx *m = reduced(vm, q, a, ws, nw);
    if (!m) return v_exc();
    double h = sv_entropy_of(m, 1 << nw, NULL, 0);
    if (base > 0) h /= log(base);
    free(m);
    if (isnan(h)) return vm_error(vm, a->site, "vn_entropy(): the eigenvalue solver failed");
    return v_num(h);
}

/* mutual_info(wires0, wires1, log_base=nil): S(A) + S(B) - S(AB) */
Value bi_mutual_info(VM *vm, Args *a)
{
    QCtx *q = need_q(vm, a);
    if (!q) return v_exc();
    int w0[64], w1[64], all[128];
    int n0 = collect_wires(vm, a->v[0], w0, 64, "mutual_info", a->site);
    if (n0 < 0) return v_exc();
    int n1 = collect_wires(vm, a->v[1], w1, 64, "mutual_info", a->site);
    if (n1 < 0) return v_exc();
    if (n0 < 1 || n1 < 1)
        return vm_error(vm, a->site, "mutual_info(): each group needs at least one wire");
    if (n0 + n1 > 14)
        return vm_error(vm, a->site, "mutual_info(): at most 14 wires in all, got %d", n0 + n1);
    memcpy(all, w0, (size_t)n0 * sizeof(int));
    memcpy(all + n0, w1, (size_t)n1 * sizeof(int));
    for (int i = 0; i < n0 + n1; i++) {
        if (all[i] >= q->nq)
            return vm_error(vm, a->site, "mutual_info(): wire %d out of range for a %d-wire device",
                            all[i], q->nq);
        for (int j = 0; j < i; j++)
            if (all[i] == all[j])
                return vm_error(vm, a->site,
                                "mutual_info(): the wires must be distinct and the groups disjoint "
                                "(wire %d twice)",
                                all[i]);
    }
    Value *lb = arg_kw(a, "log_base");
    double base = 0;
    if (lb && lb->t != T_NIL) {
        if (lb->t != T_NUM || !(lb->n > 0) || lb->n == 1)
            return vm_error(vm, a->site,
                            "mutual_info(): log_base must be a positive number other than 1");
        base = lb->n;
    }
    if (q->grec) qrec_nondiff(q->grec, "mutual_info", false);
    if (q->rec) rec_meas(q, "MutualInfo", all, n0 + n1);
    double h[3];
    const int *ws[3] = { w0, w1, all };
    int ns[3] = { n0, n1, n0 + n1 };
    for (int k = 0; k < 3; k++) {
        cplx *m = reduced(vm, q, a, ws[k], ns[k]);
        if (!m) return v_exc();
        h[k] = sv_entropy_of(m, 1 << ns[k], NULL, 0);
        if (base > 0) h[k] /= log(base);
        free(m);
        if (isnan(h[k]))
            return vm_error(vm, a->site, "mutual_info(): the eigenvalue solver failed");
    }
    double r = h[0] + h[1] - h[2];
    return v_num(r < 0 && r > -1e-12 ? 0 : r);
}

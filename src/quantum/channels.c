/* channels.c — the noise channels by name: parameters and Kraus matrices.
 *
 * PennyLane's channels, with its parameter order, its parameter checks
 * (and their reasons in the messages) and its Kraus matrices written out
 * once here; the completeness check of user Kraus sets. Must not know how
 * a Kraus set is applied (density.c) or anything of the language.
 */
#include "dm.h"
#include "errf.h"
#include "qh_assert.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const DmChannelInfo chan_table[DM_NCHANNELS] = {
    { "BitFlip", DM_BITFLIP, 1, 1, "p" },
    { "PhaseFlip", DM_PHASEFLIP, 1, 1, "p" },
    { "DepolarizingChannel", DM_DEPOLARIZING, 1, 1, "p" },
    { "AmplitudeDamping", DM_AMPDAMP, 1, 1, "gamma" },
    { "GeneralizedAmplitudeDamping", DM_GENAMPDAMP, 1, 2, "gamma, p" },
    { "PhaseDamping", DM_PHASEDAMP, 1, 1, "gamma" },
    { "ThermalRelaxationError", DM_THERMAL, 1, 4, "pe, t1, t2, tq" },
    { "ResetError", DM_RESETERROR, 1, 2, "p_0, p_1" },
    { "PauliError", DM_PAULIERROR, -1, 1, "p" },
    { "QubitChannel", DM_QUBITCHANNEL, -1, 0, "" },
};

const DmChannelInfo *dm_channel_info(DmChannel ch)
{
    if ((int)ch < 0 || ch >= DM_NCHANNELS) return NULL;
    return &chan_table[ch];
}

const DmChannelInfo *dm_channel_by_name(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < DM_NCHANNELS; i++)
        if (strcmp(chan_table[i].name, name) == 0) return &chan_table[i];
    return NULL;
}

/* Why: PennyLane's probability checks, with the value in the message. */
static int prob(const char *ch, const char *what, double v, char *err, size_t errlen)
{
    if (!(v >= 0.0 && v <= 1.0))
        return qh_errf(err, errlen, "%s: %s must be in the interval [0,1], got %.17g", ch, what, v);
    return 0;
}

/* Kraus matrix i of out, entries (a, b; c, d) times s. */
static void put(cplx *out, int i, double s, cplx a, cplx b, cplx c, cplx d)
{
    out[4 * i] = s * a;
    out[4 * i + 1] = s * b;
    out[4 * i + 2] = s * c;
    out[4 * i + 3] = s * d;
}

/* sqrt clipped at 0: 1 - p may round just below 0. */
static double rt(double x) { return x > 0 ? sqrt(x) : 0.0; }

/* Why: ThermalRelaxationError: PennyLane's two cases, T2 <= T1 (a mix of
   identity, Z and resets) and T2 > T1 (from the Choi matrix's
   eigenvectors, written out in closed form). */
static int thermal(const double *p, cplx *out, int *nk, char *err, size_t errlen)
{
    const char *n = "ThermalRelaxationError";
    double pe = p[0], t1 = p[1], t2 = p[2], tg = p[3];
    if (!(pe >= 0 && pe <= 1))
        return qh_errf(err, errlen, "%s: pe must be between 0 and 1, got %.17g", n, pe);
    if (!(tg >= 0)) return qh_errf(err, errlen, "%s: invalid gate time tq (%.17g < 0)", n, tg);
    if (!(t1 > 0))
        return qh_errf(err, errlen, "%s: invalid T_1 relaxation time: T_1 <= 0 (%.17g)", n, t1);
    if (!(t2 > 0))
        return qh_errf(err, errlen, "%s: invalid T_2 relaxation time: T_2 <= 0 (%.17g)", n, t2);
    if (t2 - 2 * t1 > 0)
        return qh_errf(err, errlen,
                       "%s: invalid T_2 relaxation time: T_2 greater than 2 * T_1 (%.17g > %.17g)",
                       n, t2, 2 * t1);
    if (!isfinite(t1) || !isfinite(t2) || !isfinite(tg))
        return qh_errf(err, errlen, "%s: parameters must be finite", n);
    double eT1 = exp(-tg / t1), pr = 1 - eT1, eT2 = exp(-tg / t2);
    if (t2 <= t1) {
        double pz = (1 - pr) * (1 - eT2 / eT1) / 2, pr0 = (1 - pe) * pr, pr1 = pe * pr;
        double pid = 1 - pz - pr0 - pr1;
        put(out, 0, rt(pid), 1, 0, 0, 1);
        put(out, 1, rt(pz), 1, 0, 0, -1);
        put(out, 2, rt(pr0), 1, 0, 0, 0);
        put(out, 3, rt(pr0), 0, 1, 0, 0);
        put(out, 4, rt(pr1), 0, 0, 1, 0);
        put(out, 5, rt(pr1), 0, 0, 0, 1);
        *nk = 6;
        return 0;
    }
    double e0 = pr * pe, e1 = pr - pr * pe;
    double common = sqrt(4 * eT2 * eT2 + 4 * pr * pr * pe * pe - 4 * pr * pr * pe + pr * pr);
    double e2 = 1 - pr / 2 - common / 2, e3 = 1 - pr / 2 + common / 2;
    double t2v = 2 * eT2 / (2 * pr * pe - pr - common);
    double t3v = 2 * eT2 / (2 * pr * pe - pr + common);
    double n2 = sqrt(t2v * t2v + 1), n3 = sqrt(t3v * t3v + 1);
    put(out, 0, rt(e0), 0, 0, 1, 0);
    put(out, 1, rt(e1), 0, 1, 0, 0);
    put(out, 2, rt(e2), t2v / n2, 0, 0, 1 / n2);
    put(out, 3, rt(e3), t3v / n3, 0, 0, 1 / n3);
    *nk = 4;
    return 0;
}

/* Why: one definition of each built-in channel's Kraus set. */
int dm_channel_kraus(DmChannel ch, const double *p, cplx *out, int *nk, char *err, size_t errlen)
{
    const DmChannelInfo *info = dm_channel_info(ch);
    if (!info) return qh_errf(err, errlen, "unknown channel %d", (int)ch);
    if (info->nwires != 1) return qh_errf(err, errlen, "%s: has no fixed Kraus set", info->name);
    for (int i = 0; i < info->nparams; i++)
        if (isnan(p[i]))
            return qh_errf(err, errlen, "%s: parameter %d is not a number", info->name, i + 1);
    const char *n = info->name;
    const cplx J = _Complex_I;
    switch (ch) {
    case DM_BITFLIP:
        if (prob(n, "p", p[0], err, errlen)) return -1;
        put(out, 0, rt(1 - p[0]), 1, 0, 0, 1);
        put(out, 1, rt(p[0]), 0, 1, 1, 0);
        *nk = 2;
        return 0;
    case DM_PHASEFLIP:
        if (prob(n, "p", p[0], err, errlen)) return -1;
        put(out, 0, rt(1 - p[0]), 1, 0, 0, 1);
        put(out, 1, rt(p[0]), 1, 0, 0, -1);
        *nk = 2;
        return 0;
    case DM_DEPOLARIZING:
        if (prob(n, "p", p[0], err, errlen)) return -1;
        put(out, 0, rt(1 - p[0]), 1, 0, 0, 1);
        put(out, 1, rt(p[0] / 3), 0, 1, 1, 0);
        put(out, 2, rt(p[0] / 3), 0, -J, J, 0);
        put(out, 3, rt(p[0] / 3), 1, 0, 0, -1);
        *nk = 4;
        return 0;
    case DM_AMPDAMP:
        if (prob(n, "gamma", p[0], err, errlen)) return -1;
        put(out, 0, 1, 1, 0, 0, rt(1 - p[0]));
        put(out, 1, rt(p[0]), 0, 1, 0, 0);
        *nk = 2;
        return 0;
    case DM_GENAMPDAMP: {
        if (prob(n, "gamma", p[0], err, errlen) || prob(n, "p", p[1], err, errlen)) return -1;
        double g = p[0], q = p[1];
        put(out, 0, rt(q), 1, 0, 0, rt(1 - g));
        put(out, 1, rt(q) * rt(g), 0, 1, 0, 0);
        put(out, 2, rt(1 - q), rt(1 - g), 0, 0, 1);
        put(out, 3, rt(1 - q) * rt(g), 0, 0, 1, 0);
        *nk = 4;
        return 0;
    }
    case DM_PHASEDAMP:
        if (prob(n, "gamma", p[0], err, errlen)) return -1;
        put(out, 0, 1, 1, 0, 0, rt(1 - p[0]));
        put(out, 1, 1, 0, 0, 0, rt(p[0]));
        *nk = 2;
        return 0;
    case DM_THERMAL: return thermal(p, out, nk, err, errlen);
    case DM_RESETERROR: {
        if (prob(n, "p_0", p[0], err, errlen) || prob(n, "p_1", p[1], err, errlen)) return -1;
        if (!(p[0] + p[1] <= 1.0))
            return qh_errf(err, errlen, "%s: p_0 + p_1 must be in the interval [0,1], got %.17g", n,
                           p[0] + p[1]);
        put(out, 0, rt(1 - p[0] - p[1]), 1, 0, 0, 1);
        put(out, 1, rt(p[0]), 1, 0, 0, 0);
        put(out, 2, rt(p[0]), 0, 1, 0, 0);
        put(out, 3, rt(p[1]), 0, 0, 1, 0);
        put(out, 4, rt(p[1]), 0, 0, 0, 1);
        *nk = 5;
        return 0;
    }
    case DM_PAULIERROR:
    case DM_QUBITCHANNEL:
    case DM_NCHANNELS: break;
    }
    return qh_errf(err, errlen, "%s: has no fixed Kraus set", n);
}

/* Why: PauliError's second Kraus matrix is a Kronecker product of Paulis. */
int dm_pauli_error_kraus(const char *ops, double p, cplx *out, char *err, size_t errlen)
{
    const char *n = "PauliError";
    if (!ops) return qh_errf(err, errlen, "%s: no operators", n);
    int k = (int)strlen(ops);
    if (k < 1) return qh_errf(err, errlen, "%s: needs at least one operator", n);
    if (k > DM_MAX_KRAUS_WIRES)
        return qh_errf(err, errlen, "%s: at most %d wires, got %d", n, DM_MAX_KRAUS_WIRES, k);
    for (int i = 0; i < k; i++)
        if (ops[i] != 'X' && ops[i] != 'Y' && ops[i] != 'Z')
            return qh_errf(err, errlen, "%s: the operators must be X, Y or Z, got '%s'", n, ops);
    if (prob(n, "p", p, err, errlen)) return -1;
    size_t d = (size_t)1 << k;
    cplx *k0 = out, *k1 = out + d * d;
    memset(out, 0, 2 * d * d * sizeof(cplx));
    for (size_t i = 0; i < d; i++) k0[i * d + i] = rt(1 - p);
    /* P|b> = phase(b) |b ^ x>: column b of the product has one entry */
    for (size_t b = 0; b < d; b++) {
        size_t row = b;
        cplx ph = rt(p);
        for (int i = 0; i < k; i++) {
            int bit = (int)((b >> (k - 1 - i)) & 1);
            size_t m = (size_t)1 << (k - 1 - i);
            switch (ops[i]) {
            case 'X': row ^= m; break;
            case 'Y':
                row ^= m;
                ph *= bit ? -_Complex_I : _Complex_I;
                break;
            default:
                if (bit) ph = -ph;
                break;
            }
        }
        k1[row * d + b] = ph;
    }
    return 0;
}

/* Why: QubitChannel accepts only trace-preserving sets, as PennyLane's
   (np.allclose(sum K^dagger K, I)). */
int dm_kraus_check(const char *name, int k, int nk, const cplx *kraus, char *err, size_t errlen)
{
    if (!name) name = "QubitChannel";
    if (k < 1 || k > DM_MAX_KRAUS_WIRES)
        return qh_errf(err, errlen, "%s: Kraus matrices on 1 to %d wires, got %d", name,
                       DM_MAX_KRAUS_WIRES, k);
    if (nk < 1 || !kraus) return qh_errf(err, errlen, "%s: needs at least one Kraus matrix", name);
    size_t d = (size_t)1 << k;
    for (size_t i = 0; i < (size_t)nk * d * d; i++)
        if (!isfinite(creal(kraus[i])) || !isfinite(cimag(kraus[i])))
            return qh_errf(err, errlen, "%s: Kraus matrix entries must be finite", name);
    double worst = 0, excess = 0;
    for (size_t r = 0; r < d; r++)
        for (size_t c = 0; c < d; c++) {
            cplx acc = 0;
            for (int m = 0; m < nk; m++) {
                const cplx *K = kraus + (size_t)m * d * d;
                for (size_t j = 0; j < d; j++) acc += conj(K[j * d + r]) * K[j * d + c];
            }
            double want = r == c ? 1.0 : 0.0, e = cabs(acc - want);
            if (e > worst) worst = e;
            double ex = e - (1e-8 + 1e-5 * want);
            if (ex > excess) excess = ex;
        }
    if (excess > 0)
        return qh_errf(
            err, errlen,
            "%s: Kraus matrices are not trace preserving (max |sum K^dagger K - I| = %.3g)", name,
            worst);
    return 0;
}

/* ---- derivatives of the channels' maps ------------------------------------- */

/* The pairs (A_j, B_j) of a derivative map d/dx sum K rho K^dagger =
   sum_j A_j rho B_j^dagger, 2x2 each. */
typedef struct Pairs {
    cplx *A, *B;
    int n;
} Pairs;

typedef struct M2 {
    cplx e[4];
} M2;

static M2 m2(cplx a, cplx b, cplx c, cplx d) { return (M2){ { a, b, c, d } }; }
static int m2_zero(M2 m) { return m.e[0] == 0 && m.e[1] == 0 && m.e[2] == 0 && m.e[3] == 0; }

static void pair(Pairs *P, double s, M2 a, M2 b)
{
    qh_assert(P->n < DM_MAX_DTERMS);
    for (int i = 0; i < 4; i++) {
        P->A[4 * P->n + i] = s * a.e[i];
        P->B[4 * P->n + i] = b.e[i];
    }
    P->n++;
}

/* Why: a Kraus matrix K = sqrt(f) M(x) gives K rho K^dagger = f M rho M^dagger,
   whose derivative f' M rho M^dagger + f (M' rho M^dagger + M rho M'^dagger)
   has no 1/sqrt(f): finite where f = 0 (BitFlip at p = 0). */
static void term(Pairs *P, double f, double df, M2 m, M2 dm)
{
    if (df != 0) pair(P, df, m, m);
    if (f != 0 && !m2_zero(dm)) {
        pair(P, f, dm, m);
        pair(P, f, m, dm);
    }
}

/* Dual numbers: a value and its derivative by the parameter differentiated. */
typedef struct Du {
    double v, d;
} Du;
static Du du(double v, double d) { return (Du){ v, d }; }
static Du du_add(Du a, Du b) { return du(a.v + b.v, a.d + b.d); }
static Du du_sub(Du a, Du b) { return du(a.v - b.v, a.d - b.d); }
static Du du_mul(Du a, Du b) { return du(a.v * b.v, a.d * b.v + a.v * b.d); }
static Du du_div(Du a, Du b) { return du(a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)); }
static Du du_k(double k, Du a) { return du(k * a.v, k * a.d); }
static Du du_sqrt(Du a)
{
    double s = sqrt(a.v);
    return du(s, a.d == 0 ? 0 : a.d / (2 * s));
}
static Du du_exp(Du a)
{
    double e = exp(a.v);
    return du(e, e * a.d);
}

/* Why: ThermalRelaxationError's weights and matrices are smooth functions of
   its four parameters: the same formulas as thermal(), carried in dual
   numbers. */
static void thermal_d(const double *p, int which, Pairs *P)
{
    Du x[4];
    for (int i = 0; i < 4; i++) x[i] = du(p[i], i == which ? 1 : 0);
    Du pe = x[0], t1 = x[1], t2 = x[2], tg = x[3], one = du(1, 0);
    Du eT1 = du_exp(du_k(-1, du_div(tg, t1))), pr = du_sub(one, eT1);
    Du eT2 = du_exp(du_k(-1, du_div(tg, t2)));
    M2 z = m2(0, 0, 0, 0);
    if (p[2] <= p[1]) {
        Du pz = du_k(0.5, du_mul(du_sub(one, pr), du_sub(one, du_div(eT2, eT1))));
        Du pr0 = du_mul(du_sub(one, pe), pr), pr1 = du_mul(pe, pr);
        Du pid = du_sub(du_sub(du_sub(one, pz), pr0), pr1);
        term(P, pid.v, pid.d, m2(1, 0, 0, 1), z);
        term(P, pz.v, pz.d, m2(1, 0, 0, -1), z);
        term(P, pr0.v, pr0.d, m2(1, 0, 0, 0), z);
        term(P, pr0.v, pr0.d, m2(0, 1, 0, 0), z);
        term(P, pr1.v, pr1.d, m2(0, 0, 1, 0), z);
        term(P, pr1.v, pr1.d, m2(0, 0, 0, 1), z);
        return;
    }
    Du e0 = du_mul(pr, pe), e1 = du_sub(pr, du_mul(pr, pe));
    Du pr2 = du_mul(pr, pr), pe2 = du_mul(pe, pe);
    Du c = du_add(du_k(4, du_mul(eT2, eT2)), du_k(4, du_mul(pr2, pe2)));
    c = du_add(du_sub(c, du_k(4, du_mul(pr2, pe))), pr2);
    Du common = du_sqrt(c);
    Du half_pr = du_k(0.5, pr), half_c = du_k(0.5, common);
    Du e2 = du_sub(du_sub(one, half_pr), half_c), e3 = du_add(du_sub(one, half_pr), half_c);
    Du base = du_sub(du_k(2, du_mul(pr, pe)), pr);
    Du t2v = du_div(du_k(2, eT2), du_sub(base, common));
    Du t3v = du_div(du_k(2, eT2), du_add(base, common));
    Du n2 = du_sqrt(du_add(du_mul(t2v, t2v), one)), n3 = du_sqrt(du_add(du_mul(t3v, t3v), one));
    Du a2 = du_div(t2v, n2), b2 = du_div(one, n2), a3 = du_div(t3v, n3), b3 = du_div(one, n3);
    term(P, e0.v, e0.d, m2(0, 0, 1, 0), z);
    term(P, e1.v, e1.d, m2(0, 1, 0, 0), z);
    term(P, e2.v, e2.d, m2(a2.v, 0, 0, b2.v), m2(a2.d, 0, 0, b2.d));
    term(P, e3.v, e3.d, m2(a3.v, 0, 0, b3.v), m2(a3.d, 0, 0, b3.d));
}

/* Why: exact gradients of channel parameters (lang/quantum.md, "Noise
   channels"): each channel's map differentiated in closed form. */
int dm_channel_dterms(DmChannel ch, const double *p, int which, cplx *ab, int *np, char *err,
                      size_t errlen)
{
    cplx k[DM_MAX_KRAUS * 4];
    int nk;
    if (dm_channel_kraus(ch, p, k, &nk, err, errlen) != 0) return -1; /* its checks */
    const DmChannelInfo *info = dm_channel_info(ch);
    if (which < 0 || which >= info->nparams)
        return qh_errf(err, errlen, "%s: no parameter %d", info->name, which + 1);
    cplx A[DM_MAX_DTERMS * 4], B[DM_MAX_DTERMS * 4];
    Pairs P = { A, B, 0 };
    const cplx J = _Complex_I;
    M2 z = m2(0, 0, 0, 0), id = m2(1, 0, 0, 1), x = m2(0, 1, 1, 0), y = m2(0, -J, J, 0);
    M2 zz = m2(1, 0, 0, -1), up = m2(0, 1, 0, 0), down = m2(0, 0, 1, 0);
    M2 e00 = m2(1, 0, 0, 0), e11 = m2(0, 0, 0, 1);
    double g = p[0], h = 0;
    if (ch == DM_AMPDAMP || ch == DM_GENAMPDAMP || ch == DM_PHASEDAMP)
        h = -0.5 / rt(1 - g); /* d sqrt(1 - gamma) / d gamma: infinite at gamma = 1 */
    switch (ch) {
    case DM_BITFLIP:
    case DM_PHASEFLIP:
        term(&P, 1 - p[0], -1, id, z);
        term(&P, p[0], 1, ch == DM_BITFLIP ? x : zz, z);
        break;
    case DM_DEPOLARIZING:
        term(&P, 1 - p[0], -1, id, z);
        term(&P, p[0] / 3, 1.0 / 3, x, z);
        term(&P, p[0] / 3, 1.0 / 3, y, z);
        term(&P, p[0] / 3, 1.0 / 3, zz, z);
        break;
    case DM_AMPDAMP:
    case DM_PHASEDAMP:
        term(&P, 1, 0, m2(1, 0, 0, rt(1 - g)), m2(0, 0, 0, h));
        term(&P, g, 1, ch == DM_AMPDAMP ? up : e11, z);
        break;
    case DM_GENAMPDAMP: {
        double q = p[1];
        M2 d0 = m2(1, 0, 0, rt(1 - g)), d2 = m2(rt(1 - g), 0, 0, 1);
        if (which == 0) {
            term(&P, q, 0, d0, m2(0, 0, 0, h));
            term(&P, q * g, q, up, z);
            term(&P, 1 - q, 0, d2, m2(h, 0, 0, 0));
            term(&P, (1 - q) * g, 1 - q, down, z);
        } else {
            term(&P, q, 1, d0, z);
            term(&P, q * g, g, up, z);
            term(&P, 1 - q, -1, d2, z);
            term(&P, (1 - q) * g, -g, down, z);
        }
        break;
    }
    case DM_THERMAL: thermal_d(p, which, &P); break;
    case DM_RESETERROR:
        term(&P, 1 - p[0] - p[1], -1, id, z);
        term(&P, p[which], 1, which == 0 ? e00 : down, z);
        term(&P, p[which], 1, which == 0 ? up : e11, z);
        break;
    case DM_PAULIERROR:
    case DM_QUBITCHANNEL:
    case DM_NCHANNELS: return qh_errf(err, errlen, "%s: has no fixed Kraus set", info->name);
    }
    *np = P.n;
    memcpy(ab, A, (size_t)P.n * 4 * sizeof(cplx));
    memcpy(ab + 4 * P.n, B, (size_t)P.n * 4 * sizeof(cplx));
    return 0;
}

/* Why: PauliError's map (1 - p) rho + p P rho P has the derivative
   P rho P - rho, whatever p. */
int dm_pauli_error_dterms(const char *ops, double p, cplx *ab, char *err, size_t errlen)
{
    if (dm_pauli_error_kraus(ops, p, ab, err, errlen) != 0) return -1; /* its checks */
    size_t d = (size_t)1 << strlen(ops), D = d * d;
    /* ab = [A0 = -I, A1 = P, B0 = I, B1 = P]: the Kraus pair of p = 1 is (0, P) */
    if (dm_pauli_error_kraus(ops, 1.0, ab, err, errlen) != 0) return -1;
    memset(ab + 2 * D, 0, 2 * D * sizeof(cplx));
    memcpy(ab + 3 * D, ab + D, D * sizeof(cplx));
    for (size_t i = 0; i < d; i++) {
        ab[i * d + i] = -1;
        ab[2 * D + i * d + i] = 1;
    }
    return 0;
}

/* test_measure.c — Check unit tests of issue 15's measurements in the
 * language (lang/quantum.md: Hermitian, Projector, density_matrix,
 * vn_entropy, mutual_info, purity, sample/counts of an observable, shot
 * vectors, measure(..., postselect=), parameter broadcasting, gradients of
 * Hermitian and Projector observables), each against an independent dense
 * reference computed here from the state the program prints.
 *
 * Programs run in-process through qh.h (as the qh command runs them). The
 * references are plain linear algebra on 2^n x 2^n matrices: an
 * observable's full matrix built entry by entry from its factors (wire 0
 * the most significant bit), partial traces by summing over the other
 * wires, eigenvalues of Hermitian matrices by the Jacobi method on their
 * real symmetric form — nothing of the simulator's kernels. */
#include <check.h>
#include <complex.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qh_harness.h"

typedef double complex cplx;

#define OUT_CAP  (1 << 17)
#define PROG_CAP (1 << 15)

static bool g_sync = true;

/* runs program in the mode g_sync says (qh_harness.h's run_merged) */
static bool run(const char *program, char *out)
{
    return run_merged(program, g_sync, 3, out, OUT_CAP);
}

static void run_ok(const char *what, const char *program, char *out)
{
    bool ok = run(program, out);
    ck_assert_msg(ok, "%s: the program failed:\n%s\n--- program:\n%s", what, out, program);
}

typedef struct {
    char *s;
    size_t n;
} PBuf;
static void put(PBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(PBuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, PROG_CAP - b->n, fmt, ap);
    va_end(ap);
    ck_assert(k >= 0 && b->n + (size_t)k < PROG_CAP);
    b->n += (size_t)k;
}

/* ================================================================ dense references */

static unsigned long long rs = 12345;
static double unif(void)
{
    rs = rs * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rs >> 11) / 9007199254740992.0;
}
static int below(int n) { return (int)(unif() * n); }

#define NQ  3
#define DIM (1 << NQ)

/* A factor of a term: a k-wire matrix on given wires (wires[0] = its MSB). */
typedef struct {
    int k;
    int w[NQ];
    cplx m[DIM * DIM];
} Factor;
typedef struct {
    double c;
    int nf;
    Factor f[NQ];
} Term;

static int bit(int idx, int wire, int n) { return (idx >> (n - 1 - wire)) & 1; }

/* out += c * (tensor of the factors, identity elsewhere) on n wires */
static void add_term(const Term *t, int n, cplx *out)
{
    int d = 1 << n;
    for (int r = 0; r < d; r++)
        for (int col = 0; col < d; col++) {
            cplx v = t->c;
            int used = 0;
            for (int j = 0; j < t->nf && v != 0; j++) {
                const Factor *f = &t->f[j];
                int a = 0, b = 0, fd = 1 << f->k;
                for (int i = 0; i < f->k; i++) {
                    a = 2 * a + bit(r, f->w[i], n);
                    b = 2 * b + bit(col, f->w[i], n);
                    used |= 1 << f->w[i];
                }
                v *= f->m[a * fd + b];
            }
            for (int w = 0; w < n && v != 0; w++)
                if (!((used >> w) & 1) && bit(r, w, n) != bit(col, w, n)) v = 0;
            out[r * d + col] += v;
        }
}

static void matmul(const cplx *a, const cplx *b, cplx *c, int d)
{
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            cplx s = 0;
            for (int k = 0; k < d; k++) s += a[i * d + k] * b[k * d + j];
            c[i * d + j] = s;
        }
}

static double expect(const cplx *psi, const cplx *m, int d)
{
    cplx s = 0;
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) s += conj(psi[i]) * m[i * d + j] * psi[j];
    return creal(s);
}

/* rho on wires ws[0..k) (ws[0] = MSB) of the n-wire pure state psi */
static void partial_trace(const cplx *psi, int n, const int *ws, int k, cplx *rho)
{
    int d = 1 << n, dk = 1 << k;
    memset(rho, 0, (size_t)dk * dk * sizeof(cplx));
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            bool same = true; /* the traced wires agree */
            for (int w = 0; w < n && same; w++) {
                bool in = false;
                for (int q = 0; q < k; q++) in |= ws[q] == w;
                if (!in && bit(i, w, n) != bit(j, w, n)) same = false;
            }
            if (!same) continue;
            int a = 0, b = 0;
            for (int q = 0; q < k; q++) {
                a = 2 * a + bit(i, ws[q], n);
                b = 2 * b + bit(j, ws[q], n);
            }
            rho[a * dk + b] += psi[i] * conj(psi[j]);
        }
}

/* Eigenvalues of a d x d Hermitian matrix: the Jacobi method on the real
 * symmetric 2d x 2d form [[Re, -Im], [Im, Re]] (each eigenvalue twice). */
static void eigvals_herm(const cplx *h, int d, double *vals)
{
    int m = 2 * d;
    double *a = calloc((size_t)m * m, sizeof(double));
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            a[i * m + j] = creal(h[i * d + j]);
            a[(i + d) * m + (j + d)] = creal(h[i * d + j]);
            a[i * m + (j + d)] = -cimag(h[i * d + j]);
            a[(i + d) * m + j] = cimag(h[i * d + j]);
        }
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0;
        for (int p = 0; p < m; p++)
            for (int q = p + 1; q < m; q++) off += a[p * m + q] * a[p * m + q];
        if (off < 1e-30) break;
        for (int p = 0; p < m; p++)
            for (int q = p + 1; q < m; q++) {
                if (fabs(a[p * m + q]) < 1e-300) continue;
                double th = (a[q * m + q] - a[p * m + p]) / (2 * a[p * m + q]);
                double t = (th >= 0 ? 1 : -1) / (fabs(th) + sqrt(th * th + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < m; k++) {
                    double akp = a[k * m + p], akq = a[k * m + q];
                    a[k * m + p] = c * akp - s * akq;
                    a[k * m + q] = s * akp + c * akq;
                }
                for (int k = 0; k < m; k++) {
                    double apk = a[p * m + k], aqk = a[q * m + k];
                    a[p * m + k] = c * apk - s * aqk;
                    a[q * m + k] = s * apk + c * aqk;
                }
            }
    }
    double *all = malloc((size_t)m * sizeof(double));
    for (int i = 0; i < m; i++) all[i] = a[i * m + i];
    for (int i = 1; i < m; i++) /* sort */
        for (int j = i; j > 0 && all[j] < all[j - 1]; j--) {
            double x = all[j];
            all[j] = all[j - 1];
            all[j - 1] = x;
        }
    for (int i = 0; i < d; i++) vals[i] = all[2 * i];
    free(all);
    free(a);
}

static double entropy(const cplx *rho, int d, double base)
{
    double v[DIM], s = 0;
    eigvals_herm(rho, d, v);
    for (int i = 0; i < d; i++)
        if (v[i] > 1e-14) s -= v[i] * log(v[i]);
    return base > 0 ? s / log(base) : s;
}

static void random_herm(cplx *m, int d)
{
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            double re = 2 * unif() - 1, im = i == j ? 0 : 2 * unif() - 1;
            m[i * d + j] = re + im * I;
            m[j * d + i] = re - im * I;
        }
}

static void put_matrix(PBuf *b, const cplx *m, int d)
{
    put(b, "array([");
    for (int i = 0; i < d; i++) {
        put(b, "%s[", i ? ", " : "");
        for (int j = 0; j < d; j++)
            put(b, "%s%.17g + %.17gj", j ? ", " : "", creal(m[i * d + j]), cimag(m[i * d + j]));
        put(b, "]");
    }
    put(b, "])");
}

static const cplx PZ[4] = { 1, 0, 0, -1 }, PX[4] = { 0, 1, 1, 0 };

/* three distinct wires in random order */
static void perm3(int *w)
{
    w[0] = 0;
    w[1] = 1;
    w[2] = 2;
    for (int i = 2; i > 0; i--) {
        int j = below(i + 1), t = w[i];
        w[i] = w[j];
        w[j] = t;
    }
}

/* A random circuit on NQ wires as qh statements (angles scaled by x when param). */
static void put_circuit(PBuf *b, bool param)
{
    for (int layer = 0; layer < 2; layer++) {
        for (int w = 0; w < NQ; w++) {
            static const char *const g[] = { "RX", "RY", "RZ" };
            for (int k = 0; k < 2; k++)
                put(b, "    %s(%s%.6f, %d)\n", g[below(3)], param ? "x * " : "",
                    2 * M_PI * unif() - M_PI, w);
        }
        put(b, "    CNOT(0, 1)\n    CNOT(1, 2)\n    CRY(%.6f, 2, 0)\n", 2 * unif());
    }
}

/* ================================================================ tests */

/* expval/var of Hermitian, Projector (basis and state) and their products
 * and sums; density_matrix, vn_entropy, mutual_info, purity; on both devices */
START_TEST(test_observables_dense)
{
    static char prog[PROG_CAP], out[OUT_CAP];
    for (int trial = 0; trial < 16; trial++) {
        g_sync = trial % 2 == 0;
        PBuf b = { prog, 0 };
        prog[0] = 0;
        int w[3], v[3];
        perm3(w);
        perm3(v);
        cplx A[4], B[16], phi[2];
        random_herm(A, 2);
        random_herm(B, 4);
        phi[0] = unif() + unif() * I;
        phi[1] = unif() - unif() * I;
        double nphi = sqrt(creal(phi[0] * conj(phi[0]) + phi[1] * conj(phi[1])));
        phi[0] /= nphi;
        phi[1] /= nphi;
        int bits[2] = { below(2), below(2) };
        double c[4] = { 2 * unif() - 1, 2 * unif() - 1, 2 * unif() - 1, 2 * unif() - 1 };
        put(&b, "A = ");
        put_matrix(&b, A, 2);
        put(&b, "\nB = ");
        put_matrix(&b, B, 4);
        put(&b, "\nphi = array([%.17g + %.17gj, %.17g + %.17gj])\n", creal(phi[0]), cimag(phi[0]),
            creal(phi[1]), cimag(phi[1]));
        /* O = c0 Z(w0) @ Hermitian(A, w1) + c1 Hermitian(B, [v0, v1]) + c2 Projector(bits, [w2,
         * w0]) + c3 Projector(phi, v2) @ X(v0) */
        put(&b,
            "O = %.17g * PauliZ(%d) @ Hermitian(A, %d) + %.17g * Hermitian(B, wires=[%d, %d]) + "
            "%.17g * Projector([%d, %d], wires=[%d, %d]) + %.17g * Projector(phi, %d) @ "
            "PauliX(%d)\n",
            c[0], w[0], w[1], c[1], v[0], v[1], c[2], bits[0], bits[1], w[2], w[0], c[3], v[2],
            v[0]);
        put(&b, "fn show(tag, a) {\n    s = tag\n    for z in a { s = s + fmt(\" %%.17g %%.17g\", "
                "real(z), imag(z)) }\n    print(s)\n}\n");
        static char circ[PROG_CAP];
        PBuf cb = { circ, 0 };
        circ[0] = 0;
        put_circuit(&cb, false);
        for (int dev = 0; dev < 2; dev++) {
            put(&b, "qfn c%d() on device(\"%s\", wires=%d) {\n%s", dev,
                dev ? "mixed" : "statevector", NQ, circ);
            put(&b,
                "    return [%s, expval(O), var(O), density_matrix([%d, %d]), vn_entropy([%d]), "
                "vn_entropy([%d, %d], log_base=2), "
                "mutual_info([%d], [%d, %d]), purity([%d, %d]), mutual_info(%d, %d, "
                "log_base=2)]\n}\n",
                dev ? "0" : "state()", w[0], w[1], w[2], w[0], w[1], w[0], w[1], w[2], v[0], v[1],
                v[2], v[0]);
            put(&b, "r = c%d()\n", dev);
            if (dev == 0) put(&b, "show(\"state\", r[0])\n");
            put(&b,
                "print(\"m%d\", fmt(\"%%.17g %%.17g %%.17g %%.17g %%.17g %%.17g %%.17g\", r[1], "
                "r[2], r[4], r[5], r[6], r[7], r[8]))\n",
                dev);
            put(&b, "show(\"rho%d\", reshape(r[3], [16]))\n", dev);
        }
        run_ok("observables", prog, out);
        double st[2 * DIM];
        numbers(out, "state", st, 2 * DIM, "state");
        cplx psi[DIM];
        for (int i = 0; i < DIM; i++) psi[i] = st[2 * i] + st[2 * i + 1] * I;
        /* the observable's matrix */
        cplx O[DIM * DIM] = { 0 }, O2[DIM * DIM];
        Term t;
        memset(&t, 0, sizeof t);
        t.c = c[0];
        t.nf = 2;
        t.f[0].k = 1;
        t.f[0].w[0] = w[0];
        memcpy(t.f[0].m, PZ, sizeof PZ);
        t.f[1].k = 1;
        t.f[1].w[0] = w[1];
        memcpy(t.f[1].m, A, sizeof A);
        add_term(&t, NQ, O);
        memset(&t, 0, sizeof t);
        t.c = c[1];
        t.nf = 1;
        t.f[0].k = 2;
        t.f[0].w[0] = v[0];
        t.f[0].w[1] = v[1];
        memcpy(t.f[0].m, B, sizeof B);
        add_term(&t, NQ, O);
        memset(&t, 0, sizeof t);
        t.c = c[2];
        t.nf = 1;
        t.f[0].k = 2;
        t.f[0].w[0] = w[2];
        t.f[0].w[1] = w[0];
        t.f[0].m[(2 * bits[0] + bits[1]) * 5] = 1;
        add_term(&t, NQ, O);
        memset(&t, 0, sizeof t);
        t.c = c[3];
        t.nf = 2;
        t.f[0].k = 1;
        t.f[0].w[0] = v[2];
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) t.f[0].m[i * 2 + j] = phi[i] * conj(phi[j]);
        t.f[1].k = 1;
        t.f[1].w[0] = v[0];
        memcpy(t.f[1].m, PX, sizeof PX);
        add_term(&t, NQ, O);
        matmul(O, O, O2, DIM);
        double e = expect(psi, O, DIM), var = expect(psi, O2, DIM) - e * e;
        cplx rho[16], r1[4], r2[4], r3[4], r12[16], rv[16];
        partial_trace(psi, NQ, (int[]){ w[0], w[1] }, 2, rho);
        partial_trace(psi, NQ, (int[]){ w[2] }, 1, r1);
        partial_trace(psi, NQ, (int[]){ w[0] }, 1, r2);
        partial_trace(psi, NQ, (int[]){ w[1], w[2] }, 2, r12);
        partial_trace(psi, NQ, (int[]){ v[0], v[1] }, 2, rv);
        partial_trace(psi, NQ, (int[]){ v[2] }, 1, r3);
        double pur = 0;
        for (int i = 0; i < 16; i++) pur += creal(rv[i] * conj(rv[i])); /* purity([v0, v1]) */
        double want[7] = {
            e,
            var,
            entropy(r1, 2, 0),
            entropy(rho, 4, 2),
            entropy(r2, 2, 0) + entropy(r12, 4, 0) -
                0, /* S(A) + S(B) - S(AB), S(AB) = 0 for a pure state */
            pur,
            0,
        };
        cplx rv2[4], r0v[4];
        partial_trace(psi, NQ, (int[]){ v[2] }, 1, r0v);
        partial_trace(psi, NQ, (int[]){ v[0] }, 1, rv2);
        cplx r23[16];
        partial_trace(psi, NQ, (int[]){ v[2], v[0] }, 2, r23);
        want[6] = (entropy(r0v, 2, 0) + entropy(rv2, 2, 0) - entropy(r23, 4, 0)) / log(2);
        (void)r3;
        static const char *const names[7] = {
            "expval",      "var",    "vn_entropy",        "vn_entropy base 2",
            "mutual_info", "purity", "mutual_info base 2"
        };
        for (int dev = 0; dev < 2; dev++) {
            double got[7], rg[32];
            char tag[8];
            snprintf(tag, sizeof tag, "m%d", dev);
            numbers(out, tag, got, 7, "measurements");
            for (int i = 0; i < 7; i++) {
                char what[96];
                snprintf(what, sizeof what, "trial %d %s", trial, dev ? "mixed" : "statevector");
                assert_close(what, names[i], got[i], want[i], 1e-9);
            }
            snprintf(tag, sizeof tag, "rho%d", dev);
            numbers(out, tag, rg, 32, "density_matrix");
            for (int i = 0; i < 16; i++) {
                assert_close("density_matrix", "re", rg[2 * i], creal(rho[i]), 1e-12);
                assert_close("density_matrix", "im", rg[2 * i + 1], cimag(rho[i]), 1e-12);
            }
        }
    }
    g_sync = true;
}
END_TEST

/* the gradient of <Hermitian>, <Projector> and var by adjoint and
 * parameter-shift against central differences of the same program */
START_TEST(test_grad_blocks)
{
    static char prog[PROG_CAP], out[OUT_CAP];
    for (int trial = 0; trial < 6; trial++) {
        g_sync = trial % 2 == 0;
        PBuf b = { prog, 0 };
        int w[3];
        perm3(w);
        cplx A[4], B[16];
        random_herm(A, 2);
        random_herm(B, 4);
        put(&b, "A = ");
        put_matrix(&b, A, 2);
        put(&b, "\nB = ");
        put_matrix(&b, B, 4);
        put(&b, "\nqfn f(x) on device(\"statevector\", wires=3) {\n");
        put_circuit(&b, true);
        put(&b,
            "    return expval(0.7 * Hermitian(B, [%d, %d]) @ PauliY(%d) - Projector([1, 0], [%d, "
            "%d])) + var(Hermitian(A, %d)) * x\n}\n",
            w[0], w[1], w[2], w[1], w[2], w[0]);
        put(&b, "x = 0.37\nh = 1e-6\n");
        put(&b, "print(\"g\", fmt(\"%%.15f %%.15f %%.15f %%.15f\", grad(f)(x), grad(f, "
                "method=\"parameter-shift\")(x), "
                "grad(f, method=\"finite-diff\")(x), (f(x + h) - f(x - h)) / (2 * h)))\n");
        run_ok("grad of blocks", prog, out);
        double g[4];
        numbers(out, "g", g, 4, "grad");
        assert_close("grad of blocks", "adjoint vs central differences", g[0], g[3], 1e-7);
        assert_close("grad of blocks", "parameter-shift vs adjoint", g[1], g[0], 1e-10);
        assert_close("grad of blocks", "finite-diff vs adjoint", g[2], g[0], 1e-6);
    }
    g_sync = true;
}
END_TEST

/* sample/counts of an observable draw its eigenvalues with their
 * probabilities; a shot vector gives one estimate per entry */
START_TEST(test_sampling)
{
    static char prog[PROG_CAP], out[OUT_CAP];
    PBuf b = { prog, 0 };
    cplx A[16];
    random_herm(A, 4);
    put(&b, "A = ");
    put_matrix(&b, A, 4);
    put(&b, "\nfn circuit() {\n");
    put_circuit(&b, false);
    put(&b, "}\nqfn s() on device(\"statevector\", wires=3, shots=40000, seed=7) { circuit(); "
            "return [sample(Hermitian(A, [2, 0])), counts(Hermitian(A, [2, 0])), "
            "expval(Hermitian(A, [2, 0]))] }\n"
            "qfn e() on device(\"statevector\", wires=3) { circuit(); return [expval(Hermitian(A, "
            "[2, 0])), var(Hermitian(A, [2, 0]))] }\n"
            "qfn v() on device(\"statevector\", wires=3, shots=[1000, [4000, 2]], seed=3) { "
            "circuit(); return expval(Hermitian(A, [2, 0])) }\n"
            "qfn m() on device(\"mixed\", wires=3, shots=40000, seed=7) { circuit(); return "
            "expval(Hermitian(A, [2, 0])) }\n"
            "r = s()\nx = e()\n"
            "print(\"exact\", fmt(\"%%.17g %%.17g\", x[0], x[1]))\n"
            "print(\"mean\", fmt(\"%%.17g %%.17g %%.17g\", mean(r[0]), r[2], m()))\n"
            "tot = 0\nks = \"\"\nfor k in keys(r[1]) { tot = tot + r[1][k]; ks = ks + fmt(\" "
            "%%.17g\", k) }\n"
            "print(\"keys\", len(keys(r[1])), ks)\nprint(\"total\", tot)\n"
            "vv = v()\nprint(\"vector\", len(vv), fmt(\"%%.17g %%.17g %%.17g\", vv[0], vv[1], "
            "vv[2]))\n");
    run_ok("sampling", prog, out);
    double ex[2], mn[3], tot, vec[4];
    numbers(out, "exact", ex, 2, "sampling");
    numbers(out, "mean", mn, 3, "sampling");
    numbers(out, "total", &tot, 1, "sampling");
    numbers(out, "vector", vec, 4, "sampling");
    double sd = sqrt(ex[1] / 40000);
    for (int i = 0; i < 3; i++) assert_close("sampling", "estimate of <A>", mn[i], ex[0], 6 * sd);
    assert_close("sampling", "counts total", tot, 40000, 0);
    ck_assert_int_eq((int)vec[0], 3);
    assert_close("shot vector", "entry of 1000", vec[1], ex[0], 6 * sqrt(ex[1] / 1000));
    assert_close("shot vector", "entry of 4000", vec[2], ex[0], 6 * sqrt(ex[1] / 4000));
    assert_close("shot vector", "entry of 4000", vec[3], ex[0], 6 * sqrt(ex[1] / 4000));
    ck_assert_msg(vec[2] != vec[3], "the copies of a shot-vector entry are independent estimates");
    /* the keys of counts are eigenvalues of A */
    double ev[4], k[5];
    eigvals_herm(A, 4, ev);
    numbers(out, "keys", k, 1, "counts");
    ck_assert(k[0] >= 1 && k[0] <= 4);
    numbers(out, "keys", k, 1 + (int)k[0], "counts");
    for (int i = 1; i <= (int)k[0]; i++) {
        double best = 1e9;
        for (int j = 0; j < 4; j++)
            if (fabs(k[i] - ev[j]) < best) best = fabs(k[i] - ev[j]);
        assert_close("counts", "key against the nearest eigenvalue", best, 0, 1e-9);
    }
}
END_TEST

/* measure(w, postselect=b) leaves the projected, renormalised state; an
 * outcome of probability 0 makes the results NaN */
START_TEST(test_postselect)
{
    static char prog[PROG_CAP], out[OUT_CAP];
    PBuf b = { prog, 0 };
    put(&b, "fn circuit() {\n");
    put_circuit(&b, false);
    put(&b, "}\nfn show(tag, a) {\n    s = tag\n    for z in a { s = s + fmt(\" %%.17g %%.17g\", "
            "real(z), imag(z)) }\n    print(s)\n}\n"
            "qfn before() on device(\"statevector\", wires=3) { circuit(); return state() }\n"
            "qfn after() on device(\"statevector\", wires=3) { circuit(); m = measure(1, "
            "postselect=1); return [m, state()] }\n"
            "qfn mixed() on device(\"mixed\", wires=3) { circuit(); m = measure(1, postselect=1); "
            "return density_matrix([0, 1, 2]) }\n"
            "qfn never() on device(\"statevector\", wires=3) { m = measure(1, postselect=1); "
            "return expval(PauliZ(0)) }\n"
            "show(\"before\", before())\nr = after()\nprint(\"m\", r[0])\nshow(\"after\", "
            "r[1])\nshow(\"rho\", reshape(mixed(), [64]))\n"
            "print(\"never\", never())\n");
    run_ok("postselect", prog, out);
    double s0[16], s1[16], rho[128], m;
    numbers(out, "before", s0, 16, "postselect");
    numbers(out, "after", s1, 16, "postselect");
    numbers(out, "rho", rho, 128, "postselect");
    numbers(out, "m", &m, 1, "postselect");
    assert_close("postselect", "outcome", m, 1, 0);
    cplx psi[8];
    double p = 0;
    for (int i = 0; i < 8; i++) {
        psi[i] = bit(i, 1, 3) ? s0[2 * i] + s0[2 * i + 1] * I : 0;
        p += creal(psi[i] * conj(psi[i]));
    }
    for (int i = 0; i < 8; i++) {
        psi[i] /= sqrt(p);
        assert_close("postselect", "re", s1[2 * i], creal(psi[i]), 1e-12);
        assert_close("postselect", "im", s1[2 * i + 1], cimag(psi[i]), 1e-12);
    }
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            cplx want = psi[i] * conj(psi[j]);
            assert_close("postselect (mixed)", "re", rho[2 * (i * 8 + j)], creal(want), 1e-12);
            assert_close("postselect (mixed)", "im", rho[2 * (i * 8 + j) + 1], cimag(want), 1e-12);
        }
    ck_assert_msg(strstr(out, "never nan"), "probability 0: NaN results\n%s", out);
}
END_TEST

/* a 1-d array as a gate parameter: one run per value, the results stacked,
 * each exactly the call with that value */
START_TEST(test_broadcast)
{
    static char prog[PROG_CAP], out[OUT_CAP];
    for (int mode = 0; mode < 2; mode++) {
        g_sync = mode == 0;
        PBuf b = { prog, 0 };
        put(&b,
            "qfn f(x, y) on device(\"statevector\", wires=2) { RX(x, 0); RY(y, 1); CNOT(0, 1); "
            "IsingZZ(x, 0, 1); return [expval(PauliZ(1)), probs(0)] }\n"
            "xs = array([0.1, -0.7, 2.5, 1.0])\nr = f(xs, 0.3)\n"
            "s = \"\"\nt = \"\"\nfor i in range(4) { one = f(xs[i], 0.3); s = s + fmt(\" %%.17g "
            "%%.17g\", r[0][i], one[0]); t = t + fmt(\" %%.17g %%.17g\", r[1][i, 1], one[1][1]) }\n"
            "print(\"pairs\", s)\nprint(\"probs\", t)\nprint(\"shape\", shape(r[1]))\n"
            "print(\"list\", tolist(f([0.1, -0.7, 2.5, 1.0], 0.3)[0]) == tolist(r[0]))\n");
        run_ok("broadcast", prog, out);
        double pr[8], pp[8];
        numbers(out, "pairs", pr, 8, "broadcast");
        numbers(out, "probs", pp, 8, "broadcast");
        for (int i = 0; i < 4; i++) {
            ck_assert_msg(pr[2 * i] == pr[2 * i + 1], "member %d: %.17g vs %.17g", i, pr[2 * i],
                          pr[2 * i + 1]);
            ck_assert_msg(pp[2 * i] == pp[2 * i + 1], "member %d probs: %.17g vs %.17g", i,
                          pp[2 * i], pp[2 * i + 1]);
        }
        ck_assert_msg(strstr(out, "shape [4, 2]"), "%s", out);
        ck_assert_msg(strstr(out, "list true"), "a list of numbers broadcasts as an array: %s",
                      out);
    }
    g_sync = true;
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("measure");
    TCase *tc = tcase_create("measure");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_observables_dense);
    tcase_add_test(tc, test_grad_blocks);
    tcase_add_test(tc, test_sampling);
    tcase_add_test(tc, test_postselect);
    tcase_add_test(tc, test_broadcast);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

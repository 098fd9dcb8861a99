/* randomval.c — NumPy's random generators as qh values (lang/arrays.md,
 * "NumPy's random numbers"): the kinds RandomState (numpy.random's legacy
 * API on MT19937) and Generator (default_rng: PCG64), their methods as
 * bound values read with `.`, and the builtins random_state() and
 * default_rng(). The streams are the util room's (npr.h); this file reads
 * arguments, broadcasts parameters, fills arrays in NumPy's order and runs
 * NumPy's choice/shuffle/permutation algorithms on those streams.
 *
 * A generator is mutable state of the thread that made it: it cannot be
 * passed into (or returned from) a quantum function, whose task may run on
 * another thread, so its draws always happen in program order. Knows
 * values, the dispatcher, arrays as values and npr.h; nothing of quantum. */
#include "randomval.h"
#include "array.h"
#include "arrayval.h"
#include "npr.h"
#include "qh_assert.h"
#include "types.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum RandKind { RK_LEGACY, RK_GEN } RandKind;

typedef struct ObjRand {
    Obj h;
    RandKind kind;
    union {
        NprMT mt;
        NprPCG pcg;
    } u;
} ObjRand;

typedef Value (*MethodFn)(VM *vm, ObjRand *r, Args *a);
typedef struct MethodDef {
    const char *name;
    MethodFn fn;
    int min, max;               /* positional arity (max -1: any) */
    const char *const *kwnames; /* NULL-terminated, or NULL */
} MethodDef;

typedef struct ObjMethod {
    Obj h;
    Value self;
    const MethodDef *m;
} ObjMethod;

static ValType T_RANDSTATE = T_NTYPES;
static ValType T_GENERATOR = T_NTYPES;
static ValType T_RMETHOD = T_NTYPES;
#define RAND(v)   ((ObjRand *)(v).o)
#define METHOD(v) ((ObjMethod *)(v).o)

/* ---------------------------------------------------------------- draws */

static double r_double(ObjRand *r)
{
    return r->kind == RK_LEGACY ? npr_mt_double(&r->u.mt) : npr_pcg_double(&r->u.pcg);
}
static double r_normal(ObjRand *r)
{
    return r->kind == RK_LEGACY ? npr_mt_gauss(&r->u.mt) : npr_pcg_normal(&r->u.pcg);
}
/* an integer in [0, rng]: masked rejection (legacy) or Lemire (Generator) */
static uint64_t r_bounded(ObjRand *r, uint64_t rng)
{
    return r->kind == RK_LEGACY ? npr_mt_bounded(&r->u.mt, rng) : npr_pcg_bounded(&r->u.pcg, rng);
}
/* shuffle's index in [0, max] */
static uint64_t r_interval(ObjRand *r, uint64_t max)
{
    return r->kind == RK_LEGACY ? npr_mt_interval(&r->u.mt, max) : npr_pcg_interval(&r->u.pcg, max);
}

/* ---------------------------------------------------------------- seeding */

#define MAX_SEED_WORDS 64

/* Why: NumPy takes an integer or a sequence of integers as a seed; qh's
 * numbers are exact integers up to 2^53, split into 32-bit words (least
 * significant first) as SeedSequence splits Python's integers. */
static bool seed_words(VM *vm, Value s, const char *who, bool legacy, uint32_t *w, size_t *n,
                       const Node *site)
{
    double d;
    *n = 0;
    if (s.t == T_LIST || s.t == T_ARRAY) {
        size_t len = s.t == T_LIST ? AS_LIST(s)->len : ar_size(AS_ARR(s));
        if (len == 0 || len > MAX_SEED_WORDS) {
            vm_error(vm, site, "%s: a seed sequence needs 1 to %d integers", who, MAX_SEED_WORDS);
            return false;
        }
        for (size_t i = 0; i < len; i++) {
            double x = s.t == T_LIST ? 0 : ar_item(AS_ARR(s), i).re;
            if (s.t == T_LIST && !tp_number(AS_LIST(s)->v[i], &x)) {
                vm_error(vm, site, "%s: seed entries must be integers, not %s", who,
                         type_name(AS_LIST(s)->v[i]));
                return false;
            }
            if (x != floor(x) || x < 0 || x > 4294967295.0) {
                vm_error(vm, site, "%s: seed entries must be integers between 0 and 2**32 - 1",
                         who);
                return false;
            }
            w[(*n)++] = (uint32_t)x;
        }
        return true;
    }
    if (tp_number(s, &d) && d != floor(d)) {
        vm_error(vm, site, "%s: the seed must be an integer, not %g", who, d);
        return false;
    }
    if (!tp_number(s, &d)) {
        vm_error(vm, site, "%s: the seed must be an integer or a list of integers, not %s", who,
                 type_name(s));
        return false;
    }
    if (d < 0 || (legacy && d > 4294967295.0) || d > 9007199254740992.0) {
        vm_error(vm, site, "%s: the seed must be between 0 and %s", who,
                 legacy ? "2**32 - 1" : "2**53 (qh's exact integers)");
        return false;
    }
    uint64_t x = (uint64_t)d;
    w[(*n)++] = (uint32_t)x;
    if (x >> 32) w[(*n)++] = (uint32_t)(x >> 32);
    return true;
}

/* Why: an unseeded generator (NumPy would read the operating system's
 * entropy) is seeded from the program seed (--seed), the call this VM runs
 * (0 for the main program) and how many unseeded generators it made
 * before, so runs repeat, no two such generators draw alike, and making
 * one moves no other stream. */
static void seed_fresh(VM *vm, uint32_t *w, size_t *n)
{
    uint64_t parts[3] = { vm->stream_seed, vm->call_id, vm->unseeded_rngs++ };
    for (int i = 0; i < 3; i++) {
        w[2 * i] = (uint32_t)parts[i];
        w[2 * i + 1] = (uint32_t)(parts[i] >> 32);
    }
    *n = 6;
}

static bool seed_legacy(VM *vm, ObjRand *r, Value s, const Node *site)
{
    uint32_t w[MAX_SEED_WORDS];
    size_t n;
    if (s.t == T_NIL) {
        seed_fresh(vm, w, &n);
        npr_mt_seed_array(&r->u.mt, w, n);
        return true;
    }
    if (!seed_words(vm, s, "seed()", true, w, &n, site)) return false;
    if (s.t == T_LIST || s.t == T_ARRAY)
        npr_mt_seed_array(&r->u.mt, w, n); /* init_by_array */
    else
        npr_mt_seed(&r->u.mt, w[0]); /* init_genrand */
    return true;
}

static Value rand_new(RandKind kind)
{
    ObjRand *o =
        (ObjRand *)obj_alloc(sizeof(ObjRand), kind == RK_LEGACY ? T_RANDSTATE : T_GENERATOR);
    o->kind = kind;
    return v_obj(&o->h);
}

/* ---------------------------------------------------------------- shapes and parameters */

typedef struct Shape {
    int nd; /* 0: no size (a single number) */
    size_t d[AR_MAXDIM];
    size_t n; /* elements */
} Shape;

/* Why: size= is nil (one number), an integer, or a list of integers. */
static bool size_arg(VM *vm, Value v, Shape *s, const char *who, const Node *site)
{
    s->nd = 0;
    s->n = 1;
    if (v.t == T_NIL) return true;
    const Value *e = &v;
    size_t k = 1;
    if (v.t == T_LIST) {
        e = AS_LIST(v)->v;
        k = AS_LIST(v)->len;
        if (k > AR_MAXDIM) {
            vm_error(vm, site, "%s: size may have at most %d dimensions", who, AR_MAXDIM);
            return false;
        }
        if (k == 0) { /* size=[]: a 0-d result, one number as NumPy's () */
            return true;
        }
    }
    for (size_t i = 0; i < k; i++) {
        double x;
        if (!tp_number(e[i], &x) || x != floor(x) || x < 0 || x > 1e12) {
            vm_error(vm, site, "%s: size must be a non-negative integer or a list of them", who);
            return false;
        }
        s->d[i] = (size_t)x;
        s->n *= s->d[i];
    }
    s->nd = (int)k;
    if (s->n > ((size_t)1 << 34)) {
        vm_error(vm, site, "%s: size too large", who);
        return false;
    }
    return true;
}

/* A distribution parameter: a number, or an array (lists converted). */
typedef struct Param {
    double x;
    Array *a; /* owned; NULL for a number */
} Param;

static bool param_arg(VM *vm, Value v, Param *p, const char *who, const char *name,
                      const Node *site)
{
    p->a = NULL;
    if (tp_number(v, &p->x)) return true;
    if (v.t == T_LIST || v.t == T_ARRAY) {
        char err[AR_ERRLEN];
        p->a = v.t == T_LIST ? arr_from_list(vm, v, site) : ar_copy(AS_ARR(v), err);
        if (!p->a) {
            if (v.t == T_ARRAY) vm_error(vm, site, "%s", err);
            return false;
        }
        if (ar_is_complex(p->a)) {
            ar_free(p->a);
            p->a = NULL;
            vm_error(vm, site, "%s: %s must be real", who, name);
            return false;
        }
        return true;
    }
    vm_error(vm, site, "%s: %s must be a number or an array, not %s", who, name, type_name(v));
    return false;
}

/* Why: NumPy broadcasts the parameters against each other (size nil) or to
 * size; out is the result's shape. */
static bool param_shape(VM *vm, Param *ps, int np, Shape *out, bool given, const char *who,
                        const Node *site)
{
    if (!given) {
        out->nd = 0;
        out->n = 1;
        for (int i = 0; i < np; i++) {
            if (!ps[i].a) continue;
            int nd = ar_ndim(ps[i].a), m = nd > out->nd ? nd : out->nd;
            size_t d[AR_MAXDIM];
            for (int k = 0; k < m; k++) {
                int ia = k - (m - nd), io = k - (m - out->nd);
                size_t x = ia >= 0 ? ar_shape(ps[i].a)[ia] : 1, y = io >= 0 ? out->d[io] : 1;
                if (x != y && x != 1 && y != 1) {
                    vm_error(vm, site, "%s: shape mismatch: the parameters cannot be broadcast",
                             who);
                    return false;
                }
                d[k] = x == 1 ? y : x;
            }
            out->nd = m;
            memcpy(out->d, d, sizeof d);
        }
        out->n = 1;
        for (int k = 0; k < out->nd; k++) out->n *= out->d[k];
        return true;
    }
    for (int i = 0; i < np; i++) {
        if (!ps[i].a) continue;
        int nd = ar_ndim(ps[i].a);
        bool ok = nd <= out->nd;
        for (int k = 0; ok && k < nd; k++) {
            size_t x = ar_shape(ps[i].a)[k], y = out->d[out->nd - nd + k];
            ok = x == y || x == 1;
        }
        if (!ok) {
            vm_error(vm, site, "%s: shape mismatch: the parameters cannot be broadcast to size",
                     who);
            return false;
        }
    }
    return true;
}

/* parameter p at the result's flat position k (broadcast) */
static double param_at(const Param *p, const Shape *s, size_t k)
{
    if (!p->a) return p->x;
    int nd = ar_ndim(p->a);
    const size_t *ps = ar_shape(p->a);
    size_t off = 0, stride = 1;
    for (int ax = s->nd - 1, pa = nd - 1; ax >= 0; ax--, pa--) {
        size_t i = k % s->d[ax];
        k /= s->d[ax];
        if (pa < 0) continue;
        qh_assert(ps[pa] == 1 || ps[pa] == s->d[ax]); /* param_shape broadcast it */
        if (ps[pa] != 1) off += i * stride;
        stride *= ps[pa];
    }
    qh_assert(off < ar_size(p->a));
    return ar_item(p->a, off).re;
}

static void params_free(Param *ps, int n)
{
    for (int i = 0; i < n; i++) ar_free(ps[i].a);
}

/* Why: a float result of shape s (a number when s has no dimensions). */
static Value result(VM *vm, const Shape *s, double *x, const Node *site)
{
    if (s->nd == 0) {
        double v = x[0];
        free(x);
        return v_num(v);
    }
    char err[AR_ERRLEN];
    Array *a = ar_from_data(AR_F64, s->nd, s->d, x, err);
    free(x);
    if (!a) return vm_error(vm, site, "%s", err);
    return arr_wrap(a);
}

static double *alloc_draws(VM *vm, size_t n, const Node *site)
{
    double *x = malloc((n ? n : 1) * sizeof *x);
    if (!x) vm_oom(vm, site);
    return x;
}

static Value kw_or(Args *a, int pos, const char *name, Value dflt)
{
    if (pos >= 0 && pos < a->n) return a->v[pos];
    Value *k = arg_kw(a, name);
    return k ? *k : dflt;
}

/* ---------------------------------------------------------------- distributions */

typedef enum Dist { D_UNIFORM, D_NORMAL } Dist;

/* uniform(low, high, size) and normal(loc, scale, size): NumPy's cont()
 * fill, parameters broadcast, draws in row-major order. */
static Value two_param(VM *vm, ObjRand *r, Args *a, Dist d)
{
    const char *who = d == D_UNIFORM ? "uniform()" : "normal()";
    const char *n0 = d == D_UNIFORM ? "low" : "loc", *n1 = d == D_UNIFORM ? "high" : "scale";
    Value v0 = kw_or(a, 0, n0, v_num(0)), v1 = kw_or(a, 1, n1, v_num(1));
    Value vs = kw_or(a, 2, "size", v_nil());
    Param ps[2] = { { 0, NULL }, { 0, NULL } };
    Shape s;
    if (!size_arg(vm, vs, &s, who, a->site)) return v_exc();
    if (!param_arg(vm, v0, &ps[0], who, n0, a->site) ||
        !param_arg(vm, v1, &ps[1], who, n1, a->site) ||
        !param_shape(vm, ps, 2, &s, vs.t != T_NIL, who, a->site)) {
        params_free(ps, 2);
        return v_exc();
    }
    for (size_t k = 0; d == D_NORMAL && k < (ps[1].a ? ar_size(ps[1].a) : 1); k++) {
        double sc = ps[1].a ? ar_item(ps[1].a, k).re : ps[1].x;
        if (sc < 0 || isnan(sc)) {
            params_free(ps, 2);
            return vm_error(vm, a->site, "normal(): scale < 0");
        }
    }
    double *x = alloc_draws(vm, s.n, a->site);
    if (!x) {
        params_free(ps, 2);
        return v_exc();
    }
    for (size_t k = 0; k < s.n; k++) {
        double p0 = param_at(&ps[0], &s, k), p1 = param_at(&ps[1], &s, k);
        if (d == D_UNIFORM) {
            double range = p1 - p0;
            if (!isfinite(range)) {
                free(x);
                params_free(ps, 2);
                return vm_error(vm, a->site, "uniform(): range exceeds valid bounds");
            }
            x[k] = p0 + range * r_double(r);
        } else
            x[k] = p0 + p1 * r_normal(r);
    }
    params_free(ps, 2);
    return result(vm, &s, x, a->site);
}

static Value m_uniform(VM *vm, ObjRand *r, Args *a) { return two_param(vm, r, a, D_UNIFORM); }
static Value m_normal(VM *vm, ObjRand *r, Args *a) { return two_param(vm, r, a, D_NORMAL); }

/* random(size) / random_sample(size) / standard_normal(size) */
static Value one_shape(VM *vm, ObjRand *r, Args *a, bool normal, const char *who)
{
    Shape s;
    if (!size_arg(vm, kw_or(a, 0, "size", v_nil()), &s, who, a->site)) return v_exc();
    double *x = alloc_draws(vm, s.n, a->site);
    if (!x) return v_exc();
    for (size_t k = 0; k < s.n; k++) x[k] = normal ? r_normal(r) : r_double(r);
    return result(vm, &s, x, a->site);
}
static Value m_random(VM *vm, ObjRand *r, Args *a)
{
    return one_shape(vm, r, a, false, "random()");
}
static Value m_standard_normal(VM *vm, ObjRand *r, Args *a)
{
    return one_shape(vm, r, a, true, "standard_normal()");
}

/* legacy rand(d0, d1, ...) / randn(d0, d1, ...): the shape as arguments */
static Value dims(VM *vm, ObjRand *r, Args *a, bool normal, const char *who)
{
    Shape s = { 0, { 0 }, 1 };
    for (int i = 0; i < a->n; i++) {
        double x;
        if (!tp_number(a->v[i], &x) || x != floor(x) || x < 0 || x > 1e12)
            return vm_error(vm, a->site, "%s: dimensions must be non-negative integers", who);
        s.d[s.nd++] = (size_t)x;
        s.n *= (size_t)x;
    }
    if (s.n > ((size_t)1 << 34)) return vm_error(vm, a->site, "%s: size too large", who);
    double *x = alloc_draws(vm, s.n, a->site);
    if (!x) return v_exc();
    for (size_t k = 0; k < s.n; k++) x[k] = normal ? r_normal(r) : r_double(r);
    return result(vm, &s, x, a->site);
}
static Value m_rand(VM *vm, ObjRand *r, Args *a) { return dims(vm, r, a, false, "rand()"); }
static Value m_randn(VM *vm, ObjRand *r, Args *a) { return dims(vm, r, a, true, "randn()"); }

/* an integer argument (exact in a double) */
static bool int_arg(VM *vm, Value v, double *out, const char *who, const char *name,
                    const Node *site)
{
    if (!tp_number(v, out) || *out != floor(*out) || fabs(*out) > 9007199254740992.0) {
        vm_error(vm, site, "%s: %s must be an integer (of magnitude at most 2**53)", who, name);
        return false;
    }
    return true;
}

/* Why: randint(low, high=nil, size=nil) (legacy, masked rejection) and
 * integers(low, high=nil, size=nil, endpoint=false) (Generator, Lemire):
 * whole numbers in [low, high), or [low, high] with endpoint. */
static Value m_integers(VM *vm, ObjRand *r, Args *a)
{
    const char *who = r->kind == RK_LEGACY ? "randint()" : "integers()";
    double lo, hi;
    Value vl = kw_or(a, 0, "low", v_nil()), vh = kw_or(a, 1, "high", v_nil());
    if (vl.t == T_NIL) return vm_error(vm, a->site, "%s: needs low", who);
    if (!int_arg(vm, vl, &lo, who, "low", a->site)) return v_exc();
    if (vh.t == T_NIL) {
        hi = lo;
        lo = 0;
    } else if (!int_arg(vm, vh, &hi, who, "high", a->site))
        return v_exc();
    Value *ep = arg_kw(a, "endpoint");
    bool closed = ep && tp_truthy(vm, *ep, a->site, &(bool){ false });
    if (closed ? lo > hi : lo >= hi) return vm_error(vm, a->site, "%s: low >= high", who);
    uint64_t rng = (uint64_t)(int64_t)(hi - lo) - (closed ? 0 : 1);
    Shape s;
    if (!size_arg(vm, kw_or(a, 2, "size", v_nil()), &s, who, a->site)) return v_exc();
    double *x = alloc_draws(vm, s.n, a->site);
    if (!x) return v_exc();
    for (size_t k = 0; k < s.n; k++) x[k] = lo + (double)r_bounded(r, rng);
    return result(vm, &s, x, a->site);
}

/* ---------------------------------------------------------------- shuffle, permutation */

/* Why: NumPy's shuffle: for i from n-1 down to 1, swap row i with row
 * j = interval(i) (the same j sequence for lists and for arrays of any
 * dimension, whose rows are swapped whole). */
static bool shuffle_value(VM *vm, ObjRand *r, Value x, const Node *site)
{
    if (x.t == T_LIST) {
        ObjList *l = AS_LIST(x);
        for (size_t i = l->len; i-- > 1;) {
            size_t j = (size_t)r_interval(r, i);
            Value t = l->v[i];
            l->v[i] = l->v[j];
            l->v[j] = t;
        }
        return true;
    }
    if (x.t != T_ARRAY) {
        vm_error(vm, site, "shuffle(): needs a list or an array, not %s", type_name(x));
        return false;
    }
    Array *A = AS_ARR(x);
    size_t n = ar_len(A), row = n ? ar_size(A) / n : 0;
    size_t es = ar_is_complex(A) ? 2 * sizeof(double) : sizeof(double);
    char *p = ar_is_complex(A) ? (char *)ar_c128(A) : (char *)ar_f64(A);
    char *tmp = malloc(row * es + 1);
    if ((!p && ar_size(A)) || !tmp) {
        free(tmp);
        vm_oom(vm, site);
        return false;
    }
    for (size_t i = n; i-- > 1;) {
        size_t j = (size_t)r_interval(r, i);
        if (i == j) continue;
        memcpy(tmp, p + i * row * es, row * es);
        memcpy(p + i * row * es, p + j * row * es, row * es);
        memcpy(p + j * row * es, tmp, row * es);
    }
    free(tmp);
    return true;
}

static Value m_shuffle(VM *vm, ObjRand *r, Args *a)
{
    if (!shuffle_value(vm, r, a->v[0], a->site)) return v_exc();
    return v_nil();
}

static Value arange_value(VM *vm, size_t n, const Node *site)
{
    char err[AR_ERRLEN];
    Array *A = ar_arange(0, (double)n, 1, err);
    if (!A) return vm_error(vm, site, "%s", err);
    return arr_wrap(A);
}

/* permutation(n): a shuffled arange(n); permutation(x): a shuffled copy */
static Value m_permutation(VM *vm, ObjRand *r, Args *a)
{
    Value x = a->v[0], c;
    double d;
    char err[AR_ERRLEN];
    if (tp_number(x, &d)) {
        if (d != floor(d) || d < 0 || d > 1e12)
            return vm_error(vm, a->site, "permutation(): needs a non-negative integer or an array");
        c = arange_value(vm, (size_t)d, a->site);
    } else if (x.t == T_ARRAY) {
        Array *A = ar_copy(AS_ARR(x), err);
        c = A ? arr_wrap(A) : vm_error(vm, a->site, "%s", err);
    } else if (x.t == T_LIST) {
        Array *A = arr_from_list(vm, x, a->site);
        c = A ? arr_wrap(A) : v_exc();
    } else
        return vm_error(vm, a->site, "permutation(): needs an integer, a list or an array, not %s",
                        type_name(x));
    if (IS_EXC(c)) return c;
    if (!shuffle_value(vm, r, c, a->site)) {
        decref(c);
        return v_exc();
    }
    return c;
}

/* ---------------------------------------------------------------- choice */

/* first i with cdf[i] > u (searchsorted side='right') */
static size_t search_right(const double *cdf, size_t n, double u)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] <= u)
            lo = mid + 1;
        else
            hi = mid;
    }
    qh_assert(lo <= n && (lo == 0 || cdf[lo - 1] <= u) && (lo == n || cdf[lo] > u));
    return lo;
}

/* cumsum(p) / its last entry, as NumPy computes it */
static void make_cdf(const double *p, size_t n, double *cdf)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) cdf[i] = s += p[i];
    double last = cdf[n - 1];
    for (size_t i = 0; i < n; i++) cdf[i] /= last;
}

/* Why: choice's probabilities, checked as NumPy checks them. */
static double *choice_p(VM *vm, Value pv, size_t pop, const Node *site)
{
    Array *P = pv.t == T_LIST ? arr_from_list(vm, pv, site) : NULL;
    if (pv.t == T_LIST && !P) return NULL;
    const Array *A = P ? P : pv.t == T_ARRAY ? AS_ARR(pv) : NULL;
    double *p = NULL;
    if (!A) {
        vm_error(vm, site, "choice(): p must be a list or an array of probabilities, not %s",
                 type_name(pv));
    } else if (ar_ndim(A) != 1 || ar_is_complex(A)) {
        vm_error(vm, site, "choice(): p must be 1-dimensional and real");
    } else if (ar_size(A) != pop) {
        vm_error(vm, site, "choice(): a and p must have same size");
    } else if (!(p = malloc((pop ? pop : 1) * sizeof *p))) {
        vm_oom(vm, site);
    } else {
        double sum = 0, c = 0; /* Kahan, as NumPy's check */
        bool neg = false, fin = true;
        for (size_t i = 0; i < pop; i++) {
            p[i] = ar_item(A, i).re;
            neg |= p[i] < 0;
            fin &= isfinite(p[i]) != 0;
            double y = p[i] - c, t = sum + y;
            c = (t - sum) - y;
            sum = t;
        }
        const char *why = !fin  ? "probabilities contain NaN"
                          : neg ? "probabilities are not non-negative"
                          : fabs(sum - 1.0) > 1.4901161193847656e-08
                              ? "probabilities do not sum to 1"
                              : NULL;
        if (why) {
            vm_error(vm, site, "choice(): %s", why);
            free(p);
            p = NULL;
        }
    }
    ar_free(P);
    return p;
}

/* Why: sampling without replacement with p (both APIs): draw the missing
 * count, keep first occurrences of new indices, zero their weights, and
 * repeat. */
static bool choice_noreplace_p(ObjRand *r, double *p, size_t pop, size_t n, uint64_t *idx,
                               double *cdf, double *u)
{
    size_t got = 0;
    while (got < n) {
        size_t want = n - got;
        for (size_t k = 0; k < want; k++) u[k] = r_double(r);
        for (size_t k = 0; k < got; k++) p[idx[k]] = 0;
        make_cdf(p, pop, cdf);
        size_t start = got;
        for (size_t k = 0; k < want; k++) {
            uint64_t v = search_right(cdf, pop, u[k]);
            bool seen = false;
            for (size_t q = start; q < got && !seen; q++) seen = idx[q] == v;
            if (!seen) idx[got++] = v;
        }
    }
    return true;
}

/* Why: Generator.choice without replacement and without p: Floyd's
 * algorithm with a hash set, then a shuffle of the sample; a tail shuffle
 * when a large share of a large population is taken (NumPy's rule). */
static bool choice_floyd(ObjRand *r, size_t pop, size_t n, uint64_t *idx, bool shuf)
{
    if (pop > 10000 && n > pop / 50) {
        uint64_t *all = malloc(pop * sizeof *all);
        if (!all) return false;
        for (size_t i = 0; i < pop; i++) all[i] = i;
        size_t first = pop - n > 1 ? pop - n : 1;
        for (size_t i = pop; i-- > first;) {
            size_t j = (size_t)r_bounded(r, i);
            uint64_t t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        memcpy(idx, all + (pop - n), n * sizeof *idx);
        free(all);
        return true;
    }
    uint64_t mask = (uint64_t)(1.2 * (double)n);
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    qh_assert((mask & (mask + 1)) == 0 && mask + 1 > n); /* a power of two, never full */
    uint64_t *set = malloc((size_t)(mask + 1) * sizeof *set);
    if (!set) return false;
    for (uint64_t i = 0; i <= mask; i++) set[i] = UINT64_MAX;
    for (size_t j = pop - n; j < pop; j++) {
        uint64_t v = r_bounded(r, j), loc = v & mask;
        while (set[loc] != UINT64_MAX && set[loc] != v) loc = (loc + 1) & mask;
        if (set[loc] == UINT64_MAX) {
            set[loc] = v;
        } else {
            v = j;
            loc = j & mask;
            while (set[loc] != UINT64_MAX) loc = (loc + 1) & mask;
            set[loc] = j;
        }
        qh_assert(v <= j); /* drawn from range(j + 1) */
        idx[j - (pop - n)] = v;
    }
    free(set);
    for (size_t i = n; shuf && i-- > 1;) {
        size_t j = (size_t)r_bounded(r, i);
        uint64_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    return true;
}

/* One choice() call: n indices drawn from range(pop), with or without
 * replacement, weighted by p (pop weights summing to 1) or uniform, the
 * Generator's draws without replacement shuffled or not. */
typedef struct ChoiceSpec {
    size_t pop, n;
    bool replace;
    double *p; /* NULL: uniform; zeroed as drawn without replacement */
    bool shuf;
} ChoiceSpec;

/* the indices of one choice() call into idx (c->n of them) */
static bool choice_indices(VM *vm, ObjRand *r, const ChoiceSpec *c, uint64_t *idx, const Node *site)
{
    size_t pop = c->pop, n = c->n;
    bool replace = c->replace, shuf = c->shuf;
    double *p = c->p;
    qh_assert(replace || n <= pop);
    if (p) {
        double *cdf = malloc(pop * sizeof *cdf), *u = malloc((n ? n : 1) * sizeof *u);
        bool ok = cdf && u;
        if (ok && replace) {
            make_cdf(p, pop, cdf);
            for (size_t k = 0; k < n; k++) u[k] = r_double(r);
            for (size_t k = 0; k < n; k++) idx[k] = search_right(cdf, pop, u[k]);
        } else if (ok) {
            ok = choice_noreplace_p(r, p, pop, n, idx, cdf, u);
        }
        free(cdf);
        free(u);
        if (!ok) vm_oom(vm, site);
        return ok;
    }
    if (replace) {
        for (size_t k = 0; k < n; k++) idx[k] = r_bounded(r, pop - 1);
        return true;
    }
    if (r->kind == RK_GEN) {
        if (!choice_floyd(r, pop, n, idx, shuf)) return vm_oom(vm, site), false;
        return true;
    }
    /* legacy: permutation(pop)[:n] */
    uint64_t *perm = malloc(pop * sizeof *perm);
    if (!perm) return vm_oom(vm, site), false;
    for (size_t i = 0; i < pop; i++) perm[i] = i;
    for (size_t i = pop; i-- > 1;) {
        size_t j = (size_t)r_interval(r, i);
        uint64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    memcpy(idx, perm, n * sizeof *idx);
    free(perm);
    return true;
}

/* the elements a[idx] as the result (numbers into an array, others into a list) */
static Value choice_result(VM *vm, Value av, const Shape *s, const uint64_t *idx, const Node *site)
{
    bool numbers = av.t != T_LIST;
    for (size_t k = 0; !numbers && k == 0; k++) {
        numbers = true;
        for (size_t i = 0; i < AS_LIST(av)->len && numbers; i++) {
            double d;
            numbers = tp_number(AS_LIST(av)->v[i], &d);
        }
    }
    if (av.t == T_LIST && !numbers) {
        if (s->nd == 0) {
            Value e = AS_LIST(av)->v[idx[0]];
            incref(e);
            return e;
        }
        if (s->nd != 1)
            return vm_error(vm, site, "choice(): a list of non-numbers needs a 1-d size");
        ObjList *l = list_new(s->n);
        for (size_t k = 0; k < s->n; k++) {
            Value e = AS_LIST(av)->v[idx[k]];
            incref(e);
            l->v[l->len++] = e;
        }
        return v_list(l);
    }
    Array *src = av.t == T_LIST ? arr_from_list(vm, av, site) : NULL;
    if (av.t == T_LIST && !src) return v_exc();
    const Array *A = src ? src : av.t == T_ARRAY ? AS_ARR(av) : NULL;
    bool cplx = A && ar_is_complex(A);
    size_t n = s->n;
    double *x = malloc((n ? n : 1) * (cplx ? 2 : 1) * sizeof *x);
    if (!x) {
        ar_free(src);
        return vm_oom(vm, site);
    }
    for (size_t k = 0; k < n; k++) {
        if (!A) {
            x[k] = (double)idx[k];
            continue;
        }
        ArScalar e = ar_item(A, idx[k]);
        if (cplx) {
            x[2 * k] = e.re;
            x[2 * k + 1] = e.im;
        } else
            x[k] = e.re;
    }
    ar_free(src);
    if (s->nd == 0) {
        Value v = cplx ? v_complex(x[0], x[1]) : v_num(x[0]);
        free(x);
        return v;
    }
    char err[AR_ERRLEN];
    Array *out = ar_from_data(cplx ? AR_C128 : AR_F64, s->nd, s->d, x, err);
    free(x);
    return out ? arr_wrap(out) : vm_error(vm, site, "%s", err);
}

/* choice(a, size=nil, replace=true, p=nil[, shuffle=true]) */
static Value m_choice(VM *vm, ObjRand *r, Args *a)
{
    Value av = a->v[0];
    size_t pop;
    double d;
    if (tp_number(av, &d)) {
        if (d != floor(d) || d > 1e12)
            return vm_error(vm, a->site, "choice(): a must be an integer or a 1-d array");
        if (d < 0)
            return vm_error(vm, a->site,
                            "choice(): a must be greater than 0 unless no samples are taken");
        pop = (size_t)d;
    } else if (av.t == T_ARRAY) {
        if (ar_ndim(AS_ARR(av)) != 1)
            return vm_error(vm, a->site, "choice(): a must be 1-dimensional");
        pop = ar_size(AS_ARR(av));
    } else if (av.t == T_LIST) {
        pop = AS_LIST(av)->len;
    } else
        return vm_error(vm, a->site,
                        "choice(): a must be an integer, a list or a 1-d array, not %s",
                        type_name(av));
    Shape s;
    if (!size_arg(vm, kw_or(a, 1, "size", v_nil()), &s, "choice()", a->site)) return v_exc();
    bool err = false, replace = tp_truthy(vm, kw_or(a, 2, "replace", v_bool(true)), a->site, &err);
    Value pv = kw_or(a, 3, "p", v_nil());
    bool shuf = tp_truthy(vm, kw_or(a, 4, "shuffle", v_bool(true)), a->site, &err);
    if (err) return v_exc();
    if (pop == 0 && s.n > 0)
        return vm_error(vm, a->site, "choice(): a cannot be empty unless no samples are taken");
    double *p = pv.t == T_NIL ? NULL : choice_p(vm, pv, pop, a->site);
    if (pv.t != T_NIL && !p) return v_exc();
    if (!replace && s.n > pop) {
        free(p);
        return vm_error(vm, a->site,
                        "choice(): cannot take a larger sample than population when replace=false");
    }
    if (!replace && p) {
        size_t nz = 0;
        for (size_t i = 0; i < pop; i++) nz += p[i] > 0;
        if (nz < s.n) {
            free(p);
            return vm_error(vm, a->site, "choice(): fewer non-zero entries in p than size");
        }
    }
    uint64_t *idx = malloc((s.n ? s.n : 1) * sizeof *idx);
    if (!idx) {
        free(p);
        return vm_oom(vm, a->site);
    }
    ChoiceSpec cs = { pop, s.n, replace, p, shuf };
    bool ok = choice_indices(vm, r, &cs, idx, a->site);
    free(p);
    Value res = ok ? choice_result(vm, av, &s, idx, a->site) : v_exc();
    free(idx);
    return res;
}

/* ---------------------------------------------------------------- seed, constructors */

static Value m_seed(VM *vm, ObjRand *r, Args *a)
{
    if (!seed_legacy(vm, r, kw_or(a, 0, "seed", v_nil()), a->site)) return v_exc();
    return v_nil();
}

static Value make_legacy(VM *vm, Value seed, const Node *site)
{
    Value v = rand_new(RK_LEGACY);
    if (!seed_legacy(vm, RAND(v), seed, site)) {
        decref(v);
        return v_exc();
    }
    return v;
}

static Value make_generator(VM *vm, Value seed, const Node *site)
{
    if (seed.t == T_GENERATOR) { /* default_rng(g) is g, as in NumPy */
        incref(seed);
        return seed;
    }
    uint32_t w[MAX_SEED_WORDS];
    size_t n;
    if (seed.t == T_NIL)
        seed_fresh(vm, w, &n);
    else if (!seed_words(vm, seed, "default_rng()", false, w, &n, site))
        return v_exc();
    Value v = rand_new(RK_GEN);
    npr_pcg_seed(&RAND(v)->u.pcg, w, n);
    return v;
}

static Value m_random_state(VM *vm, ObjRand *r, Args *a)
{
    (void)r;
    return make_legacy(vm, kw_or(a, 0, "seed", v_nil()), a->site);
}
static Value m_default_rng(VM *vm, ObjRand *r, Args *a)
{
    (void)r;
    return make_generator(vm, kw_or(a, 0, "seed", v_nil()), a->site);
}

static Value bi_random_state(VM *vm, Args *a)
{
    return make_legacy(vm, kw_or(a, 0, "seed", v_nil()), a->site);
}
static Value bi_default_rng(VM *vm, Args *a)
{
    return make_generator(vm, kw_or(a, 0, "seed", v_nil()), a->site);
}

/* ---------------------------------------------------------------- methods */

static const char *const kw_size[] = { "size", NULL };
static const char *const kw_unif[] = { "low", "high", "size", NULL };
static const char *const kw_norm[] = { "loc", "scale", "size", NULL };
static const char *const kw_randint[] = { "low", "high", "size", NULL };
static const char *const kw_integers[] = { "low", "high", "size", "endpoint", NULL };
static const char *const kw_choice_l[] = { "size", "replace", "p", NULL };
static const char *const kw_choice_g[] = { "size", "replace", "p", "shuffle", NULL };
static const char *const kw_seed[] = { "seed", NULL };

static const MethodDef legacy_methods[] = {
    { "seed", m_seed, 0, 1, kw_seed },
    { "rand", m_rand, 0, AR_MAXDIM, NULL },
    { "randn", m_randn, 0, AR_MAXDIM, NULL },
    { "random", m_random, 0, 1, kw_size },
    { "random_sample", m_random, 0, 1, kw_size },
    { "uniform", m_uniform, 0, 3, kw_unif },
    { "normal", m_normal, 0, 3, kw_norm },
    { "standard_normal", m_standard_normal, 0, 1, kw_size },
    { "randint", m_integers, 0, 3, kw_randint },
    { "choice", m_choice, 1, 4, kw_choice_l },
    { "shuffle", m_shuffle, 1, 1, NULL },
    { "permutation", m_permutation, 1, 1, NULL },
    { "RandomState", m_random_state, 0, 1, kw_seed },
    { "default_rng", m_default_rng, 0, 1, kw_seed },
    { NULL, NULL, 0, 0, NULL },
};

static const MethodDef generator_methods[] = {
    { "random", m_random, 0, 1, kw_size },
    { "uniform", m_uniform, 0, 3, kw_unif },
    { "normal", m_normal, 0, 3, kw_norm },
    { "standard_normal", m_standard_normal, 0, 1, kw_size },
    { "integers", m_integers, 0, 3, kw_integers },
    { "choice", m_choice, 1, 5, kw_choice_g },
    { "shuffle", m_shuffle, 1, 1, NULL },
    { "permutation", m_permutation, 1, 1, NULL },
    { NULL, NULL, 0, 0, NULL },
};

static Value rand_member(VM *vm, Value obj, const ObjStr *name, const Node *site)
{
    const MethodDef *t = RAND(obj)->kind == RK_LEGACY ? legacy_methods : generator_methods;
    for (; t->name; t++) {
        if (strcmp(t->name, name->s) != 0) continue;
        ObjMethod *m = (ObjMethod *)obj_alloc(sizeof(ObjMethod), T_RMETHOD);
        incref(obj);
        m->self = obj;
        m->m = t;
        return v_obj(&m->h);
    }
    return vm_error(vm, site, "%s has no member '%s'", type_name(obj), name->s);
}

/* a bound method called: arity and keywords checked, futures waited for */
static Value method_call(VM *vm, Value fn, Args *a)
{
    const MethodDef *m = METHOD(fn)->m;
    if (a->n < m->min || (m->max >= 0 && a->n > m->max))
        return vm_error(vm, a->site, "%s() takes %s %d argument%s but %d were given", m->name,
                        a->n < m->min ? "at least" : "at most", a->n < m->min ? m->min : m->max,
                        (a->n < m->min ? m->min : m->max) == 1 ? "" : "s", a->n);
    for (int k = 0; k < a->nkw; k++) {
        bool ok = false;
        for (const char *const *w = m->kwnames; w && *w; w++)
            ok |= strcmp(*w, a->kwname[k]->s) == 0;
        if (!ok)
            return vm_error(vm, a->site, "%s() got an unexpected keyword argument '%s'", m->name,
                            a->kwname[k]->s);
    }
    if (!tp_force_args(vm, a->v, a->n, a->site, NULL, m->fn != m_shuffle) ||
        !tp_force_args(vm, a->kw, a->nkw, a->site, NULL, true))
        return v_exc();
    return m->fn(vm, RAND(METHOD(fn)->self), a);
}

/* ---------------------------------------------------------------- kinds */

static void rand_free(Obj *o) { free(o); }
static void method_free(Obj *o)
{
    decref(((ObjMethod *)o)->self);
    free(o);
}

/* Why: a generator is the mutable state of the thread that made it: a copy
 * for a task would draw the same numbers again, or race, so it is refused
 * (the error names it). */
static Value rand_copy(Value v, CopyCtx *cc)
{
    (void)v;
    cc->error = "a random generator (its draws happen in program order, outside quantum "
                "functions: draw the numbers before the call and pass them in)";
    return v_nil();
}
static Value method_copy(Value v, CopyCtx *cc) { return rand_copy(METHOD(v)->self, cc); }

static void rand_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    buf_puts(b, RAND(v)->kind == RK_LEGACY ? "RandomState(MT19937)" : "Generator(PCG64)");
}
static void method_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    buf_puts(b, "<method ");
    buf_puts(b, METHOD(v)->m->name);
    buf_puts(b, " of ");
    rand_repr(b, METHOD(v)->self, false);
    buf_puts(b, ">");
}

static const TypeOps randstate_ops = {
    .name = "RandomState",
    .free = rand_free,
    .copy = rand_copy,
    .repr = rand_repr,
    .member = rand_member,
};
static const TypeOps generator_ops = {
    .name = "Generator",
    .free = rand_free,
    .copy = rand_copy,
    .repr = rand_repr,
    .member = rand_member,
};
static const TypeOps method_ops = {
    .name = "method",
    .free = method_free,
    .copy = method_copy,
    .repr = method_repr,
    .call = method_call,
};

static const BuiltinDef builtins_random[] = {
    { "random_state", bi_random_state, 0, 1, 0, kw_seed, 0 },
    { "default_rng", bi_default_rng, 0, 1, 0, kw_seed, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

void randomval_open(void)
{
    T_RANDSTATE = type_register_new(&randstate_ops);
    T_GENERATOR = type_register_new(&generator_ops);
    T_RMETHOD = type_register_new(&method_ops);
    builtins_add(builtins_random);
}

/* qrt_obs.c — observables: Pauli words and sums (operators with real
 * coefficients), hamiltonian(), Hermitian(), Projector(), and matrix() of
 * an operator or of a function that applies gates. Knows values, arrays
 * and the simulator's term structs (sv.h); applies nothing to a device. */
#include "qrt_impl.h"
#include "arrayval.h"
#include "array.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- observables */

/* A gate that is an observable (I, X, Y, Z, H on one wire; H = (X + Z)/sqrt 2)
 * as Pauli terms; *id: Identity's wire bit */
static bool as_terms_gate(VM *vm, Value v, SvTerm **terms, int *n, uint64_t *id, const Node *site)
{
    if (v.t != T_OP) {
        vm_error(vm, site, "expected an observable, not %s", type_name(v));
        return false;
    }
    ObjOp *p = AS_OP(v);
    if (p->kind == OPK_CHAN) {
        vm_error(vm, site, "%s is a noise channel, not an observable",
                 dm_channel_info((DmChannel)p->chan)->name);
        return false;
    }
    SvOp *o = &p->op;
    if (o->nctrl || o->nwires != 1 ||
        (o->gate != SV_IDENTITY && o->gate != SV_PAULIX && o->gate != SV_PAULIY &&
         o->gate != SV_PAULIZ && o->gate != SV_HADAMARD)) {
        vm_error(vm, site,
                 "%s is not an observable (observables: PauliX, PauliY, PauliZ, Hadamard, "
                 "Identity, their products and sums)",
                 sv_gate_info(o->gate)->name);
        return false;
    }
    uint64_t m = (uint64_t)1 << o->wires[0];
    *terms = xcalloc(2, sizeof(SvTerm));
    *n = 1;
    SvTerm *t = *terms;
    switch ((int)o->gate) {
    case SV_IDENTITY:
        t[0].coeff = 1;
        *id = m;
        break;
    case SV_PAULIX:
        t[0].coeff = 1;
        t[0].x = m;
        break;
    case SV_PAULIY:
        t[0].coeff = 1;
        t[0].x = t[0].z = m;
        break;
    case SV_PAULIZ:
        t[0].coeff = 1;
        t[0].z = m;
        break;
    default:
        t[0].coeff = t[1].coeff = M_SQRT1_2;
        t[0].x = m;
        t[1].z = m;
        *n = 2;
    }
    return true;
}

/* The Pauli-sum form of an operator: a number, an observable as it is, or
 * an observable gate, and each term's Identity wires (*idw: a new array,
 * like *terms; NULL when not wanted). */
bool as_terms(VM *vm, Value v, SvTerm **terms, uint64_t **idw, int *n, const Node *site)
{
    if (idw) *idw = NULL;
    uint64_t id = 0;
    if (v.t == T_NUM) {
        *terms = xcalloc(1, sizeof(SvTerm));
        (*terms)[0].coeff = v.n;
        *n = 1;
    } else if (v.t == T_OP && AS_OP(v)->kind == OPK_OBS) {
        ObjOp *p = AS_OP(v);
        *terms = sv_terms_dup(p->terms, p->nterms);
        if (!*terms) {
            vm_error(vm, site, "out of memory");
            return false;
        }
        *n = p->nterms;
        if (idw) {
            *idw = xcalloc((size_t)p->nterms + 1, sizeof(uint64_t));
            if (p->idw) memcpy(*idw, p->idw, (size_t)p->nterms * sizeof(uint64_t));
        }
        return true;
    } else if (!as_terms_gate(vm, v, terms, n, &id, site)) {
        return false;
    }
    if (idw) {
        *idw = xcalloc((size_t)*n + 1, sizeof(uint64_t));
        for (int i = 0; i < *n; i++) (*idw)[i] = id;
    }
    return true;
}

/* merges equal Pauli words (their Identity wires too; terms with a block
 * stay apart) and drops zero terms */
static int simplify(SvTerm *t, uint64_t *idw, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        int j = k;
        if (t[i].kind == SVB_NONE)
            for (j = 0; j < k; j++)
                if (t[j].kind == SVB_NONE && t[j].x == t[i].x && t[j].z == t[i].z) {
                    t[j].coeff += t[i].coeff;
                    idw[j] |= idw[i];
                    break;
                }
        if (j == k) {
            t[k] = t[i];
            idw[k] = idw[i];
            k++;
        }
    }
    int m = 0;
    for (int i = 0; i < k; i++) {
        if (t[i].coeff == 0) {
            free((void *)t[i].m);
            free((void *)t[i].ket);
            continue;
        }
        t[m] = t[i];
        idw[m] = idw[i] & ~(t[i].x | t[i].z);
        m++;
    }
    return m;
}

/* takes t and idw (n entries each) */
static Value make_obs(SvTerm *t, uint64_t *idw, int n)
{
    ObjOp *p = op_new(OPK_OBS);
    p->terms = t;
    p->idw = idw;
    p->nterms = simplify(t, idw, n);
    return v_obj(&p->h);
}

/* the binop slot: operators with operators and real coefficients; any
 * other partner is not ours (== compares identity, by default) */
Value op_binop(VM *vm, BinOp op, Value a, Value b, const Node *site)
{
    SvTerm *ta = NULL, *tb = NULL;
    uint64_t *ia = NULL, *ib = NULL;
    int na = 0, nb = 0;
    bool known_a = a.t == T_OP || a.t == T_NUM || a.t == T_COMPLEX,
         known_b = b.t == T_OP || b.t == T_NUM || b.t == T_COMPLEX;
    if (op == OP_EQ || op == OP_NE || !known_a || !known_b) return v_notimpl();
    if (op == OP_MUL && (a.t == T_NUM || b.t == T_NUM)) {
        double c = a.t == T_NUM ? a.n : b.n;
        Value o = a.t == T_NUM ? b : a;
        if (!as_terms(vm, o, &ta, &ia, &na, site)) return v_exc();
        for (int i = 0; i < na; i++) ta[i].coeff *= c;
        return make_obs(ta, ia, na);
    }
    if (op == OP_DIV && b.t == T_NUM && a.t == T_OP) {
        if (b.n == 0) return vm_error(vm, site, "division by zero");
        if (!as_terms(vm, a, &ta, &ia, &na, site)) return v_exc();
        for (int i = 0; i < na; i++) ta[i].coeff /= b.n;
        return make_obs(ta, ia, na);
    }
    if ((a.t == T_COMPLEX || b.t == T_COMPLEX) && (op == OP_MUL || op == OP_ADD || op == OP_SUB))
        return vm_error(vm, site, "observables take real coefficients only");
    if (op == OP_ADD || op == OP_SUB || op == OP_MATMUL) {
        if (op == OP_MATMUL && (a.t == T_NUM || b.t == T_NUM))
            return vm_error(vm, site,
                            "@ of an operator needs another operator (use * for a coefficient)");
        if (!as_terms(vm, a, &ta, &ia, &na, site)) return v_exc();
        if (!as_terms(vm, b, &tb, &ib, &nb, site)) {
            sv_terms_free(ta, na);
            free(ia);
            return v_exc();
        }
        if (op == OP_MATMUL) {
            if ((size_t)na * (size_t)nb > 1000000) {
                sv_terms_free(ta, na);
                sv_terms_free(tb, nb);
                free(ia);
                free(ib);
                return vm_error(vm, site, "tensor product too large");
            }
            SvTerm *t = xcalloc((size_t)na * (size_t)nb + 1, sizeof(SvTerm));
            uint64_t *id = xmalloc(((size_t)na * (size_t)nb + 1) * sizeof(uint64_t));
            int k = 0;
            char err[256];
            for (int i = 0; i < na; i++)
                for (int j = 0; j < nb; j++) {
                    if (sv_term_tensor(&ta[i], &tb[j], &t[k], err, sizeof err) != 0) {
                        sv_terms_free(ta, na);
                        sv_terms_free(tb, nb);
                        free(ia);
                        free(ib);
                        sv_terms_free(t, k);
                        free(id);
                        return vm_error(vm, site, "%s", err);
                    }
                    id[k++] = ia[i] | ib[j]; /* an Identity on a Pauli's wire is that Pauli */
                }
            sv_terms_free(ta, na);
            sv_terms_free(tb, nb);
            free(ia);
            free(ib);
            return make_obs(t, id, k);
        }
        SvTerm *t = xmalloc((size_t)(na + nb + 1) * sizeof(SvTerm));
        uint64_t *id = xmalloc((size_t)(na + nb + 1) * sizeof(uint64_t));
        memcpy(t, ta, (size_t)na * sizeof(SvTerm)); /* the blocks move over */
        memcpy(id, ia, (size_t)na * sizeof(uint64_t));
        for (int j = 0; j < nb; j++) {
            t[na + j] = tb[j];
            id[na + j] = ib[j];
            if (op == OP_SUB) t[na + j].coeff = -t[na + j].coeff;
        }
        free(ta);
        free(tb);
        free(ia);
        free(ib);
        return make_obs(t, id, na + nb);
    }
    return vm_error(vm, site, "unsupported operation %s on operators", op_symbol(op));
}

Value op_unop(VM *vm, BinOp op, Value a, const Node *site)
{
    if (op == OP_INVERT) return v_notimpl();
    if (op == OP_POS) {
        incref(a);
        return a;
    }
    return op_binop(vm, OP_MUL, v_num(-1), a, site);
}

Value bi_hamiltonian(VM *vm, Args *a)
{
    Value c = a->v[0], o = a->v[1];
    Value cl = c, tmp = v_nil();
    if (c.t == T_ARRAY) {
        tmp = vm_call(vm, builtin_named("tolist"), 1, &c, a->site);
        if (IS_EXC(tmp)) return tmp;
        cl = tmp;
    }
    if (cl.t != T_LIST || o.t != T_LIST) {
        decref(tmp);
        return vm_error(vm, a->site, "hamiltonian(coeffs, ops) needs two lists");
    }
    ObjList *cs = AS_LIST(cl), *os = AS_LIST(o);
    if (cs->len != os->len) {
        decref(tmp);
        return vm_error(vm, a->site, "hamiltonian(): %zu coefficients for %zu operators", cs->len,
                        os->len);
    }
    SvTerm *all = xmalloc((os->len * 2 + 1) * sizeof(SvTerm));
    uint64_t *ids = xmalloc((os->len * 2 + 1) * sizeof(uint64_t));
    int n = 0, cap = (int)os->len * 2 + 1;
    for (size_t i = 0; i < os->len; i++) {
        if (cs->v[i].t != T_NUM) {
            sv_terms_free(all, n);
            free(ids);
            decref(tmp);
            return vm_error(vm, a->site, "hamiltonian(): coefficients must be real numbers");
        }
        SvTerm *t;
        uint64_t *id;
        int k;
        if (!as_terms(vm, os->v[i], &t, &id, &k, a->site)) {
            sv_terms_free(all, n);
            free(ids);
            decref(tmp);
            return v_exc();
        }
        if (n + k > cap) {
            cap = (n + k) * 2;
            all = xrealloc(all, (size_t)cap * sizeof(SvTerm));
            ids = xrealloc(ids, (size_t)cap * sizeof(uint64_t));
        }
        for (int j = 0; j < k; j++) {
            t[j].coeff *= cs->v[i].n;
            ids[n] = id[j];
            all[n++] = t[j];
        }
        free(t);
        free(id);
    }
    decref(tmp);
    return make_obs(all, ids, n);
}

/* The wires of Hermitian/Projector: trailing arguments from index pos, or wires= */
static int obs_wires(VM *vm, Args *a, int pos, int *ws, const char *name)
{
    int nw = arg_wires(vm, a, pos, name, ws);
    if (nw < 0) return -1;
    if (nw == 0) {
        vm_error(vm, a->site, "%s needs its wires", name);
        return -1;
    }
    return wires_distinct(vm, ws, nw, name, a->site) ? nw : -1;
}

/* A 1-d or 2-d numeric value (array, or nested lists) as an array (new reference). */
static Value as_array_arg(VM *vm, Value v, const char *name, const char *what, const Node *site)
{
    if (v.t == T_ARRAY) {
        incref(v);
        return v;
    }
    if (v.t == T_LIST) {
        Value r = vm_call(vm, builtin_named("array"), 1, &v, (Node *)site);
        if (IS_EXC(r) || r.t == T_ARRAY) return r;
        decref(r);
    }
    return vm_error(vm, site, "%s: %s must be an array or a list of numbers, not %s", name, what,
                    type_name(v));
}

static Value one_term_obs(SvTerm *t)
{
    uint64_t *id = xcalloc(2, sizeof(uint64_t));
    return make_obs(t, id, 1);
}

/* Hermitian(A, wires): the observable A (2^k x 2^k, Hermitian as NumPy's
 * allclose sees it) on k wires, the first one its most significant bit. */
Value bi_hermitian(VM *vm, Args *a)
{
    int ws[SV_MAX_WIRES];
    int k = obs_wires(vm, a, 1, ws, "Hermitian");
    if (k < 0) return v_exc();
    if (k > SV_MAX_DENSE)
        return vm_error(vm, a->site, "Hermitian: at most %d wires, got %d", SV_MAX_DENSE, k);
    Value mv = as_array_arg(vm, a->v[0], "Hermitian", "the matrix", a->site);
    if (IS_EXC(mv)) return mv;
    Array *ar = AS_ARR(mv);
    size_t d = (size_t)1 << k;
    if (ar_ndim(ar) != 2 || ar_shape(ar)[0] != d || ar_shape(ar)[1] != d) {
        decref(mv);
        return vm_error(vm, a->site, "Hermitian: a matrix on %d wire%s must be %zux%zu", k,
                        k == 1 ? "" : "s", d, d);
    }
    cplx *m = xmalloc(d * d * sizeof(cplx));
    for (size_t e = 0; e < d * d; e++) {
        ArScalar sc = ar_item(ar, e);
        m[e] = sc.re + (sc.is_complex ? sc.im : 0) * I;
    }
    decref(mv);
    SvTerm *t = xcalloc(2, sizeof(SvTerm));
    t->coeff = 1;
    t->kind = SVB_DENSE;
    t->k = k;
    memcpy(t->wires, ws, (size_t)k * sizeof(int));
    t->m = m;
    char err[256];
    if (sv_obs_check(t, 1, SV_MAX_WIRES, "Hermitian", err, sizeof err) != 0) {
        sv_terms_free(t, 1);
        return vm_error(vm, a->site, "%s", err);
    }
    return one_term_obs(t);
}

/* Projector(state, wires): |b><b| for a basis state b (k bits) or
 * |phi><phi| for a state vector phi (2^k amplitudes, used as given). */
Value bi_projector(VM *vm, Args *a)
{
    int ws[SV_MAX_WIRES];
    int k = obs_wires(vm, a, 1, ws, "Projector");
    if (k < 0) return v_exc();
    Value sv = as_array_arg(vm, a->v[0], "Projector", "the state", a->site);
    if (IS_EXC(sv)) return sv;
    Array *ar = AS_ARR(sv);
    size_t len = ar_size(ar);
    SvTerm *t = xcalloc(2, sizeof(SvTerm));
    t->coeff = 1;
    t->k = k;
    memcpy(t->wires, ws, (size_t)k * sizeof(int));
    if (ar_ndim(ar) == 1 && len == (size_t)k) {
        t->kind = SVB_BASIS;
        for (size_t i = 0; i < len; i++) {
            ArScalar sc = ar_item(ar, i);
            if ((sc.re != 0 && sc.re != 1) || (sc.is_complex && sc.im != 0)) {
                decref(sv);
                free(t);
                return vm_error(vm, a->site,
                                "Projector: a basis state has entries 0 and 1 (entry %zu is not)",
                                i);
            }
            if (sc.re == 1) t->bits |= (uint64_t)1 << i;
        }
    } else if (ar_ndim(ar) == 1 && k <= SV_MAX_KET && len == (size_t)1 << k) {
        t->kind = SVB_KET;
        cplx *v = xmalloc(len * sizeof(cplx));
        double nrm = 0;
        for (size_t i = 0; i < len; i++) {
            ArScalar sc = ar_item(ar, i);
            v[i] = sc.re + (sc.is_complex ? sc.im : 0) * I;
            nrm += creal(v[i] * conj(v[i]));
        }
        t->ket = v;
        if (!(nrm > 0)) {
            decref(sv);
            sv_terms_free(t, 1);
            return vm_error(vm, a->site, "Projector: the state vector is zero");
        }
    } else {
        decref(sv);
        free(t);
        return vm_error(vm, a->site,
                        "Projector: for %d wire%s the state must have %d entries (a basis state) "
                        "or %.0f (a state vector), got %zu",
                        k, k == 1 ? "" : "s", k, ldexp(1, k), len);
    }
    decref(sv);
    char err[256];
    if (sv_obs_check(t, 1, SV_MAX_WIRES, "Projector", err, sizeof err) != 0) {
        sv_terms_free(t, 1);
        return vm_error(vm, a->site, "%s", err);
    }
    return one_term_obs(t);
}

static Value matrix_of_callable(VM *vm, Args *a);

/* The dense matrix (2^n x 2^n, added into out) of an observable of
   Pauli words only. */
static void pauli_sum_matrix(const ObjOp *p, int n, cplx *out)
{
    size_t d = (size_t)1 << n;
    for (int t = 0; t < p->nterms; t++) {
        SvTerm w = p->terms[t];
        uint64_t xm = 0, zm = 0;
        int ny = 0;
        for (int wire = 0; wire < n; wire++) {
            uint64_t bit = (uint64_t)1 << (n - 1 - wire), wb = (uint64_t)1 << wire;
            if (w.x & wb) xm |= bit;
            if (w.z & wb) zm |= bit;
            if ((w.x & wb) && (w.z & wb)) ny++;
        }
        /* P|k> = phase |k ^ xm>; Y = iXZ: phase i^ny (-1)^{popcount(k & zm)} */
        static const cplx ipow[4] = { 1, I, -1, -I };
        cplx iy = ipow[ny & 3];
        for (size_t k = 0; k < d; k++) {
            double sgn = (__builtin_popcountll(k & zm) & 1) ? -1 : 1;
            out[(k ^ xm) * d + k] += w.coeff * iy * sgn;
        }
    }
}

/* matrix(op, wires=n): the dense 2^n x 2^n matrix (complex array) */
Value bi_matrix(VM *vm, Args *a)
{
    Value o = a->v[0];
    if (o.t != T_OP && is_callable(o)) return matrix_of_callable(vm, a);
    if (o.t != T_OP)
        return vm_error(vm, a->site,
                        "matrix() needs an operator or a function that applies gates, not %s",
                        type_name(o));
    if (a->n > 1)
        return vm_error(vm, a->site,
                        "matrix(op) takes one operator (arguments are for matrix(f, args...))");
    ObjOp *p = AS_OP(o);
    if (p->kind == OPK_CHAN)
        return vm_error(vm, a->site,
                        "matrix(): %s is a noise channel; it has Kraus matrices, not one matrix",
                        dm_channel_info((DmChannel)p->chan)->name);
    Value *wk = arg_kw(a, "wires");
    int maxw = 0;
    if (p->kind == OPK_GATE) {
        for (int i = 0; i < p->op.nwires; i++)
            if (p->op.wires[i] + 1 > maxw) maxw = p->op.wires[i] + 1;
        for (int i = 0; i < p->op.nctrl; i++)
            if (p->op.ctrl[i] + 1 > maxw) maxw = p->op.ctrl[i] + 1;
    } else {
        for (int i = 0; i < p->nterms; i++) {
            uint64_t m = p->terms[i].x | p->terms[i].z | (p->idw ? p->idw[i] : 0);
            if (m) {
                int hi = 64 - __builtin_clzll(m);
                if (hi > maxw) maxw = hi;
            }
            for (int j = 0; p->terms[i].kind != SVB_NONE && j < p->terms[i].k; j++)
                if (p->terms[i].wires[j] + 1 > maxw) maxw = p->terms[i].wires[j] + 1;
        }
    }
    int n = maxw ? maxw : 1;
    if (wk) {
        if (wk->t != T_NUM || wk->n != floor(wk->n) || wk->n < 1)
            return vm_error(vm, a->site, "matrix(): wires must be a positive integer");
        n = (int)wk->n;
        if (n < maxw)
            return vm_error(vm, a->site, "matrix(): the operator acts on wire %d, outside wires=%d",
                            maxw - 1, n);
    }
    if (n > 13)
        return vm_error(vm, a->site, "matrix(): %d wires make a %gx%g matrix; at most 13 wires", n,
                        ldexp(1, n), ldexp(1, n));
    size_t d = (size_t)1 << n;
    size_t shape[2] = { d, d };
    char err[AR_ERRLEN];
    Array *m = ar_zeros(AR_C128, 2, shape, err);
    if (!m) return vm_error(vm, a->site, "%s", err);
    cplx *out = ar_c128(m);
    bool blocks = false;
    for (int t = 0; p->kind == OPK_OBS && t < p->nterms; t++)
        blocks |= p->terms[t].kind != SVB_NONE;
    if (p->kind == OPK_OBS && blocks) {
        if (n > SV_MAX_DENSE) {
            ar_free(m);
            return vm_error(vm, a->site,
                            "matrix(): an observable with Hermitian or Projector factors on %d "
                            "wires (at most %d)",
                            n, SV_MAX_DENSE);
        }
        int ws[SV_MAX_DENSE];
        for (int i = 0; i < n; i++) ws[i] = i;
        char e2[256];
        if (sv_obs_matrix(p->terms, p->nterms, ws, n, out, e2, sizeof e2) != 0) {
            ar_free(m);
            return vm_error(vm, a->site, "matrix(): %s", e2);
        }
    } else if (p->kind == OPK_OBS) {
        pauli_sum_matrix(p, n, out);
    } else {
        SvState s;
        if (sv_init(&s, n) != 0) {
            ar_free(m);
            return vm_error(vm, a->site, "matrix(): out of memory");
        }
        for (size_t col = 0; col < d; col++) {
            memset(s.amp, 0, d * sizeof(cplx));
            s.amp[col] = 1;
            if (sv_apply(&s, &p->op, err, sizeof err) != 0) {
                sv_free(&s);
                ar_free(m);
                return vm_error(vm, a->site, "%s", err);
            }
            for (size_t row = 0; row < d; row++) out[row * d + col] = s.amp[row];
        }
        sv_free(&s);
    }
    return arr_wrap(m);
}

/* The unitary of the gates of a circuit on n wires (a complex array). */
static Value unitary_of(VM *vm, const QasmCircuit *c, int n, const char *who, const Node *site)
{
    if (n > 13)
        return vm_error(vm, site, "%s: %d wires make a %gx%g matrix; at most 13 wires", who, n,
                        ldexp(1, n), ldexp(1, n));
    for (size_t i = 0; i < c->nops; i++)
        if (c->ops[i].kind != QASM_GATE && c->ops[i].kind != QASM_GPHASE)
            return vm_error(vm, site, "%s: the circuit %s, so it has no matrix", who,
                            c->ops[i].kind == QASM_CHANNEL ? "applies a noise channel"
                                                           : "measures or resets mid-circuit");
    size_t d = (size_t)1 << n, shape[2] = { d, d };
    char err[AR_ERRLEN];
    Array *m = ar_zeros(AR_C128, 2, shape, err);
    if (!m) return vm_error(vm, site, "%s", err);
    cplx *out = ar_c128(m);
    SvState s;
    if (sv_init(&s, n) != 0) {
        ar_free(m);
        return vm_error(vm, site, "%s: out of memory", who);
    }
    char e2[256];
    for (size_t col = 0; col < d; col++) {
        memset(s.amp, 0, d * sizeof(cplx));
        s.amp[col] = 1;
        cplx ph = 1;
        for (size_t i = 0; i < c->nops; i++) {
            if (c->ops[i].kind == QASM_GPHASE) {
                ph *= cexp(I * c->ops[i].params[0]);
                continue;
            }
            SvOp op;
            qasm_svop(&c->ops[i], &op);
            if (sv_apply(&s, &op, e2, sizeof e2) != 0) {
                sv_free(&s);
                ar_free(m);
                return vm_error_from(vm, site, who, e2);
            }
        }
        for (size_t row = 0; row < d; row++) out[row * d + col] = ph * s.amp[row];
    }
    sv_free(&s);
    return arr_wrap(m);
}

/* matrix(f, args...): a qfn's circuit on its device's wires, or the gates a
   function (a template, adjoint(f), a circuit) applies, on the fewest wires
   that hold them (or wires=n). */
static Value matrix_of_callable(VM *vm, Args *a)
{
    Value f = a->v[0];
    Value *wk = arg_kw(a, "wires");
    int n = -1;
    if (wk) {
        if (wk->t != T_NUM || wk->n != floor(wk->n) || wk->n < 1)
            return vm_error(vm, a->site, "matrix(): wires must be a positive integer");
        n = (int)wk->n;
    }
    if (f.t == T_FUNC && AS_FUNC(f)->p->is_qfn && AS_FUNC(f)->device.t == T_DEVICE) {
        QRecord rec;
        Value r = qrt_record(vm, f, a->n - 1, a->v + 1, a->site, &rec);
        if (IS_EXC(r)) {
            qrt_record_free(&rec);
            return r;
        }
        decref(r);
        if (n < 0) n = rec.wires;
        Value m = unitary_of(vm, &rec.c, n, "matrix()", a->site);
        qrt_record_free(&rec);
        return m;
    }
    /* collect the gates with a device-less context */
    QCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    QasmCircuit cap;
    qasm_init(&cap, 0, 0);
    ctx.capture = &cap;
    QCtx *saved = vm->q;
    vm->q = &ctx;
    Value r = vm_call(vm, f, a->n - 1, a->v + 1, a->site);
    if (!IS_EXC(r) && r.t == T_OP) {
        Value x = op_stmt(vm, r, a->site);
        decref(r);
        r = x;
    }
    vm->q = saved;
    if (IS_EXC(r)) {
        qasm_free(&cap);
        return r;
    }
    decref(r);
    int maxw = 0;
    for (size_t i = 0; i < cap.npool; i++)
        if (cap.pool[i] + 1 > maxw) maxw = cap.pool[i] + 1;
    if (n < 0) n = maxw ? maxw : 1;
    if (n < maxw) {
        qasm_free(&cap);
        return vm_error(vm, a->site, "matrix(): the gates act on wire %d, outside wires=%d",
                        maxw - 1, n);
    }
    Value m = unitary_of(vm, &cap, n, "matrix()", a->site);
    qasm_free(&cap);
    return m;
}

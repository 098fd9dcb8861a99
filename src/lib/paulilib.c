/* paulilib.c — pauli_sum(text): a Hamiltonian from a Pauli sum written as
 * text (lang/quantum.md, "Hamiltonians from text"), for molecules computed
 * elsewhere (OpenFermion's QubitOperator strings, PennyLane-style sums,
 * qh's own printed form). The text is read by the quantum room's parser
 * (pauli_text.h); the observable is then built as the program would build
 * it, from PauliX/PauliY/PauliZ/Identity values with @, * and +, so it is
 * the same value in every respect. Knows values, the dispatcher and the
 * parser; nothing of how observables are stored. */
#include "paulilib.h"
#include "builtins.h"
#include "pauli_text.h"
#include "types.h"

#include <math.h>
#include <stdio.h>

static Value pauli_factor(VM *vm, const PtFactor *f, const Node *site)
{
    const char *name = f->pauli == 'X'   ? "PauliX"
                       : f->pauli == 'Y' ? "PauliY"
                       : f->pauli == 'Z' ? "PauliZ"
                                         : "Identity";
    Value w = v_num((double)f->wire);
    return vm_call(vm, builtin_named(name), 1, &w, (Node *)site);
}

/* coeff * (f1 @ f2 @ ...), Identity(0) for a term without factors */
static Value pauli_term(VM *vm, const PtSum *s, const PtTerm *t, const Node *site)
{
    Value w = v_nil();
    if (t->n == 0) {
        PtFactor id = { 'I', 0 };
        w = pauli_factor(vm, &id, site);
    }
    for (int i = 0; i < t->n && !IS_EXC(w); i++) {
        Value f = pauli_factor(vm, &s->f[t->first + i], site);
        if (IS_EXC(f) || i == 0) {
            w = f;
            continue;
        }
        Value p = tp_binop(vm, OP_MATMUL, w, f, site);
        decref(w);
        decref(f);
        w = p;
    }
    if (IS_EXC(w)) return w;
    Value r = tp_binop(vm, OP_MUL, v_num(t->re), w, site);
    decref(w);
    return r;
}

static Value bi_pauli_sum(VM *vm, Args *a)
{
    Value v = a->v[0];
    if (v.t != T_STR)
        return vm_error(vm, a->site, "pauli_sum() needs a string, not %s", type_name(v));
    PtSum s;
    char err[256];
    if (pt_parse(AS_STR(v)->s, AS_STR(v)->len, &s, err, sizeof err))
        return vm_error(vm, a->site, "pauli_sum(): %s", err);
    Value h = v_nil();
    for (int i = 0; i < s.nt; i++) {
        const PtTerm *t = &s.t[i];
        if (t->im != 0 || !isfinite(t->re)) {
            double re = t->re, im = t->im;
            decref(h);
            pt_free(&s);
            if (im != 0)
                return vm_error(vm, a->site,
                                "pauli_sum(): term %d has the complex coefficient (%g%+gj): a "
                                "Hamiltonian's coefficients are real",
                                i + 1, re, im);
            return vm_error(vm, a->site, "pauli_sum(): term %d's coefficient is not finite", i + 1);
        }
        Value x = pauli_term(vm, &s, t, a->site);
        if (IS_EXC(x) || i == 0) {
            h = x;
            if (IS_EXC(x)) break;
            continue;
        }
        Value y = tp_binop(vm, OP_ADD, h, x, a->site);
        decref(h);
        decref(x);
        h = y;
        if (IS_EXC(h)) break;
    }
    pt_free(&s);
    return h;
}

static const BuiltinDef builtins_pauli[] = {
    { "pauli_sum", bi_pauli_sum, 1, 1, 0, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

void paulilib_open(void) { builtins_add(builtins_pauli); }

/* func.c — function and module objects: their making, freeing, clearing
 * (breaking the cycle a function makes through its module's globals),
 * traversal, deep copies for tasks, printing, and module members.
 * Knows values, the AST and vm.h; nothing of calls or evaluation. */
#include "func.h"
#include "qh_assert.h"
#include "builtins.h"
#include "serial.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- functions */

ObjFunc *func_new(FnProto *p, ObjModule *mod)
{
    qh_assert(p && mod && p->nparams >= 0 && p->nupvals >= 0 && p->nlocals >= p->nparams);
    ObjFunc *f = (ObjFunc *)obj_alloc(sizeof(ObjFunc), T_FUNC);
    f->p = p;
    f->mod = mod;
    incref(v_obj(&mod->h));
    f->device = v_nil();
    return f;
}

void func_free(Obj *o)
{
    ObjFunc *f = (ObjFunc *)o;
    if (f->defaults) {
        for (int i = 0; i < f->p->nparams; i++) decref(f->defaults[i]);
        free(f->defaults);
    }
    if (f->up) {
        for (int i = 0; i < f->p->nupvals; i++)
            if (f->up[i]) decref(v_obj(&f->up[i]->h));
        free(f->up);
    }
    decref(f->device);
    if (f->mod) decref(v_obj(&f->mod->h));
    obj_dealloc(o); /* a tracked kind: its header goes too */
}

void func_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    ObjFunc *f = AS_FUNC(v);
    buf_printf(b, "<%s %s>", f->p->is_qfn ? "qfn" : "fn", f->p->name);
}

/* a function copied into a task: same code, copied defaults, cells, module */
Value func_copy(Value v, CopyCtx *cc)
{
    ObjFunc *f = AS_FUNC(v);
    ObjFunc *n = (ObjFunc *)obj_alloc(sizeof(ObjFunc), T_FUNC);
    copy_memo_put(cc, f, n);
    n->p = f->p;
    n->device = v_nil();
    if (f->defaults) {
        n->defaults = xcalloc((size_t)f->p->nparams, sizeof(Value)); /* nil until copied */
        for (int i = 0; i < f->p->nparams; i++)
            n->defaults[i] = value_copy_deep(f->defaults[i], cc);
    }
    if (f->p->nupvals) {
        n->up = xcalloc((size_t)f->p->nupvals, sizeof(ObjCell *));
        for (int i = 0; i < f->p->nupvals; i++) {
            Value c = value_copy_deep(v_obj(&f->up[i]->h), cc);
            qh_assert(c.t == T_CELL); /* a cell copies to a cell */
            n->up[i] = (ObjCell *)c.o;
        }
    }
    n->device = value_copy_deep(f->device, cc);
    Value mv = value_copy_deep(v_obj(&f->mod->h), cc);
    qh_assert(mv.t == T_MODULE && ((ObjModule *)mv.o)->info == f->mod->info); /* the same code */
    n->mod = (ObjModule *)mv.o;
    if (n->mod->partial) module_copy_reads(f->mod, n->mod, f->p, cc);
    return v_obj(&n->h);
}

void module_copy_reads(ObjModule *m, ObjModule *copy, const FnProto *p, CopyCtx *cc)
{
    for (int k = 0; k < p->nglobal_reads; k++) {
        int g = p->global_reads[k];
        if (g >= m->nglobals || g >= copy->nglobals || copy->globals[g].t != T_UNBOUND) continue;
        Value v = m->globals[g];
        if (v.t == T_UNBOUND) continue;
        copy->globals[g] = v_nil(); /* taken: a function it holds may read it too */
        copy->globals[g] = value_copy_deep(v, cc);
    }
}

/* drops what a function holds: its defaults, cells, device and module */
void func_clear(Obj *o)
{
    ObjFunc *f = (ObjFunc *)o;
    if (f->defaults)
        for (int i = 0; i < f->p->nparams; i++) {
            Value v = f->defaults[i];
            f->defaults[i] = v_unbound();
            decref(v);
        }
    if (f->up)
        for (int i = 0; i < f->p->nupvals; i++) {
            ObjCell *c = f->up[i];
            f->up[i] = NULL;
            if (c) decref(v_obj(&c->h));
        }
    Value d = f->device;
    f->device = v_nil();
    decref(d);
    ObjModule *m = f->mod;
    f->mod = NULL;
    if (m) decref(v_obj(&m->h));
}

void func_traverse(Obj *o, void (*visit)(Value child, void *ud), void *ud)
{
    ObjFunc *f = (ObjFunc *)o;
    for (int k = 0; f->up && k < f->p->nupvals; k++)
        if (f->up[k]) visit(v_obj(&f->up[k]->h), ud);
    for (int k = 0; f->defaults && k < f->p->nparams; k++) visit(f->defaults[k], ud);
    visit(f->device, ud);
    if (f->mod) visit(v_obj(&f->mod->h), ud);
}

/* ---------------------------------------------------------------- modules */

static void module_free(Obj *o)
{
    ObjModule *m = (ObjModule *)o;
    for (int i = 0; i < m->nglobals; i++) decref(m->globals[i]);
    free(m->globals);
    obj_dealloc(o);
}

static void module_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    buf_printf(b, "<module %s>", AS_MOD(v)->name);
}

/* empties the globals (a task's copy, or at exit): breaks the cycles its
 * functions make through it */
static void module_clear(Obj *o)
{
    ObjModule *m = (ObjModule *)o;
    if (!m->globals) return;
    for (int i = 0; i < m->nglobals; i++) {
        Value v = m->globals[i];
        m->globals[i] = v_unbound();
        decref(v);
    }
}

static void module_traverse(Obj *o, void (*visit)(Value child, void *ud), void *ud)
{
    ObjModule *m = (ObjModule *)o;
    for (int k = 0; k < m->nglobals; k++) visit(m->globals[k], ud);
}

/* a copy of m with every global unbound, noted in cc */
static ObjModule *module_shell(ObjModule *m, bool partial, CopyCtx *cc)
{
    ObjModule *n = (ObjModule *)obj_alloc(sizeof(ObjModule), T_MODULE);
    copy_memo_put(cc, m, n);
    copy_note_module(cc, &n->h);
    n->info = m->info;
    n->name = m->name;
    n->loaded = true;
    n->partial = partial;
    n->nglobals = m->nglobals;
    n->globals = xmalloc((size_t)(m->nglobals + 1) * sizeof(Value));
    for (int i = 0; i < m->nglobals; i++) n->globals[i] = v_unbound();
    return n;
}

ObjModule *module_copy_some(ObjModule *m, const bool *want, CopyCtx *cc)
{
    ObjModule *n =
        module_shell(m, want != NULL, cc); /* partial: filled as its functions are copied */
    for (int i = 0; i < m->nglobals; i++) {
        Value g = m->globals[i];
        if (g.t == T_UNBOUND || (want && !want[i]) || n->globals[i].t != T_UNBOUND) continue;
        n->globals[i] = v_nil(); /* taken (see module_copy_reads) */
        n->globals[i] = value_copy_deep(g, cc);
    }
    return n;
}

ObjModule *module_copy_partial(ObjModule *m, CopyCtx *cc) { return module_shell(m, true, cc); }

/* a module copied into a task: its globals copied deep (shared by memo) */
static Value module_copy(Value v, CopyCtx *cc)
{
    return v_obj(&module_copy_some(AS_MOD(v), NULL, cc)->h);
}

ObjModule *module_new(ModInfo *info, const char *name)
{
    ObjModule *m = (ObjModule *)obj_alloc(sizeof(ObjModule), T_MODULE);
    m->info = info;
    m->name = name;
    m->nglobals = 0;
    m->globals = NULL;
    module_grow(m);
    return m;
}

void module_grow(ObjModule *m)
{
    int n = m->info->nglobals;
    if (n <= m->nglobals) return;
    m->globals = xrealloc(m->globals, (size_t)(n + 1) * sizeof(Value));
    for (int i = m->nglobals; i < n; i++) {
        int bi = m->info->gbuiltin[i];
        m->globals[i] = bi >= 0 ? builtin_value(bi) : v_unbound();
    }
    m->nglobals = n;
}

static Value module_member(VM *vm, Value obj, const ObjStr *name, const Node *site)
{
    ObjModule *m = AS_MOD(obj);
    Value slot;
    if (m->info->gindex && dict_get(m->info->gindex, v_obj((Obj *)&name->h), &slot) &&
        (int)slot.n < m->nglobals && m->globals[(int)slot.n].t != T_UNBOUND) {
        Value r = m->globals[(int)slot.n];
        incref(r);
        return r;
    }
    return vm_error(vm, site, "module '%s' has no member '%s'", m->name, name->s);
}

/* ---------------------------------------------------------------- other processes */

static int code_module(const SerCode *code, const ModInfo *info)
{
    for (int i = 0; code && i < code->nmods; i++)
        if (code->mods[i] == info) return i;
    return -1;
}

static ModInfo *code_info(SerCtx *sc, uint32_t id)
{
    const SerCode *code = sc->code;
    if (!code || id >= (uint32_t)code->nmods) {
        des_fail(sc, "module");
        return NULL;
    }
    return code->mods[id];
}

static bool module_ser(Value v, SerCtx *sc)
{
    ObjModule *m = AS_MOD(v);
    int id = sc->local ? 0 : code_module(sc->code, m->info);
    if (sc->local) ser_u64(sc, (uint64_t)(uintptr_t)m->info); /* local bytes: the code itself */
    if (id < 0)
        return ser_fail(sc,
                        "module '%s' was loaded after the start and cannot be sent to another rank",
                        m->name);
    ser_u32(sc, (uint32_t)id);
    ser_u8(sc, (unsigned)m->loaded | (unsigned)m->partial << 1);
    ser_u32(sc, (uint32_t)m->nglobals);
    for (int i = 0; i < m->nglobals; i++)
        if (!ser_value(sc, m->globals[i])) return false;
    return true;
}

/* The module is noted in sc->memo's module list (copy_note_module): the
 * reader breaks the cycles of what it read as a task's copies are. */
static Value module_deser(SerCtx *sc, ValType t, size_t id)
{
    (void)t;
    uint32_t mid, n;
    uint8_t flags;
    if (!des_u32(sc, &mid) || !des_u8(sc, &flags) || !des_u32(sc, &n)) return v_exc();
    ModInfo *info = code_info(sc, mid);
    if (!info) return v_exc();
    if ((int)n != info->nglobals) return des_fail(sc, "globals");
    ObjModule *m = (ObjModule *)obj_alloc(sizeof(ObjModule), T_MODULE);
    m->info = info;
    m->name = ((const SerCode *)sc->code)->names[mid];
    m->loaded = flags & 1;
    m->partial = (flags & 2) != 0;
    m->nglobals = (int)n;
    m->globals = malloc(((size_t)n + 1) * sizeof(Value));
    for (uint32_t i = 0; i < n; i++) m->globals[i] = v_unbound();
    des_note(sc, id, &m->h);
    copy_note_module(&sc->memo, &m->h);
    Value mv = v_obj(&m->h);
    for (uint32_t i = 0; i < n; i++) {
        Value g = des_value(sc);
        if (IS_EXC(g)) {
            decref(mv);
            return g;
        }
        m->globals[i] = g;
    }
    return mv;
}

bool func_ser(Value v, SerCtx *sc)
{
    ObjFunc *f = AS_FUNC(v);
    int mid = sc->local ? -1 : code_module(sc->code, f->p->mod);
    int pi = -1;
    const SerCode *code = sc->code;
    if (sc->local) { /* local bytes: the code itself */
        ser_u64(sc, (uint64_t)(uintptr_t)f->p);
        mid = pi = 0;
    }
    for (int i = 0; !sc->local && mid >= 0 && i < code->nprotos[mid]; i++)
        if (f->p->mod->protos[i] == f->p) {
            pi = i;
            break;
        }
    if (pi < 0)
        return ser_fail(sc,
                        "function %s() was defined outside the program's files and cannot be sent "
                        "to another rank",
                        f->p->name);
    ser_u32(sc, (uint32_t)mid);
    ser_u32(sc, (uint32_t)pi);
    ser_u8(sc, f->defaults != NULL);
    if (!ser_value(sc, v_obj(&f->mod->h))) return false;
    for (int i = 0; f->defaults && i < f->p->nparams; i++)
        if (!ser_value(sc, f->defaults[i])) return false;
    for (int i = 0; i < f->p->nupvals; i++)
        if (!ser_value(sc, v_obj(&f->up[i]->h))) return false;
    return ser_value(sc, f->device);
}

Value func_deser(SerCtx *sc, ValType t, size_t id)
{
    (void)t;
    uint32_t mid, pi;
    uint8_t hasdef;
    if (!des_u32(sc, &mid) || !des_u32(sc, &pi) || !des_u8(sc, &hasdef)) return v_exc();
    ModInfo *info = code_info(sc, mid);
    if (!info) return v_exc();
    if (pi >= (uint32_t)((const SerCode *)sc->code)->nprotos[mid]) return des_fail(sc, "function");
    FnProto *p = info->protos[pi];
    ObjFunc *f = (ObjFunc *)obj_alloc(sizeof(ObjFunc), T_FUNC);
    f->p = p;
    f->device = v_nil();
    des_note(sc, id, &f->h);
    Value fv = v_obj(&f->h);
    Value mv = des_value(sc);
    if (IS_EXC(mv)) {
        decref(fv);
        return mv;
    }
    if (mv.t != T_MODULE || AS_MOD(mv)->info != info) {
        decref(mv);
        decref(fv);
        return des_fail(sc, "module of a function");
    }
    f->mod = AS_MOD(mv);
    if (hasdef) {
        f->defaults = malloc((size_t)(p->nparams ? p->nparams : 1) * sizeof(Value));
        for (int i = 0; i < p->nparams; i++) f->defaults[i] = v_unbound();
        for (int i = 0; i < p->nparams; i++) {
            Value d = des_value(sc);
            if (IS_EXC(d)) {
                decref(fv);
                return d;
            }
            f->defaults[i] = d;
        }
    }
    if (p->nupvals) {
        f->up = calloc((size_t)p->nupvals, sizeof(ObjCell *));
        for (int i = 0; i < p->nupvals; i++) {
            Value c = des_value(sc);
            if (IS_EXC(c)) {
                decref(fv);
                return c;
            }
            if (c.t != T_CELL) {
                decref(c);
                decref(fv);
                return des_fail(sc, "cell");
            }
            f->up[i] = (ObjCell *)c.o;
        }
    }
    Value d = des_value(sc);
    if (IS_EXC(d)) {
        decref(fv);
        return d;
    }
    f->device = d;
    return fv;
}

static const TypeOps module_ops = {
    .name = "module",
    .flags = TF_CODE | TF_TRACK,
    .free = module_free,
    .clear = module_clear,
    .traverse = module_traverse,
    .copy = module_copy,
    .ser = module_ser,
    .deser = module_deser,
    .repr = module_repr,
    .member = module_member,
};

void func_open(void) { type_register(T_MODULE, &module_ops); }

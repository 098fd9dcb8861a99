/* iolib.c — the data builtins (lang/builtins.md, "Files and data"): text
 * files, NumPy .npy arrays, CSV tables and JSON, on the I/O room (io.h).
 * Converts between values and the room's IoArray / IoJson; the room does
 * the files and formats. The file builtins are BI_IMPURE, so the analysis
 * keeps them out of quantum functions and tasks (as print). Knows values,
 * arrays and io.h; nothing of the evaluator or the executor. */
#include "iolib.h"
#include "qh_assert.h"
#include "array.h"
#include "arrayval.h"
#include "builtins.h"
#include "io.h"
#include "types.h"
#include "vm.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IO_ERRLEN 600

static bool path_arg(VM *vm, Args *a, const char **path)
{
    if (a->v[0].t != T_STR) {
        vm_error(vm, a->site, "%s() needs a file path string, not %s", a->def->name,
                 type_name(a->v[0]));
        return false;
    }
    ObjStr *s = AS_STR(a->v[0]);
    if (memchr(s->s, 0, s->len)) { /* the OS would see a shorter name: Python refuses it too */
        vm_error(vm, a->site, "%s(): the path has an embedded null byte", a->def->name);
        return false;
    }
    *path = s->s;
    return true;
}

/* ---- the script's folder -------------------------------------------------- */

/* Why: script_dir(): a script names the files next to itself whatever the current directory
   (Python's Path(__file__).resolve().parent); the paths of the file builtins stay relative to
   the current directory, as Python's open(). The folder of the file whose code calls it (a
   module's own), absolute; code with no file (the REPL, -e, stdin) gets the current directory. */
static Value bi_script_dir(VM *vm, Args *a)
{
    const Source *src = vm->mod && vm->mod->info ? vm->mod->info->src : NULL;
    char *dir;
    if (src && src->path) {
        const char *slash = strrchr(src->path, '/');
        size_t n = slash ? (slash == src->path ? 1 : (size_t)(slash - src->path)) : 0;
        char *d = n ? strndup(src->path, n) : strdup(".");
        dir = d ? realpath(d, NULL) : NULL;
        free(d);
    } else
        dir = getcwd(NULL, 0);
    if (!dir) return vm_error(vm, a->site, "script_dir(): %s", strerror(errno));
    Value v = v_str(dir);
    free(dir);
    return v;
}

/* ---- text ----------------------------------------------------------------- */

static Value bi_read_text(VM *vm, Args *a)
{
    const char *path;
    if (!path_arg(vm, a, &path)) return v_exc();
    char err[IO_ERRLEN];
    size_t n;
    char *t = io_read_file(path, &n, err, sizeof err);
    if (!t) return vm_error(vm, a->site, "read_text(): %s", err);
    Value s = v_strn(t, n);
    free(t);
    return s;
}

static Value bi_read_lines(VM *vm, Args *a)
{
    const char *path;
    if (!path_arg(vm, a, &path)) return v_exc();
    char err[IO_ERRLEN];
    size_t n;
    char *t = io_read_file(path, &n, err, sizeof err);
    if (!t) return vm_error(vm, a->site, "read_lines(): %s", err);
    size_t k = io_split_lines(t, n, NULL, NULL);
    const char **st = malloc((k + 1) * sizeof *st);
    size_t *ln = malloc((k + 1) * sizeof *ln);
    if (!st || !ln) {
        free(st);
        free(ln);
        free(t);
        return vm_error(vm, a->site, "read_lines(): out of memory");
    }
    io_split_lines(t, n, st, ln);
    ObjList *l = list_new(k);
    for (size_t i = 0; i < k; i++) list_push(l, v_strn(st[i], ln[i]));
    free(st);
    free(ln);
    free(t);
    return v_obj(&l->h);
}

static Value bi_write_text(VM *vm, Args *a)
{
    const char *path;
    if (!path_arg(vm, a, &path)) return v_exc();
    if (a->v[1].t != T_STR)
        return vm_error(vm, a->site,
                        "write_text() writes a string, not %s (use str() or json_dump())",
                        type_name(a->v[1]));
    Value *ap = arg_kw(a, "append");
    bool append = false, e = false;
    if (ap) append = tp_truthy(vm, *ap, a->site, &e);
    if (e) return v_exc();
    ObjStr *s = AS_STR(a->v[1]);
    char err[IO_ERRLEN];
    if (io_write_file(path, s->s, s->len, append, err, sizeof err) != 0)
        return vm_error(vm, a->site, "write_text(): %s", err);
    return v_nil();
}

/* ---- arrays --------------------------------------------------------------- */

/* An IoArray as a value: a number (0-d), or an array. Frees x's data. */
static Value from_ioarray(VM *vm, IoArray *x, const Node *site, const char *who, const char *path)
{
    if (x->ndim == 0) {
        Value v = x->is_complex ? v_complex(x->data[0], x->data[1]) : v_num(x->data[0]);
        io_array_free(x);
        return v;
    }
    char err[AR_ERRLEN];
    Array *r = ar_from_data(x->is_complex ? AR_C128 : AR_F64, x->ndim, x->shape, x->data, err);
    io_array_free(x);
    if (!r) return vm_error(vm, site, "%s(): '%s': %s", who, path, err); /* errors name the file */
    return arr_wrap(r);
}

static Value bi_load(VM *vm, Args *a)
{
    const char *path;
    if (!path_arg(vm, a, &path)) return v_exc();
    IoArray x;
    char err[IO_ERRLEN];
    if (io_npy_read(path, &x, err, sizeof err) != 0)
        return vm_error(vm, a->site, "load(): %s", err);
    return from_ioarray(vm, &x, a->site, "load", path);
}

static Value bi_save(VM *vm, Args *a)
{
    const char *path;
    if (!path_arg(vm, a, &path)) return v_exc();
    Value v = a->v[1];
    IoArray x;
    memset(&x, 0, sizeof x);
    Value tmp = v_nil();
    if (v.t == T_LIST) {
        tmp = vm_call(vm, builtin_named("array"), 1, &v, a->site);
        if (IS_EXC(tmp)) return tmp;
        v = tmp;
    }
    double one[2];
    if (v.t == T_NUM || v.t == T_COMPLEX || v.t == T_BOOL) {
        x.ndim = 0;
        x.n = 1;
        x.is_complex = v.t == T_COMPLEX;
        one[0] = v.t == T_NUM ? v.n : v.t == T_BOOL ? v.b : AS_CPLX(v)->re;
        one[1] = v.t == T_COMPLEX ? AS_CPLX(v)->im : 0;
        x.data = one;
    } else if (v.t == T_ARRAY) {
        Array *ar = AS_ARR(v);
        x.ndim = ar_ndim(ar);
        x.n = ar_size(ar);
        x.is_complex = ar_is_complex(ar);
        for (int i = 0; i < x.ndim; i++) x.shape[i] = ar_shape(ar)[i];
        x.data = malloc((x.is_complex ? 2 : 1) * (x.n ? x.n : 1) * sizeof(double));
        if (!x.data) {
            decref(tmp);
            return vm_error(vm, a->site, "save(): '%s': out of memory", path);
        }
        for (size_t i = 0; i < x.n; i++) {
            ArScalar s = ar_item(ar, i);
            if (x.is_complex) {
                x.data[2 * i] = s.re;
                x.data[2 * i + 1] = s.is_complex ? s.im : 0;
            } else
                x.data[i] = s.re;
        }
    } else {
        return vm_error(vm, a->site,
                        "save() writes an array, a list of numbers or a number, not %s",
                        type_name(v));
    }
    char err[IO_ERRLEN];
    int rc = io_npy_write(path, &x, err, sizeof err);
    if (x.data != one) free(x.data);
    decref(tmp);
    if (rc != 0) return vm_error(vm, a->site, "save(): %s", err);
    return v_nil();
}

/* Why: optional parameters may come by position or by name, as in Python
   (load_csv(path, ";", 1) or load_csv(path, delimiter=";", skip=1)).
   *out: the value, or NULL when neither is given. */
static bool opt_arg(VM *vm, Args *a, int i, const char *name, Value **out)
{
    Value *k = arg_kw(a, name);
    *out = k;
    if (a->n > i) {
        if (k) {
            vm_error(vm, a->site, "%s() got multiple values for argument '%s'", a->def->name, name);
            return false;
        }
        *out = &a->v[i];
    }
    return true;
}

static Value bi_load_csv(VM *vm, Args *a)
{
    const char *path;
    if (!path_arg(vm, a, &path)) return v_exc();
    Value *dk, *sk;
    if (!opt_arg(vm, a, 1, "delimiter", &dk) || !opt_arg(vm, a, 2, "skip", &sk)) return v_exc();
    char delim = ',';
    if (dk && dk->t != T_NIL) {
        if (dk->t != T_STR || AS_STR(*dk)->len != 1)
            return vm_error(
                vm, a->site,
                "load_csv(): delimiter must be a one-character string (\" \" for runs of blanks)");
        delim = AS_STR(*dk)->s[0];
    }
    long skip = 0;
    if (sk && sk->t != T_NIL) {
        if (sk->t != T_NUM || sk->n != floor(sk->n) || sk->n < 0 || sk->n > 1e9)
            return vm_error(vm, a->site, "load_csv(): skip must be a whole number of lines");
        skip = (long)sk->n;
    }
    IoArray x;
    char err[IO_ERRLEN];
    if (io_csv_read(path, delim, skip, &x, err, sizeof err) != 0)
        return vm_error(vm, a->site, "load_csv(): %s", err);
    return from_ioarray(vm, &x, a->site, "load_csv", path);
}

/* ---- JSON ----------------------------------------------------------------- */

static Value from_json(const IoJson *j)
{
    switch (j->kind) {
    case IOJ_NULL: return v_nil();
    case IOJ_BOOL: return v_bool(j->b);
    case IOJ_NUMBER: return v_num(j->num);
    case IOJ_STRING: return v_strn(j->str, j->len);
    case IOJ_ARRAY: {
        ObjList *l = list_new(j->n);
        for (size_t i = 0; i < j->n; i++) list_push(l, from_json(&j->items[i]));
        return v_obj(&l->h);
    }
    case IOJ_OBJECT: {
        ObjDict *d = dict_new_sized(j->n);
        for (size_t i = 0; i < j->n; i++) {
            Value k = v_strn(j->keys[i], j->keylens[i]), v = from_json(&j->items[i]);
            dict_set(d, k, v);
            decref(k);
            decref(v);
        }
        return v_obj(&d->h);
    }
    }
    qh_unreachable();
}

static Value bi_json_parse(VM *vm, Args *a)
{
    if (a->v[0].t != T_STR)
        return vm_error(vm, a->site, "json_parse() needs a string, not %s", type_name(a->v[0]));
    ObjStr *s = AS_STR(a->v[0]);
    char err[IO_ERRLEN];
    IoJson *j = io_json_parse(s->s, s->len, err, sizeof err);
    if (!j) return vm_error(vm, a->site, "json_parse(): %s", err);
    Value v = from_json(j);
    io_json_free(j);
    return v;
}

/* The tree of a value (nodes on the heap, strings borrowed from v). */
typedef struct JB {
    VM *vm;
    const Node *site;
    char **owned;
    size_t nowned, capowned;
} JB;

static void jfree(IoJson *j)
{
    if (j->kind == IOJ_ARRAY || j->kind == IOJ_OBJECT) {
        for (size_t i = 0; i < j->n; i++) jfree(&j->items[i]);
        free(j->items);
        free(j->keys);
        free(j->keylens);
    }
}

static char *keep(JB *b, char *s)
{
    if (b->nowned == b->capowned) {
        b->capowned = b->capowned ? 2 * b->capowned : 8;
        b->owned = xrealloc(b->owned, b->capowned * sizeof(char *));
    }
    b->owned[b->nowned++] = s;
    return s;
}

static bool to_json(JB *b, Value v, IoJson *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (depth > 500) {
        vm_error(b->vm, b->site,
                 "json_dump(): nested more than 500 deep (a list or dict that holds itself?)");
        return false;
    }
    switch (v.t) {
    case T_NIL: *out = io_json_null(); return true;
    case T_BOOL: *out = io_json_bool(v.b); return true;
    case T_NUM: *out = io_json_number(v.n); return true;
    case T_STR: *out = io_json_string(AS_STR(v)->s, AS_STR(v)->len); return true;
    case T_LIST: {
        ObjList *l = AS_LIST(v);
        out->kind = IOJ_ARRAY;
        out->items = xcalloc(l->len ? l->len : 1, sizeof(IoJson));
        for (size_t i = 0; i < l->len; i++) {
            if (!to_json(b, l->v[i], &out->items[i], depth + 1)) {
                out->n = i + 1;
                return false;
            }
            out->n = i + 1;
        }
        return true;
    }
    case T_DICT: {
        ObjDict *d = AS_DICT(v);
        out->kind = IOJ_OBJECT;
        out->items = xcalloc(d->len ? d->len : 1, sizeof(IoJson));
        out->keys = xcalloc(d->len ? d->len : 1, sizeof(char *));
        out->keylens = xcalloc(d->len ? d->len : 1, sizeof(size_t));
        for (size_t i = 0; i < d->nent; i++) {
            if (!d->ent[i].live) continue;
            Value k = d->ent[i].key;
            size_t at = out->n++;
            if (k.t == T_STR) {
                out->keys[at] = AS_STR(k)->s;
                out->keylens[at] = AS_STR(k)->len;
            } else if (k.t == T_NUM || k.t == T_BOOL) { /* as Python: keys become strings */
                Buf kb;
                buf_init(&kb);
                if (k.t == T_BOOL)
                    buf_puts(&kb, k.b ? "true" : "false");
                else
                    value_repr(&kb, k, false);
                buf_putc(&kb, 0);
                out->keylens[at] = kb.len - 1;
                out->keys[at] = keep(b, kb.p);
            } else {
                vm_error(b->vm, b->site,
                         "json_dump(): dict keys must be strings or numbers, not %s", type_name(k));
                return false;
            }
            if (!to_json(b, d->ent[i].val, &out->items[at], depth + 1)) return false;
        }
        return true;
    }
    case T_ARRAY: {
        Value l = vm_call(b->vm, builtin_named("tolist"), 1, &v, (Node *)b->site);
        if (IS_EXC(l)) return false;
        bool ok = to_json(b, l, out, depth);
        /* the strings of the tree are numbers only: l may go */
        decref(l);
        return ok;
    }
    case T_COMPLEX:
        vm_error(b->vm, b->site,
                 "json_dump(): JSON has no complex numbers (write real() and imag() parts)");
        return false;
    default:
        vm_error(
            b->vm, b->site,
            "json_dump(): cannot write %s as JSON (lists, dicts, numbers, strings, bools, nil)",
            type_name(v));
        return false;
    }
}

static Value bi_json_dump(VM *vm, Args *a)
{
    Value *ik;
    if (!opt_arg(vm, a, 1, "indent", &ik)) return v_exc();
    int indent = -1;
    if (ik && ik->t != T_NIL) {
        if (ik->t != T_NUM || ik->n != floor(ik->n) || ik->n < 0 || ik->n > 64)
            return vm_error(
                vm, a->site,
                "json_dump(): indent must be a whole number of spaces from 0 to 64, or nil");
        indent = (int)ik->n;
    }
    JB b = { vm, a->site, NULL, 0, 0 };
    IoJson root;
    bool ok = to_json(&b, a->v[0], &root, 0);
    Value r = v_exc();
    if (ok) {
        char err[IO_ERRLEN];
        size_t n;
        char *t = io_json_dump(&root, indent, &n, err, sizeof err);
        if (!t)
            r = vm_error(vm, a->site, "json_dump(): %s", err);
        else {
            r = v_strn(t, n);
            free(t);
        }
    }
    jfree(&root);
    for (size_t i = 0; i < b.nowned; i++) free(b.owned[i]);
    free(b.owned);
    return r;
}

static const char *const kw_write[] = { "append", NULL };
static const char *const kw_csv[] = { "delimiter", "skip", NULL };
static const char *const kw_json[] = { "indent", NULL };

static const BuiltinDef builtins_io[] = {
    { "script_dir", bi_script_dir, 0, 0, 0, NULL, 0 },
    { "read_text", bi_read_text, 1, 1, BI_IMPURE, NULL, 0 },
    { "read_lines", bi_read_lines, 1, 1, BI_IMPURE, NULL, 0 },
    { "write_text", bi_write_text, 2, 2, BI_IMPURE, kw_write, 0 },
    { "load", bi_load, 1, 1, BI_IMPURE, NULL, 0 },
    { "save", bi_save, 2, 2, BI_IMPURE, NULL, 0 },
    { "load_csv", bi_load_csv, 1, 3, BI_IMPURE, kw_csv, 0 },
    { "json_parse", bi_json_parse, 1, 1, 0, NULL, 0 },
    { "json_dump", bi_json_dump, 1, 2, 0, kw_json, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

void iolib_open(void) { builtins_add(builtins_io); }

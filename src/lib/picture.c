/* picture.c — showing values: display(v...) hands each value to the host's
 * display (Interp.hooks.show: a notebook shows it as a rich output, a
 * future still running as one that updates itself), or prints it as print
 * does where the host has none (the terminal). And the picture kind: a
 * value with a text (what print and a terminal show) and an SVG drawing
 * (what a notebook shows, save_svg writes): hist(x) of counts or
 * probabilities, plot(ys) / plot(xs, ys) line charts (also of
 * optimize.minimize's history), and draw()'s circuits (circuitlib.c makes
 * them with picture_new). The SVG is src/chart's. Knows values and the
 * dispatcher; nothing of hosts, sockets or the executor. */
#include "picture.h"
#include "arrayval.h"
#include "builtins.h"
#include "chart.h"
#include "io.h"
#include "qh_assert.h"
#include "types.h"
#include "vm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ObjPicture {
    Obj h;
    char *text, *svg;
} ObjPicture;
#define PIC(v) ((ObjPicture *)(v).o)

/* The kind's tag, given at start-up (picture_open). */
static ValType T_PICTURE = T_NTYPES;

static void pic_free(Obj *o)
{
    ObjPicture *p = (ObjPicture *)o;
    free(p->text);
    free(p->svg);
    free(p);
}

static void pic_repr(Buf *b, Value v, bool quoted)
{
    (void)quoted;
    buf_puts(b, PIC(v)->text);
}

/* a picture is plain text: a task may take a copy */
static Value pic_copy(Value v, CopyCtx *cc)
{
    (void)cc;
    return picture_new(PIC(v)->text, PIC(v)->svg);
}

static bool pic_eq(Value a, Value b)
{
    return strcmp(PIC(a)->text, PIC(b)->text) == 0 && strcmp(PIC(a)->svg, PIC(b)->svg) == 0;
}

/* Why: p.text and p.svg: the two forms as strings. */
static Value pic_member(VM *vm, Value obj, const ObjStr *name, const Node *site)
{
    if (strcmp(name->s, "text") == 0) return v_str(PIC(obj)->text);
    if (strcmp(name->s, "svg") == 0) return v_str(PIC(obj)->svg);
    return vm_error(vm, site, "a picture has no member '%s' (it has text and svg)", name->s);
}

static const TypeOps picture_ops = {
    .name = "picture",
    .free = pic_free,
    .copy = pic_copy,
    .repr = pic_repr,
    .eq = pic_eq,
    .member = pic_member,
};

Value picture_new(const char *text, const char *svg)
{
    ObjPicture *p = (ObjPicture *)obj_alloc(sizeof *p, T_PICTURE);
    p->text = xstrdup(text);
    p->svg = xstrdup(svg);
    return (Value){ .t = T_PICTURE, .o = &p->h };
}

const char *picture_svg(Value v) { return v.t == T_PICTURE ? PIC(v)->svg : NULL; }

/* Why: display(v, ...): IPython's display(); in a terminal, print's line
   for each value (futures waited for). */
static Value bi_display(VM *vm, Args *a)
{
    for (int i = 0; i < a->n; i++) {
        if (vm->in->hooks.show) {
            if (!vm->in->hooks.show(vm, a->v[i], a->site)) return v_exc();
            continue;
        }
        Value v = tp_force(vm, a->v[i], a->site);
        if (IS_EXC(v)) return v;
        bool ok = tp_print(vm, &v, 1, &print_line, a->site);
        decref(v);
        if (!ok) return v_exc();
    }
    return v_nil();
}

/* ---------------------------------------------------------------- numbers in */

/* Numbers of a list or a 1-d real array (heap, *n of them); NULL after an
 * error naming who. */
static double *numbers(VM *vm, Value v, size_t *n, const char *who, const char *what,
                       const Node *site)
{
    if (v.t == T_ARRAY) {
        const Array *a = AS_ARR(v);
        if (ar_ndim(a) != 1 || ar_is_complex(a)) {
            vm_error(vm, site, "%s: %s must be a 1-d real array or a list of numbers", who, what);
            return NULL;
        }
        *n = ar_size(a);
        double *x = xmalloc((*n ? *n : 1) * sizeof *x);
        for (size_t i = 0; i < *n; i++) x[i] = ar_item(a, i).re;
        return x;
    }
    if (v.t != T_LIST) {
        vm_error(vm, site, "%s: %s must be a list or an array of numbers, not %s", who, what,
                 type_of(v)->name);
        return NULL;
    }
    ObjList *l = AS_LIST(v);
    *n = l->len;
    double *x = xmalloc((*n ? *n : 1) * sizeof *x);
    for (size_t i = 0; i < *n; i++) {
        Value e = l->v[i];
        if (e.t == T_NUM)
            x[i] = e.n;
        else if (e.t == T_BOOL)
            x[i] = e.b;
        else if (!type_of(e)->number || !type_of(e)->number(e, &x[i])) {
            vm_error(vm, site, "%s: %s[%zu] is %s, not a number", who, what, i, type_of(e)->name);
            free(x);
            return NULL;
        }
    }
    return x;
}

/* a string keyword (nil or absent: NULL); false after an error */
static bool str_kw(VM *vm, Args *a, const char *key, const char **out)
{
    Value *k = arg_kw(a, key);
    *out = NULL;
    if (!k || k->t == T_NIL) return true;
    if (k->t != T_STR) {
        vm_error(vm, a->site, "%s(): %s must be a string, not %s", a->def->name, key,
                 type_of(*k)->name);
        return false;
    }
    *out = AS_STR(*k)->s;
    return true;
}

/* ---------------------------------------------------------------- hist */

/* Why: hist(x, title=nil): a bar chart of counts (a dict: its keys, in
   order, and numbers) or probabilities (a list or array: bars named by
   basis states, |01⟩, when the length is a power of two). */
static Value bi_hist(VM *vm, Args *a)
{
    const char *title;
    if (!str_kw(vm, a, "title", &title)) return v_exc();
    Value x = a->v[0];
    size_t n = 0;
    double *v = NULL;
    char **labels = NULL;
    if (x.t == T_DICT) {
        ObjDict *d = AS_DICT(x);
        v = xmalloc((d->len ? d->len : 1) * sizeof *v);
        labels = xcalloc(d->len ? d->len : 1, sizeof *labels);
        for (size_t i = 0; i < d->nent; i++) {
            DictEnt *e = &d->ent[i];
            if (!e->live) continue;
            double num;
            if (e->val.t == T_NUM)
                num = e->val.n;
            else if (!type_of(e->val)->number || !type_of(e->val)->number(e->val, &num)) {
                for (size_t k = 0; k < n; k++) free(labels[k]);
                free(labels);
                free(v);
                return vm_error(vm, a->site, "hist(): the counts must be numbers, not %s",
                                type_of(e->val)->name);
            }
            Buf b;
            buf_init(&b);
            tp_repr(vm, &b, e->key, false, a->site);
            labels[n] = b.p ? b.p : xstrdup("");
            v[n++] = num;
        }
    } else {
        v = numbers(vm, x, &n, "hist()", "the probabilities", a->site);
        if (!v) return v_exc();
        labels = xcalloc(n ? n : 1, sizeof *labels);
        int bits = 0;
        while (bits < 62 && ((size_t)1 << bits) < n) bits++;
        bool pow2 = n > 1 && ((size_t)1 << bits) == n;
        for (size_t i = 0; i < n; i++) {
            char b[80];
            if (pow2) {
                size_t at = 0;
                at += (size_t)snprintf(b, sizeof b, "|");
                for (int k = bits - 1; k >= 0; k--) b[at++] = (i >> k) & 1 ? '1' : '0';
                snprintf(b + at, sizeof b - at, "\xe2\x9f\xa9"); /* ⟩ */
            } else
                snprintf(b, sizeof b, "%zu", i);
            labels[i] = xstrdup(b);
        }
    }
    char *svg = ch_bars_svg((const char *const *)labels, v, n, title);
    char *text = ch_bars_text((const char *const *)labels, v, n, 40);
    Value p = picture_new(text, svg);
    free(svg);
    free(text);
    for (size_t k = 0; k < n; k++) free(labels[k]);
    free(labels);
    free(v);
    return p;
}

/* ---------------------------------------------------------------- plot */

/* Why: plot(ys), plot(xs, ys, label=, title=, xlabel=, ylabel=): a line
   chart; plot(r) of optimize.minimize's result draws its history (the
   cost at each step). */
static Value bi_plot(VM *vm, Args *a)
{
    const char *label, *title, *xlabel, *ylabel;
    if (!str_kw(vm, a, "label", &label) || !str_kw(vm, a, "title", &title) ||
        !str_kw(vm, a, "xlabel", &xlabel) || !str_kw(vm, a, "ylabel", &ylabel))
        return v_exc();
    Value ysv = a->n == 2 ? a->v[1] : a->v[0];
    if (a->n == 1 && ysv.t == T_DICT) {
        /* optimize.minimize's result: its history */
        Value key = v_str("history"), h;
        bool found = dict_get(AS_DICT(ysv), key, &h);
        decref(key);
        if (!found)
            return vm_error(vm, a->site,
                            "plot(): a dict must be optimize.minimize's result "
                            "(with a \"history\" list)");
        ysv = h;
        if (!xlabel) xlabel = "step";
        if (!ylabel) ylabel = "cost";
    }
    size_t n, nx = 0;
    double *ys = numbers(vm, ysv, &n, "plot()", "ys", a->site), *xs = NULL;
    if (!ys) return v_exc();
    if (a->n == 2) {
        xs = numbers(vm, a->v[0], &nx, "plot()", "xs", a->site);
        if (!xs) {
            free(ys);
            return v_exc();
        }
        if (nx != n) {
            free(xs);
            free(ys);
            return vm_error(vm, a->site, "plot(): xs has %zu numbers and ys %zu", nx, n);
        }
    }
    ChSeries s = { xs, ys, n, label };
    char *svg = ch_lines_svg(&s, 1, title, xlabel, ylabel);
    char *text = ch_lines_text(&s, 1, 60, 8);
    Value p = picture_new(text, svg);
    free(svg);
    free(text);
    free(xs);
    free(ys);
    return p;
}

/* Why: save_svg(p, path): a picture's SVG into a file (notebooks and
   terminals alike), for papers and web pages. */
static Value bi_save_svg(VM *vm, Args *a)
{
    if (a->v[0].t != T_PICTURE)
        return vm_error(vm, a->site,
                        "save_svg(): the first argument must be a picture (from draw, hist or "
                        "plot), not %s",
                        type_of(a->v[0])->name);
    if (a->v[1].t != T_STR)
        return vm_error(vm, a->site, "save_svg(): the path must be a string, not %s",
                        type_of(a->v[1])->name);
    char err[600];
    const char *svg = PIC(a->v[0])->svg;
    if (io_write_file(AS_STR(a->v[1])->s, svg, strlen(svg), 0, err, sizeof err) != 0)
        return vm_error(vm, a->site, "save_svg(): %s", err);
    return v_nil();
}

static const char *const kw_hist[] = { "title", NULL };
static const char *const kw_plot[] = { "label", "title", "xlabel", "ylabel", NULL };

static const BuiltinDef builtins_picture[] = {
    { "display", bi_display, 0, -1, BI_LAZY | BI_IMPURE, NULL, 0 },
    { "hist", bi_hist, 1, 1, 0, kw_hist, 0 },
    { "plot", bi_plot, 1, 2, 0, kw_plot, 0 },
    { "save_svg", bi_save_svg, 2, 2, BI_IMPURE, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

void picture_open(void)
{
    T_PICTURE = type_register_new(&picture_ops);
    builtins_add(builtins_picture);
}

/* module.c — `import NAME`: finding NAME.qh (the importing file's folder,
 * then QH_PATH, then the installed standard library), loading it once and
 * running it; the evaluator reaches it through the import hook. Knows
 * sources, the parser and the evaluator's entry points. */
#include "module.h"
#include "eval.h"
#include "diag.h"
#include "parse.h"
#include "resolve.h"
#include "analyse.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ModInfo *load_and_analyse(Interp *in, Source *src, FILE *diag, bool warn)
{
    (void)in;
    ModInfo *m = parse_source(src, diag);
    if (!m) return NULL;
    if (!resolve_module(m, m->body, builtin_lookup, diag, warn)) { parse_free(m); return NULL; }
    resolve_warn_hidden(m, m->body, builtin_lookup, NULL, diag);
    if (!analyse_module(m, diag)) { parse_free(m); return NULL; }
    return m;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static char *try_dir(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 8;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s.qh", dir, name);
    if (access(p, R_OK) == 0) return p;
    free(p);
    return NULL;
}

/* Where NAME.qh is: the importer's folder, QH_PATH, the stdlib; NULL if nowhere. */
static char *find_module_from(Interp *in, const Source *from, const char *name)
{
    char *found = NULL;
    if (from && from->path) {
        char *d = dir_of(from->path);
        found = try_dir(d, name);
        free(d);
    } else {
        found = try_dir(".", name);
    }
    if (found) return found;
    const char *qp = in->qh_path;
    if (qp && *qp) {
        char *copy = strdup(qp), *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save))
            if (*d) found = try_dir(d, name);
        free(copy);
        if (found) return found;
    }
    if (in->stdlib_dir) found = try_dir(in->stdlib_dir, name);
    return found;
}

static char *find_module(VM *vm, const char *name)
{
    const Source *from = vm->frame && vm->frame->p ? vm->frame->p->mod->src : (vm->mod ? vm->mod->info->src : NULL);
    return find_module_from(vm->in, from, name);
}

/* ---- imports checked before anything runs ----
 * Every `import NAME` that can be seen in a file is found, parsed and
 * analysed before the program starts, so a syntax error in a module exits
 * with status 2 like one in the script. The parsed modules are kept for
 * the import to use when it runs. */
typedef struct Preload { char *path; ModInfo *info; struct Preload *next; } Preload;

static bool preload_stmt(Interp *in, const Source *from, Node *n, FILE *diag);

static bool preload_file(Interp *in, const Source *from, const char *name, int line, int col, FILE *diag)
{
    char *path = find_module_from(in, from, name);
    if (!path) return true;             /* reported when the import runs (it may be created first) */
    for (Preload *p = in->preloaded; p; p = p->next)
        if (strcmp(p->path, path) == 0) { free(path); return true; }
    char err[512];
    Source *src = source_from_file(path, path, err, sizeof err);
    if (!src) {
        char msg[700];
        snprintf(msg, sizeof msg, "import %s: %s", name, err);
        diag_print(diag, from, line, col, "error", msg);
        free(path);
        return false;
    }
    ModInfo *info = load_and_analyse(in, src, diag, false);
    if (!info) { source_free(src); free(path); return false; }
    Preload *p = calloc(1, sizeof *p);
    p->path = path;
    p->info = info;
    p->next = in->preloaded;
    in->preloaded = p;
    return preload_stmt(in, src, info->body, diag);
}

static bool preload_stmt(Interp *in, const Source *from, Node *n, FILE *diag)
{
    if (!n) return true;
    switch (n->kind) {
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n; i++) if (!preload_stmt(in, from, n->u.list.items[i], diag)) return false;
        return true;
    case N_IMPORT: return preload_file(in, from, n->u.import.name, n->line, n->col, diag);
    case N_IF: return preload_stmt(in, from, n->u.ifs.then, diag) && preload_stmt(in, from, n->u.ifs.els, diag);
    case N_WHILE: return preload_stmt(in, from, n->u.whiles.body, diag);
    case N_FOR: return preload_stmt(in, from, n->u.fors.body, diag);
    case N_TRY: return preload_stmt(in, from, n->u.tries.body, diag) && preload_stmt(in, from, n->u.tries.handler, diag);
    case N_FNDEF: return preload_stmt(in, from, n->u.fn->body, diag);
    default: return true;
    }
}

bool module_preload(Interp *in, ModInfo *m, FILE *diag)
{
    return preload_stmt(in, m->src, m->body, diag);
}

/* the preloaded parse of path, taken (each is run once) */
static ModInfo *take_preloaded(Interp *in, const char *path)
{
    for (Preload **pp = (Preload **)&in->preloaded; *pp; pp = &(*pp)->next) {
        Preload *p = *pp;
        if (strcmp(p->path, path) != 0) continue;
        ModInfo *info = p->info;
        p->info = NULL;
        return info;
    }
    return NULL;
}

void module_preload_free(Interp *in)
{
    Preload *p = in->preloaded;
    while (p) {
        Preload *n = p->next;
        if (p->info) {
            Source *src = p->info->src;
            analyse_free_body(p->info->body);
            parse_free(p->info);
            source_free(src);
        }
        free(p->path);
        free(p);
        p = n;
    }
    in->preloaded = NULL;
}

static Value module_import(VM *vm, const char *name, const Node *site)
{
    Interp *in = vm->in;
    if (vm->is_task) return vm_error(vm, site, "import is not allowed inside a quantum function");
    if (!in->modules) in->modules = dict_new();
    Value key = v_str(name), found;
    if (dict_get(in->modules, key, &found)) { decref(key); incref(found); return found; }
    char *path = find_module(vm, name);
    if (!path) {
        decref(key);
        return vm_error(vm, site, "no module named '%s' (looked in the script's folder, QH_PATH and %s)", name,
                        in->stdlib_dir ? in->stdlib_dir : "the standard library");
    }
    ModInfo *info = take_preloaded(in, path);
    if (!info) {
        char err[512];
        Source *src = source_from_file(path, path, err, sizeof err);
        if (!src) { free(path); decref(key); return vm_error(vm, site, "import %s: %s", name, err); }
        info = load_and_analyse(in, src, stderr, false);
        if (!info) {
            source_free(src);
            free(path);
            decref(key);
            return vm_error(vm, site, "import %s: the module has errors (see above)", name);
        }
    }
    free(path);
    ObjModule *m = module_new(info, arena_strndup(info->arena, name, strlen(name)));
    Value mv = v_obj(&m->h);
    dict_set(in->modules, key, mv);         /* registered first: circular imports see it */
    bool ok = vm_run_module(vm, m);
    if (!ok) {
        Value dummy;
        dict_del(in->modules, key, &dummy);
        decref(dummy);
        decref(key);
        vm_tb_push(vm, site);
        return v_exc();
    }
    m->loaded = true;
    decref(key);
    return mv;
}

void module_attach(Interp *in) { in->hooks.import = module_import; }

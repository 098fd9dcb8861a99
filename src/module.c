/* module.c — `import NAME`: finding NAME.qh (the importing file's folder,
 * then QH_PATH, then the installed standard library), loading it once and
 * running it. Knows sources, the parser and the evaluator's entry points. */
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
    if (!resolve_module(m, m->body, builtin_lookup, diag, warn) || !analyse_module(m, diag)) {
        parse_free(m);
        return NULL;
    }
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
static char *find_module(VM *vm, const char *name)
{
    const Source *from = vm->frame && vm->frame->fn ? vm->frame->fn->p->mod->src : (vm->mod ? vm->mod->info->src : NULL);
    char *found = NULL;
    if (from && from->path) {
        char *d = dir_of(from->path);
        found = try_dir(d, name);
        free(d);
    } else {
        found = try_dir(".", name);
    }
    if (found) return found;
    const char *qp = vm->in->qh_path;
    if (qp && *qp) {
        char *copy = strdup(qp), *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save))
            if (*d) found = try_dir(d, name);
        free(copy);
        if (found) return found;
    }
    if (vm->in->stdlib_dir) found = try_dir(vm->in->stdlib_dir, name);
    return found;
}

Value module_import(VM *vm, const char *name, const Node *site)
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
    char err[512];
    Source *src = source_from_file(path, path, err, sizeof err);
    free(path);
    if (!src) { decref(key); return vm_error(vm, site, "import %s: %s", name, err); }
    ModInfo *info = load_and_analyse(in, src, stderr, false);
    if (!info) {
        source_free(src);
        decref(key);
        return vm_error(vm, site, "import %s: the module has errors (see above)", name);
    }
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

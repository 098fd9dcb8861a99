/* load.c — the loader: the pipeline from source text to an analysed
 * module (parse, resolve, warn about hidden builtins, analyse, preload the
 * imports it can see), written once for programs, modules and REPL
 * entries; `import NAME` (finding NAME.qh in the importing file's folder,
 * then QH_PATH, then the installed standard library, loading it once and
 * running it), which the evaluator reaches through the import hook; and
 * freeing what was loaded. Knows sources, the front end and the
 * evaluator's entry points. */
#include "load.h"
#include "analyse.h"
#include "diag.h"
#include "eval.h"
#include "parse.h"
#include "qh_assert.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Loaded modules' parses, kept until the end (functions point into them):
 * preloaded ones waiting for their import, and the ones taken. */
typedef struct Preload {
    char *path;
    ModInfo *info;
    bool taken;
    struct Preload *next;
} Preload;

static bool preload_stmt(Interp *in, const Source *from, Node *n, FILE *diag);

/* frees a whole parse: analysis, arena, tables, source */
static void free_info(ModInfo *m)
{
    Source *src = m->src;
    analyse_free_body(m->body);
    parse_free(m);
    source_free(src);
}

void load_forget_protos(ModInfo *session, int first)
{
    for (int i = first; i < session->nprotos; i++) {
        FnProto *f = session->protos[i];
        free(f->local_is_cell);
        free(f->local_names);
        free(f->upvals);
        free(f->global_reads);
        free(f->global_calls);
        f->local_is_cell = NULL;
        f->local_names = NULL;
        f->upvals = NULL;
        f->global_reads = NULL;
        f->global_calls = NULL;
    }
    if (first < session->nprotos) session->nprotos = first;
}

bool load_compile(Interp *in, Source *src, LoadKind kind, ModInfo *session, HideMemo *memo,
                  FILE *diag, ModInfo **out)
{
    *out = NULL;
    ModInfo *m = parse_source(src, diag);
    if (!m) return false;
    if (kind == LOAD_ENTRY) {
        qh_assert(session);
        /* the session's table owns the protos for analysis; each keeps its part for messages */
        int first = session->nprotos;
        for (int i = 0; i < m->nprotos; i++) {
            if (session->nprotos % 16 == 0)
                session->protos =
                    xrealloc(session->protos, (size_t)(session->nprotos + 16) * sizeof(FnProto *));
            session->protos[session->nprotos++] = m->protos[i];
        }
        free(m->protos);
        m->protos = NULL;
        m->nprotos = 0;
        *out = m; /* the caller keeps the part, whatever follows */
        /* messages of resolve and analysis name the table's source: this input */
        session->msg_src = m->src; /* not src: tasks of earlier entries read it */
        bool ok = resolve_module(session, m->body, builtin_lookup, diag, false);
        if (ok) resolve_warn_hidden(session, m->body, builtin_lookup, memo, diag);
        ok = ok && analyse_body(session, m->body, first, diag);
        session->msg_src = NULL;
        ok = ok && preload_stmt(in, m->src, m->body, diag);
        if (!ok) load_forget_protos(session, first); /* a rejected entry defines nothing */
        return ok;
    }
    if (kind == LOAD_MAIN) resolve_declare(m, "argv", builtin_lookup);
    if (!resolve_module(m, m->body, builtin_lookup, diag, kind == LOAD_MAIN)) {
        parse_free(m);
        return false;
    }
    resolve_warn_hidden(m, m->body, builtin_lookup, NULL, diag);
    if (!analyse_module(m, diag)) {
        analyse_free_body(m->body);
        parse_free(m);
        return false;
    }
    *out = m;
    if (!preload_stmt(in, m->src, m->body, diag)) {
        if (kind == LOAD_MAIN) {
            analyse_free_body(m->body);
            parse_free(m);
            *out = NULL;
        }
        return false;
    }
    return true;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return xstrdup(".");
    if (slash == path) return xstrdup("/");
    return xstrndup(path, (size_t)(slash - path));
}

static char *try_dir(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 8;
    char *p = xmalloc(n);
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
        char *copy = xstrdup(qp), *save = NULL;
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
    const Source *from =
        vm->frame && vm->frame->p ? vm->frame->p->mod->src : (vm->mod ? vm->mod->info->src : NULL);
    return find_module_from(vm->in, from, name);
}

/* ---- imports checked before anything runs ----
 * Every `import NAME` that can be seen in a file is found, parsed and
 * analysed before the program starts, so a syntax error in a module exits
 * with status 2 like one in the script. The parsed modules are kept for
 * the import to use when it runs. */

static void remember(Interp *in, char *path, ModInfo *info, bool taken)
{
    Preload *p = xcalloc(1, sizeof *p);
    p->path = path;
    p->info = info;
    p->taken = taken;
    p->next = in->preloaded;
    in->preloaded = p;
}

static bool preload_file(Interp *in, const Source *from, const char *name, int line, int col,
                         FILE *diag)
{
    char *path = find_module_from(in, from, name);
    if (!path) return true; /* reported when the import runs (it may be created first) */
    for (Preload *p = in->preloaded; p; p = p->next)
        if (strcmp(p->path, path) == 0) {
            free(path);
            return true;
        }
    char err[512];
    Source *src = source_from_file(path, path, err, sizeof err);
    if (!src) {
        char msg[700];
        snprintf(msg, sizeof msg, "import %s: %s", name, err);
        diag_print(diag, from, line, col, "error", msg);
        free(path);
        return false;
    }
    ModInfo *info;
    /* its own imports are preloaded by the pipeline (a module seen twice is found in the list) */
    remember(in, path, NULL, false);
    Preload *me = in->preloaded;
    bool ok = load_compile(in, src, LOAD_MODULE, NULL, NULL, diag, &info);
    if (!info) {
        source_free(src);
        return false;
    }
    me->info = info;
    return ok;
}

static bool preload_stmt(Interp *in, const Source *from, Node *n, FILE *diag)
{
    if (!n) return true;
    switch ((NodeKind)n->kind) {
    case N_BLOCK:
        for (int i = 0; i < n->u.list.n; i++)
            if (!preload_stmt(in, from, n->u.list.items[i], diag)) return false;
        return true;
    case N_IMPORT: return preload_file(in, from, n->u.import.name, n->line, n->col, diag);
    case N_IF:
        return preload_stmt(in, from, n->u.ifs.then, diag) &&
               preload_stmt(in, from, n->u.ifs.els, diag);
    case N_WHILE: return preload_stmt(in, from, n->u.whiles.body, diag);
    case N_FOR: return preload_stmt(in, from, n->u.fors.body, diag);
    case N_TRY:
        return preload_stmt(in, from, n->u.tries.body, diag) &&
               preload_stmt(in, from, n->u.tries.handler, diag);
    case N_FNDEF: return preload_stmt(in, from, n->u.fn->body, diag);
    case N_NKINDS: qh_unreachable();
    case N_NUM:
    case N_IMAG:
    case N_STR:
    case N_TRUE:
    case N_FALSE:
    case N_NIL:
    case N_NAME:
    case N_LOCAL:
    case N_LOCALCELL:
    case N_UPVAL:
    case N_GLOBAL:
    case N_BUILTIN:
    case N_SELF:
    case N_LIST:
    case N_DICT:
    case N_UNARY:
    case N_BINARY:
    case N_AND:
    case N_OR:
    case N_NOT:
    case N_CALL:
    case N_INDEX:
    case N_SLICE:
    case N_MEMBER:
    case N_FNEXPR:
    case N_COND:
    case N_LISTCOMP:
    case N_DICTCOMP:
    case N_EXPRSTMT:
    case N_ASSIGN:
    case N_AUGASSIGN:
    case N_DESTRUCT:
    case N_BREAK:
    case N_CONTINUE:
    case N_RETURN:
    case N_GLOBALDECL:
    case N_PASS: return true;
    }
    qh_unreachable();
}

/* the preloaded parse of path, taken (each is run once) */
static ModInfo *take_preloaded(Interp *in, const char *path)
{
    for (Preload *p = in->preloaded; p; p = p->next) {
        if (p->taken || !p->info || strcmp(p->path, path) != 0) continue;
        p->taken = true;
        return p->info;
    }
    return NULL;
}

void load_free_all(Interp *in)
{
    /* the modules first: their globals are released (cycles through
     * functions were broken by the caller); then the cycles nobody can
     * reach any more, such as those of a module whose import failed
     * (its functions and globals), since clearing a function reads its
     * parse; then every parse */
    if (in->modules) {
        decref(v_obj(&in->modules->h));
        in->modules = NULL;
    }
    value_gc_collect(true);
    Preload *p = in->preloaded;
    while (p) {
        Preload *n = p->next;
        if (p->info) free_info(p->info);
        free(p->path);
        free(p);
        p = n;
    }
    in->preloaded = NULL;
}

static Value load_import(VM *vm, const char *name, const Node *site)
{
    Interp *in = vm->in;
    if (vm->is_task) return vm_error(vm, site, "import is not allowed inside a quantum function");
    if (!in->modules) in->modules = dict_new();
    Value key = v_str(name), found;
    if (dict_get(in->modules, key, &found)) {
        decref(key);
        incref(found);
        return found;
    }
    char *path = find_module(vm, name);
    if (!path) {
        decref(key);
        return vm_error(vm, site,
                        "no module named '%s' (looked in the script's folder, QH_PATH and %s)",
                        name, in->stdlib_dir ? in->stdlib_dir : "the standard library");
    }
    ModInfo *info = take_preloaded(in, path);
    if (!info) {
        /* created after the program started: loaded now */
        char err[512];
        Source *src = source_from_file(path, path, err, sizeof err);
        if (!src) {
            free(path);
            decref(key);
            return vm_error(vm, site, "import %s: %s", name, err);
        }
        bool ok = load_compile(in, src, LOAD_MODULE, NULL, NULL, in->err, &info);
        if (!info)
            source_free(src);
        else if (!ok)
            free_info(info); /* nothing refers to a parse that never ran */
        else
            remember(in, xstrdup(path), info, true);
        if (!ok) {
            free(path);
            decref(key);
            return vm_error(vm, site, "import %s: the module has errors (see above)", name);
        }
    }
    free(path);
    ObjModule *m = module_new(info, arena_strndup(info->arena, name, strlen(name)));
    Value mv = v_obj(&m->h);
    dict_set(in->modules, key, mv); /* registered first: circular imports see it */
    bool ok = vm_run_module(vm, m);
    if (!ok) {
        /* the module is dropped (the cycle collector frees it with the
         * functions it made); its parse stays for the next try, so a retry
         * loop parses it once (a parse is freed only at exit: functions
         * made from it may still be alive) */
        for (Preload *p = in->preloaded; p; p = p->next)
            if (p->info == info) p->taken = false;
        Value dummy;
        dict_del(in->modules, key, &dummy);
        decref(dummy);
        decref(mv); /* this function's own reference */
        decref(key);
        vm_tb_push(vm, site);
        return v_exc();
    }
    m->loaded = true;
    decref(key);
    return mv;
}

void load_code_table(Interp *in, ModInfo *main, SerCode *out)
{
    int n = 1;
    for (Preload *p = in->preloaded; p; p = p->next) n += p->info != NULL;
    out->mods = xcalloc((size_t)n, sizeof(ModInfo *));
    out->names = xcalloc((size_t)n, sizeof(char *));
    out->nprotos = xcalloc((size_t)n, sizeof(int));
    out->nmods = 0;
    out->mods[out->nmods] = main;
    out->names[out->nmods++] = xstrdup("__main__");
    /* the list is newest first: the loader's order is its reverse */
    int k = n;
    for (Preload *p = in->preloaded; p; p = p->next) {
        if (!p->info) continue;
        k--;
        const char *base = strrchr(p->path, '/');
        base = base ? base + 1 : p->path;
        size_t len = strlen(base);
        if (len > 3 && strcmp(base + len - 3, ".qh") == 0) len -= 3;
        out->mods[k] = p->info;
        out->names[k] = strndup(base, len);
    }
    out->nmods = n;
    for (int i = 0; i < n; i++) out->nprotos[i] = out->mods[i]->nprotos;
}

void load_code_free(SerCode *code)
{
    for (int i = 0; i < code->nmods; i++) free((char *)code->names[i]);
    free(code->names);
    free(code->nprotos);
    free(code->mods);
    memset(code, 0, sizeof *code);
}

void load_attach(Interp *in) { in->hooks.import = load_import; }

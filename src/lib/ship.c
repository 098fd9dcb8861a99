/* ship.c — tasks on other ranks (ship.h): packing a plain qfn call's task
 * (its stream, names for messages, the function by reference with the module
 * copy holding the globals it takes along, the arguments), shipping it
 * through a remote slot and reading the answer; on a serving rank, running a
 * packed task and writing the answer. Failed futures keep their identity
 * across the round trip (task.h's FutLinks). Knows the tasks and the
 * serializer. */
#include "ship.h"
#include "func.h"
#include "qh_assert.h"
#include "serial.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* What ship_set_remote set, and the tasks that could not be packed. */
typedef struct ShipState {
    const ShipRemote *remote;
    atomic_ulong unsent;  /* tasks that could not be packed (run here) */
    char unsent_why[320]; /* the first reason (written once, under unsent_mu) */
    pthread_mutex_t unsent_mu;
} ShipState;

/* A packed task: its stream (seed, index), names for messages, then the
 * function (by reference, with the module copy holding the globals it takes
 * along) and the arguments. Only plain qfn calls travel (other bodies have
 * arguments of their own). */
static bool pack_task(const TaskCtx *c, SerCtx *sc)
{
    ser_u64(sc, c->seed);
    ser_u64(sc, c->index);
    ser_str(sc, c->prefix, strlen(c->prefix));
    ser_str(sc, c->name, strlen(c->name));
    ser_u32(sc, (uint32_t)c->line);
    if (!ser_value(sc, c->fn)) return false;
    ser_u32(sc, (uint32_t)c->nargs);
    for (int i = 0; i < c->nargs; i++)
        if (!ser_value(sc, c->args[i])) return false;
    return true;
}

static TaskCtx *unpack_task(Interp *in, SerCtx *sc)
{
    uint64_t seed, index;
    uint32_t line, nargs;
    const char *prefix = NULL, *name = NULL;
    Value fn = v_nil();
    bool ok = des_u64(sc, &seed) && des_u64(sc, &index) && (prefix = des_str(sc, NULL)) != NULL &&
              (name = des_str(sc, NULL)) != NULL && des_u32(sc, &line);
    if (ok) {
        fn = des_value(sc);
        ok = !IS_EXC(fn) && fn.t == T_FUNC;
        if (!ok && !IS_EXC(fn)) des_fail(sc, "task function");
        if (IS_EXC(fn)) fn = v_nil();
    }
    ok = ok && des_u32(sc, &nargs) && nargs == (uint32_t)AS_FUNC(fn)->p->nparams;
    TaskCtx *c = xcalloc(1, sizeof *c + ((size_t)(ok ? nargs : 0) + 1) * sizeof(Value));
    c->in = in;
    c->fn = fn;
    c->body = task_qfn_body();
    if (ok) {
        c->seed = seed;
        c->index = index;
        c->prefix = task_keep_name(prefix);
        c->name = task_keep_name(name);
        c->line = (int)line;
        for (uint32_t i = 0; i < nargs && ok; i++) {
            Value v = des_value(sc);
            ok = !IS_EXC(v);
            if (ok) c->args[c->nargs++] = v;
        }
    }
    if (!ok || !des_at_end(sc)) {
        if (!sc->failed) des_fail(sc, "task");
        task_ctx_free(c);
        return NULL;
    }
    copy_move_modules(&c->mods, &sc->memo); /* released at the task's end, as a local task's */
    return c;
}

static void note_unsent(ShipState *as, const char *why)
{
    pthread_mutex_lock(&as->unsent_mu);
    if (!as->unsent_why[0]) snprintf(as->unsent_why, sizeof as->unsent_why, "%s", why);
    pthread_mutex_unlock(&as->unsent_mu);
    atomic_fetch_add(&as->unsent, 1);
}

/* An answer (ship_run_packed's): the origins of the failed futures the
 * task read, then the result's bytes or the error message. */
static void answer_head(Buf *out, const FutLinks *l)
{
    uint32_t n = 0;
    for (size_t i = 0; i < l->n; i++) n += fut_retrieved(l->v[i].fut);
    buf_put(out, (const char *)&n, sizeof n);
    for (size_t i = 0; i < l->n; i++)
        if (fut_retrieved(l->v[i].fut))
            buf_put(out, (const char *)&l->v[i].origin, sizeof(uint64_t));
}

/* A remote slot's run: the task packed and shipped, its answer unpacked.
 * False if it cannot be packed: the caller runs it here. */
static bool ship_task(TaskCtx *c, ExecTask *t, int slot)
{
    ShipState *as = c->in->tasks->ship_state;
    const ShipRemote *r = as->remote;
    FutLinks links = { NULL, 0, 0 };
    SerCtx sc;
    ser_init(&sc, r->code);
    sc.user = &links;
    if (!pack_task(c, &sc)) {
        char why[300];
        snprintf(why, sizeof why, "%s%s(): %s", c->prefix, c->name, sc.error);
        note_unsent(as, why);
        ser_free(&sc);
        task_links_free(&links);
        return false;
    }
    Buf ans;
    buf_init(&ans);
    int rc = r->ship(r->ud, slot, sc.out.p, sc.out.len, exec_task_cancel_flag(t), &ans);
    ser_free(&sc);
    if (rc >= 0) {
        /* the failed inputs the task read: read here too */
        SerCtx rd;
        des_init(&rd, ans.p, ans.len, r->code); /* no functions come back; sources name calls */
        rd.user = &links;
        uint32_t n = 0;
        bool ok = des_u32(&rd, &n);
        for (uint32_t i = 0; ok && i < n; i++) {
            uint64_t o;
            ok = des_u64(&rd, &o);
            Fut *f = ok ? task_links_find(&links, o) : NULL;
            if (f) fut_mark_retrieved(f);
        }
        /* the answer's values belong to whoever reads the result (as a
         * local task's result copy): made untracked on this slot's thread */
        bool tracked = value_track_pause();
        Value v = ok && rc == 1 ? des_value(&rd) : v_exc();
        value_track_resume(tracked);
        if (ok && rc == 0) {
            exec_task_fail(t, (const char *)rd.in +
                                  rd.pos); /* the message (NUL-terminated by the Buf) */
        } else if (!IS_EXC(v) && des_at_end(&rd)) {
            Value *box = xmalloc(sizeof(Value));
            *box = v;
            exec_task_done(t, box, task_free_box);
        } else {
            if (!IS_EXC(v)) decref(v);
            char msg[300];
            snprintf(msg, sizeof msg, "%s%s(): the answer from another rank could not be read: %s",
                     c->prefix, c->name, rd.error[0] ? rd.error : "extra bytes");
            exec_task_fail(t, msg);
        }
        ser_free(&rd);
    } else {
        exec_task_fail(t, rc == -2 && ans.p ? ans.p : "cancelled");
    }
    buf_free(&ans);
    task_links_free(&links);
    return true;
}

void ship_set_remote(Interp *in, const ShipRemote *r)
{
    TaskState *ts = task_state(in);
    if (!ts->ship_state) {
        ts->ship_state = xcalloc(1, sizeof *ts->ship_state);
        pthread_mutex_init(&ts->ship_state->unsent_mu, NULL);
    }
    ts->ship_state->remote = r;
    ts->ship = ship_task;
}

const ShipRemote *ship_remote(Interp *in)
{
    return in->tasks && in->tasks->ship_state ? in->tasks->ship_state->remote : NULL;
}

void ship_free(Interp *in)
{
    ShipState *ss = in->tasks ? in->tasks->ship_state : NULL;
    if (!ss) return;
    pthread_mutex_destroy(&ss->unsent_mu);
    free(ss);
    in->tasks->ship_state = NULL;
    in->tasks->ship = NULL;
}
bool ship_run_packed(Interp *in, const void *task, size_t len, const atomic_int *cancel,
                     const SerCode *code, Buf *out)
{
    FutLinks links = { NULL, 0, 0 };
    SerCtx sc;
    des_init(&sc, task, len, code);
    sc.user = &links;
    TaskCtx *c = unpack_task(in, &sc);
    if (!c) {
        answer_head(out, &links);
        buf_puts(out, sc.error);
        ser_free(&sc);
        task_links_free(&links);
        return false;
    }
    ser_free(&sc);
    Value result;
    char err[1200];
    bool ok = task_execute(c, cancel, NULL, &result, err, sizeof err);
    answer_head(out, &links);
    if (!ok) {
        buf_puts(out, err);
        task_ctx_free(c);
        task_links_free(&links);
        return false;
    }
    SerCtx w;
    ser_init(&w, NULL);
    w.user = &links;
    ok = ser_value(&w, result);
    decref(result);
    if (ok)
        buf_put(out, w.out.p, w.out.len);
    else {
        /* what a task returns can always be copied; a kind that cannot travel says so */
        char msg[400];
        snprintf(msg, sizeof msg, "%s%s() returned a value that cannot be sent back to rank 0: %s",
                 c->prefix, c->name, w.error);
        buf_puts(out, msg);
    }
    ser_free(&w);
    task_ctx_free(c);
    task_links_free(&links);
    return ok;
}

unsigned long ship_unsent(Interp *in, const char **why)
{
    ShipState *as = in->tasks ? in->tasks->ship_state : NULL;
    if (!as) {
        *why = NULL;
        return 0;
    }
    unsigned long n = atomic_load(&as->unsent);
    *why = n ? as->unsent_why : NULL;
    return n;
}

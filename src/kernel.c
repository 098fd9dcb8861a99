/* kernel.c — qh as a Jupyter kernel (messaging protocol 5.3) over ZeroMQ:
 * the five sockets of a connection file, the heartbeat and control threads,
 * and the shell requests run on the interpreter's thread (kernel_info,
 * execute, complete, inspect, is_complete, history, comm_info, shutdown).
 * A cell is a REPL entry (qh_compile_cell, labelled "cell N"); what it
 * prints goes out as stream messages in order, its value as execute_result,
 * its error as the command line's located message, and a future it shows
 * while its call runs is a display that is updated in place when the call
 * ends, while later cells run (the poll hook) or the kernel waits.
 * Frames, signatures and JSON are src/jup (jmsg.h). Knows qh.h, jmsg.h,
 * io.h and libzmq; nothing of the interpreter's insides. */
#include "kernel.h"
#include "bigstack.h"
#include "kernel_data.h"
#include "io.h"
#include "jmsg.h"
#include "qh_assert.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

const bool kernel_built = true;

/* A display of a future whose call had not finished when it was shown
 * (and, in Kernel.late, one updated while no request ran). */
typedef struct Pending {
    Value v;
    char id[64];    /* its display_id */
    char *parent;   /* the header of the request that showed it (heap) */
    size_t parentn; /* its length */
    char *text;     /* late: the text it was updated with (heap) */
    size_t tlen;
} Pending;

/* What the cell wrote, in order: runs of one stream. */
typedef struct Seg {
    bool err;
    char *p;
    size_t len, cap;
} Seg;

typedef struct HistItem {
    int n;
    char *code;
} HistItem;

typedef struct Kernel {
    qh_State *Q;
    void *ctx, *shell, *control, *iopub, *stdin_sock, *hb, *wake_rx, *wake_tx;
    JmKey *key;
    char session[40];
    atomic_ulong nmsg;
    pthread_mutex_t io_mu; /* the iopub socket: both threads publish */
    pthread_mutex_t out_mu;
    Seg *segs; /* written and not yet sent (out_mu) */
    size_t nsegs, capsegs;
    FILE *out, *err;   /* the interpreter's streams (cookies onto segs) */
    const JmMsg *cur;  /* the request being handled on the interpreter's thread */
    const JmMsg *cell; /* ... if it is a cell's (a non-silent execute request) */
    bool silent;       /* ... is a silent execute_request */
    bool capture;      /* a user expression runs: its value goes to captured */
    char *captured;
    size_t ncaptured;
    int count; /* execution count */
    int cells; /* cells compiled (the entry numbers) */
    unsigned displays;
    Pending *pend;
    size_t npend, cappend;
    Pending *late; /* updated while no cell ran: sent again to the next cell */
    size_t nlate, caplate;
    HistItem *hist;
    size_t nhist, caphist;
    atomic_int running; /* a cell runs: an interrupt goes to it */
    atomic_int stop;    /* shutdown asked */
    atomic_int restart;
} Kernel;

/* The kernel for the SIGINT handler (a handler gets no context). */
static Kernel *sig_kernel;

static void log_line(const char *fmt, const char *arg)
{
    fprintf(stderr, "qh kernel: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    fflush(stderr);
}

/* ---------------------------------------------------------------- frames on sockets */

static bool recv_frames(void *sock, JmFrame **out, size_t *n)
{
    size_t cap = 8;
    *n = 0;
    *out = xmalloc(cap * sizeof **out);
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, 0) < 0) {
            zmq_msg_close(&m);
            jm_frames_free(*out, *n);
            *out = NULL;
            *n = 0;
            return false;
        }
        if (*n == cap) *out = xrealloc(*out, (cap *= 2) * sizeof **out);
        size_t len = zmq_msg_size(&m);
        JmFrame *f = &(*out)[(*n)++];
        f->p = xmalloc(len + 1);
        if (len) memcpy(f->p, zmq_msg_data(&m), len);
        f->p[len] = 0;
        f->len = len;
        bool more = zmq_msg_more(&m);
        zmq_msg_close(&m);
        if (!more) return true;
    }
}

static void send_frames(void *sock, const JmFrame *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (zmq_send(sock, f[i].p, f[i].len, i + 1 < n ? ZMQ_SNDMORE : 0) < 0) {
            log_line("cannot send a message: %s", zmq_strerror(zmq_errno()));
            return;
        }
}

/* Sends a message of type `type` with content `content` (a tree) in reply
 * to parent (NULL: none) on sock: to parent's identities on a ROUTER
 * socket, under the topic on iopub (locked: both threads publish). */
static void send_msg(Kernel *K, void *sock, const JmMsg *parent, const char *type,
                     const IoJson *content)
{
    char id[96];
    snprintf(id, sizeof id, "%s_%lu", K->session, atomic_fetch_add(&K->nmsg, 1) + 1);
    char *header = jm_header(type, id, K->session, "qh");
    size_t clen;
    char *ctext = jb_dump(content, &clen);
    JmFrame parts[4] = {
        { header, strlen(header) },
        { parent ? parent->part[JM_HEADER].p : (char *)"{}",
          parent ? parent->part[JM_HEADER].len : 2 },
        { (char *)"{}", 2 },
        { ctext, clen },
    };
    bool pub = sock == K->iopub;
    char topic[128];
    JmFrame t = { topic, 0 };
    const JmFrame *ids = NULL;
    size_t nids = 0;
    if (pub) {
        t.len = (size_t)snprintf(topic, sizeof topic, "kernel.%s.%s", K->session, type);
        ids = &t;
        nids = 1;
    } else if (parent) {
        ids = parent->ids;
        nids = parent->nids;
    }
    size_t n;
    JmFrame *f = jm_encode(K->key, ids, nids, parts, &n);
    if (!f)
        log_line("cannot sign a %s message", type);
    else {
        if (pub) pthread_mutex_lock(&K->io_mu);
        send_frames(sock, f, n);
        if (pub) pthread_mutex_unlock(&K->io_mu);
    }
    jm_frames_free(f, n);
    free(ctext);
    free(header);
}

/* The same with a parent header given as text (a display updated later). */
static void publish_raw_parent(Kernel *K, const char *parent, size_t plen, const char *type,
                               const IoJson *content)
{
    JmMsg fake;
    memset(&fake, 0, sizeof fake);
    fake.part[JM_HEADER].p = (char *)parent;
    fake.part[JM_HEADER].len = plen;
    send_msg(K, K->iopub, &fake, type, content);
}

static void publish_status(Kernel *K, const JmMsg *parent, const char *state)
{
    JbArena a;
    jb_init(&a);
    IoJson *c = jb_obj(&a, 1);
    jb_put(c, "execution_state", jb_cstr(&a, state));
    send_msg(K, K->iopub, parent, "status", c);
    jb_free(&a);
}

/* Receives one message from sock: false when nothing usable came (the
 * reason logged; a bad or unsigned message is dropped). */
static bool recv_msg(Kernel *K, void *sock, JmMsg *m)
{
    JmFrame *f;
    size_t n;
    if (!recv_frames(sock, &f, &n)) return false;
    char err[300];
    bool ok = jm_parse(K->key, f, n, m, err, sizeof err);
    if (!ok) log_line("dropped a message: %s", err);
    jm_frames_free(f, n);
    return ok;
}

/* ---------------------------------------------------------------- what a cell writes */

static void seg_add(Kernel *K, bool err, const char *p, size_t n)
{
    pthread_mutex_lock(&K->out_mu);
    Seg *s = K->nsegs ? &K->segs[K->nsegs - 1] : NULL;
    if (!s || s->err != err) {
        if (K->nsegs == K->capsegs) {
            K->capsegs = K->capsegs ? 2 * K->capsegs : 8;
            K->segs = xrealloc(K->segs, K->capsegs * sizeof *K->segs);
        }
        s = &K->segs[K->nsegs++];
        memset(s, 0, sizeof *s);
        s->err = err;
    }
    if (s->len + n + 1 > s->cap) {
        s->cap = (s->len + n + 1) * 2;
        s->p = xrealloc(s->p, s->cap);
    }
    if (n) memcpy(s->p + s->len, p, n);
    s->len += n;
    s->p[s->len] = 0;
    pthread_mutex_unlock(&K->out_mu);
}

static ssize_t out_write(void *c, const char *p, size_t n)
{
    seg_add(c, false, p, n);
    return (ssize_t)n;
}

static ssize_t err_write(void *c, const char *p, size_t n)
{
    seg_add(c, true, p, n);
    return (ssize_t)n;
}

/* Sends what was written as stream messages (in the order written), to
 * the request being handled; a silent one's output is dropped. */
static void flush_streams(Kernel *K)
{
    fflush(K->out);
    fflush(K->err);
    pthread_mutex_lock(&K->out_mu);
    Seg *segs = K->segs;
    size_t n = K->nsegs;
    K->segs = NULL;
    K->nsegs = K->capsegs = 0;
    pthread_mutex_unlock(&K->out_mu);
    for (size_t i = 0; i < n; i++) {
        if (!K->silent && segs[i].len) {
            JbArena a;
            jb_init(&a);
            IoJson *c = jb_obj(&a, 2);
            jb_put(c, "name", jb_cstr(&a, segs[i].err ? "stderr" : "stdout"));
            jb_put(c, "text", jb_str(&a, segs[i].p, segs[i].len));
            send_msg(K, K->iopub, K->cur, "stream", c);
            jb_free(&a);
        }
        free(segs[i].p);
    }
    free(segs);
}

/* ---------------------------------------------------------------- input() */

/* qh_set_input: input(prompt) in a cell asks the frontend, as ipykernel's
 * raw_input does: what the cell wrote so far is sent, then an
 * input_request (the prompt, password false) goes to the stdin channel,
 * addressed as the execute request was, and the kernel waits for the
 * input_reply; an interrupt stops the wait as Ctrl-C stops the cell. A
 * request with allow_stdin false (nbclient's) makes input() an error. */
static int kernel_input(qh_State *Q, const char *prompt, size_t plen, char **line, size_t *len,
                        void *ud)
{
    Kernel *K = ud;
    const JmMsg *req = K->cur;
    if (!req || strcmp(req->type, "execute_request") != 0 ||
        !jm_bool(req->json[JM_CONTENT], "allow_stdin", true)) {
        *line = xstrdup("this frontend does not support input requests (allow_stdin is false)");
        return QH_INPUT_ERROR;
    }
    flush_streams(K);
    for (;;) { /* a reply to an earlier, interrupted request is stale */
        zmq_pollitem_t it = { K->stdin_sock, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 0) <= 0) break;
        JmMsg m;
        if (recv_msg(K, K->stdin_sock, &m)) {
            log_line("dropped a stale '%s' message on stdin", m.type);
            jm_msg_free(&m);
        }
    }
    JbArena a;
    jb_init(&a);
    IoJson *c = jb_obj(&a, 2);
    jb_put(c, "prompt", jb_str(&a, plen ? prompt : "", plen));
    jb_put(c, "password", io_json_bool(false));
    send_msg(K, K->stdin_sock, req, "input_request", c);
    jb_free(&a);
    for (;;) {
        if (qh_interrupt_requested(Q) || atomic_load(&K->stop)) return QH_INPUT_INTERRUPTED;
        zmq_pollitem_t it = { K->stdin_sock, 0, ZMQ_POLLIN, 0 };
        int r = zmq_poll(&it, 1, 50);
        if (r < 0 && zmq_errno() == ETERM) return QH_INPUT_INTERRUPTED;
        if (r <= 0) continue;
        JmMsg m;
        if (!recv_msg(K, K->stdin_sock, &m)) continue;
        if (strcmp(m.type, "input_reply") != 0) {
            log_line("unknown stdin message type '%s' (ignored)", m.type);
            jm_msg_free(&m);
            continue;
        }
        const IoJson *v = jm_get(m.json[JM_CONTENT], "value");
        if (!v || v->kind != IOJ_STRING) {
            log_line("an input_reply without a string value (%s)", "taken as end of input");
            jm_msg_free(&m);
            return QH_INPUT_EOF;
        }
        *line = xmalloc(v->len + 1); /* the value may hold NULs (JSON escapes them) */
        if (v->len) memcpy(*line, v->str, v->len);
        (*line)[v->len] = 0;
        *len = v->len;
        jm_msg_free(&m);
        return QH_INPUT_LINE;
    }
}

/* ---------------------------------------------------------------- showing values */

/* An output's data, the MIME bundle: {"text/plain": text} and, for a value
 * that has a picture (draw, hist, plot), "image/svg+xml" (svg: heap or
 * NULL, taken). */
static void put_data(JbArena *a, IoJson *c, const char *text, size_t len, char *svg, size_t slen)
{
    IoJson *d = jb_obj_at(a, c, "data", 2);
    jb_put(d, "text/plain", jb_str(a, text, len));
    if (svg) jb_put(d, "image/svg+xml", jb_str(a, svg, slen));
    free(svg);
    jb_obj_at(a, c, "metadata", 0);
}

/* The last runtime error as the command line prints it (heap). */
static char *error_text(Kernel *K, size_t *len)
{
    char *t = NULL;
    size_t n = 0;
    if (len) *len = 0;
    FILE *f = open_memstream(&t, &n);
    if (!f) return xstrdup("");
    qh_print_error(K->Q, f);
    fclose(f);
    if (len) *len = n;
    return t;
}

/* A display of a future (or the update of one): its text now, or its
 * located error if its call failed. */
static char *future_text(Kernel *K, Value v, size_t *len)
{
    char *t = qh_show_text(K->Q, v, len);
    if (t) return t;
    t = error_text(K, len);
    while (*len && t[*len - 1] == '\n') t[--*len] = 0;
    return t;
}

/* A display (or its update) of pending display p, its text now: to the
 * request being handled, or (to_parent) to the one that showed it. */
static void send_display(Kernel *K, const char *type, const Pending *p, const char *text,
                         size_t len, bool to_parent)
{
    const char *id = p->id, *parent = to_parent ? p->parent : NULL;
    size_t plen = p->parentn;
    Value v = p->v;
    qh_assert(p->parent && id[0]); /* every pending display remembers its request */
    JbArena a;
    jb_init(&a);
    IoJson *c = jb_obj(&a, 3);
    size_t slen = 0;
    char *svg = qh_show_svg(K->Q, v, &slen);
    put_data(&a, c, text, len, svg, slen);
    IoJson *tr = jb_obj_at(&a, c, "transient", 1);
    jb_put(tr, "display_id", jb_cstr(&a, id));
    if (parent)
        publish_raw_parent(K, parent, plen, type, c);
    else
        send_msg(K, K->iopub, K->cur, type, c);
    jb_free(&a);
}

/* A new slot at the end of list *a (n entries, room for *cap). */
static Pending *pending_slot(Pending **a, size_t *n, size_t *cap)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        *a = xrealloc(*a, *cap * sizeof **a);
    }
    qh_assert(*n < *cap);
    return &(*a)[(*n)++];
}

/* What a display holds: its future, its request's header, a late text. */
static void pending_free(Pending *p)
{
    decref(p->v);
    free(p->parent);
    free(p->text);
}

/* The host's display (qh_set_show): a value shown now; a future still
 * running shown as such and remembered, to be updated when it ends. */
static bool show(qh_State *Q, Value v, bool result, void *ud)
{
    Kernel *K = ud;
    (void)Q;
    if (K->capture && result) {
        free(K->captured);
        K->captured = qh_show_text(K->Q, v, &K->ncaptured);
        return K->captured != NULL;
    }
    if (K->silent) return true;
    flush_streams(K);
    int st = qh_future_state(v);
    size_t len;
    if (st == QH_QUEUED || st == QH_RUNNING) {
        char *t = qh_show_text(K->Q, v, &len);
        if (!t) return false;
        Pending *p = pending_slot(&K->pend, &K->npend, &K->cappend);
        p->v = v;
        incref(v);
        snprintf(p->id, sizeof p->id, "%s-d%u", K->session, ++K->displays);
        p->text = NULL;
        p->tlen = 0;
        p->parentn = K->cur->part[JM_HEADER].len;
        p->parent = xmalloc(p->parentn + 1);
        memcpy(p->parent, K->cur->part[JM_HEADER].p, p->parentn + 1);
        send_display(K, "display_data", p, t, len, false);
        free(t);
        qh_want_poll(K->Q, true);
        return true;
    }
    char *t = qh_show_text(K->Q, v, &len);
    if (!t) return false;
    JbArena a;
    jb_init(&a);
    IoJson *c = jb_obj(&a, 3);
    if (result) jb_put(c, "execution_count", io_json_number(K->count));
    size_t slen = 0;
    char *svg = qh_show_svg(K->Q, v, &slen);
    put_data(&a, c, t, len, svg, slen);
    send_msg(K, K->iopub, K->cur, result ? "execute_result" : "display_data", c);
    jb_free(&a);
    free(t);
    return true;
}

/* Displays whose futures have ended are updated in place: to the cell
 * being run if there is one (a client reads a cell's messages only), else
 * (idle, or another request: a completion, a silent execute) to the one
 * that showed them, and that update is kept (late) to be sent again under
 * the next cell: a client that reads only the running cell's messages
 * (nbclient, papermill) drops one addressed to an earlier cell, and a
 * future that ends between two cells would keep its "running" display
 * there. An update replaces a display, so a client that took the first
 * one is not changed by the second. */
static void check_pending(Kernel *K)
{
    size_t keep = 0;
    for (size_t i = 0; i < K->npend; i++) {
        Pending *p = &K->pend[i];
        int st = qh_future_state(p->v);
        if (st == QH_QUEUED || st == QH_RUNNING) {
            K->pend[keep++] = *p;
            continue;
        }
        size_t len;
        char *t = future_text(K, p->v, &len);
        send_display(K, "update_display_data", p, t, len, !K->cell);
        p->text = t;
        p->tlen = len;
        if (K->cell)
            pending_free(p);
        else
            *pending_slot(&K->late, &K->nlate, &K->caplate) = *p;
    }
    K->npend = keep;
}

/* The displays updated while no cell ran, again, to the cell K->cell. */
static void send_late(Kernel *K)
{
    qh_assert(K->cell && K->cell == K->cur);
    for (size_t i = 0; i < K->nlate; i++) {
        Pending *p = &K->late[i];
        send_display(K, "update_display_data", p, p->text, p->tlen, false);
        pending_free(p);
    }
    K->nlate = 0;
}

/* At the end: the displays not updated, and those updated while idle. */
static void drop_displays(Kernel *K)
{
    for (size_t i = 0; i < K->npend; i++) pending_free(&K->pend[i]);
    for (size_t i = 0; i < K->nlate; i++) pending_free(&K->late[i]);
    K->npend = K->nlate = 0;
    free(K->pend);
    free(K->late);
}

/* The poll hook (qh_set_poll): while a cell runs, its output so far goes
 * out and ended futures update their displays. */
static void poll_cb(qh_State *Q, void *ud)
{
    (void)Q;
    Kernel *K = ud;
    flush_streams(K);
    check_pending(K);
}

/* ---------------------------------------------------------------- requests */

static void reply(Kernel *K, void *sock, const JmMsg *req, const char *type, const IoJson *c)
{
    send_msg(K, sock, req, type, c);
}

static void kernel_info(Kernel *K, void *sock, const JmMsg *req)
{
    JbArena a;
    jb_init(&a);
    IoJson *c = jb_obj(&a, 8);
    jb_put(c, "status", jb_cstr(&a, "ok"));
    jb_put(c, "protocol_version", jb_cstr(&a, "5.3"));
    jb_put(c, "implementation", jb_cstr(&a, "qh"));
    jb_put(c, "implementation_version", jb_cstr(&a, QH_VERSION));
    IoJson *li = jb_obj_at(&a, c, "language_info", 6);
    jb_put(li, "name", jb_cstr(&a, "qh"));
    jb_put(li, "version", jb_cstr(&a, QH_VERSION));
    jb_put(li, "mimetype", jb_cstr(&a, "text/x-qh"));
    jb_put(li, "file_extension", jb_cstr(&a, ".qh"));
    jb_put(li, "pygments_lexer", jb_cstr(&a, "python"));
    jb_put(li, "codemirror_mode", jb_cstr(&a, "python"));
    jb_put(c, "banner",
           jb_cstr(&a, "qh " QH_VERSION " — a hybrid quantum/classical scripting language"));
    jb_put(c, "debugger", io_json_bool(0));
    jb_arr_at(&a, c, "help_links", 0);
    reply(K, sock, req, "kernel_info_reply", c);
    jb_free(&a);
}

/* lines of text as a JSON array of strings (no empty last line) */
static void put_lines(JbArena *a, IoJson *c, const char *key, const char *t, size_t len)
{
    while (len && t[len - 1] == '\n') len--;
    size_t n = 1;
    for (size_t i = 0; i < len; i++) n += t[i] == '\n';
    IoJson *arr = jb_arr_at(a, c, key, len ? n : 0);
    size_t s = 0;
    for (size_t i = 0; len && i <= len; i++)
        if (i == len || t[i] == '\n') {
            jb_push(arr, jb_str(a, t + s, i - s));
            s = i + 1;
        }
}

/* an error: published (unless silent) and put in the reply */
static void cell_error(Kernel *K, IoJson *rc, JbArena *a, const char *ename, const char *evalue,
                       const char *text, size_t len)
{
    jb_put(rc, "status", jb_cstr(a, "error"));
    jb_put(rc, "ename", jb_cstr(a, ename));
    jb_put(rc, "evalue", jb_cstr(a, evalue));
    put_lines(a, rc, "traceback", text, len);
    if (K->silent) return;
    JbArena b;
    jb_init(&b);
    IoJson *c = jb_obj(&b, 3);
    jb_put(c, "ename", jb_cstr(&b, ename));
    jb_put(c, "evalue", jb_cstr(&b, evalue));
    put_lines(&b, c, "traceback", text, len);
    send_msg(K, K->iopub, K->cur, "error", c);
    jb_free(&b);
}

static void hist_add(Kernel *K, int n, const char *code)
{
    if (K->nhist == K->caphist) {
        K->caphist = K->caphist ? 2 * K->caphist : 32;
        K->hist = xrealloc(K->hist, K->caphist * sizeof *K->hist);
    }
    K->hist[K->nhist].n = n;
    K->hist[K->nhist++].code = xstrdup(code);
}

/* The request's user_expressions, each evaluated after the cell without
 * output: {name: {status, data: {text/plain}, metadata}} or the error. */
static void user_expressions(Kernel *K, const IoJson *ue, JbArena *a, IoJson *rc)
{
    size_t n = ue && ue->kind == IOJ_OBJECT ? ue->n : 0;
    IoJson *out = jb_obj_at(a, rc, "user_expressions", n);
    bool silent = K->silent;
    K->silent = true; /* what they print is not shown */
    for (size_t i = 0; i < n; i++) {
        IoJson *r = jb_obj_at(a, out, ue->keys[i], 5);
        const IoJson *code = &ue->items[i];
        if (code->kind != IOJ_STRING) {
            jb_put(r, "status", jb_cstr(a, "error"));
            jb_put(r, "ename", jb_cstr(a, "TypeError"));
            jb_put(r, "evalue", jb_cstr(a, "a user expression must be a string"));
            jb_arr_at(a, r, "traceback", 0);
            continue;
        }
        char *diag = NULL;
        size_t ndiag = 0;
        FILE *df = open_memstream(&diag, &ndiag);
        qh_Program *p = qh_compile_cell(K->Q, "<user expression>", code->str, code->len, ++K->cells,
                                        "a user expression", df ? df : stderr);
        if (df) fclose(df);
        K->capture = true;
        K->captured = NULL;
        qh_Outcome o = p ? qh_run_cell(K->Q, p, QH_SHOW | QH_KEEP_ERROR) : QH_FAILED;
        K->capture = false;
        flush_streams(K);
        if (p && o == QH_DONE) {
            jb_put(r, "status", jb_cstr(a, "ok"));
            put_data(a, r, K->captured ? K->captured : "", K->captured ? K->ncaptured : 0, NULL, 0);
        } else {
            size_t len = ndiag;
            char *t = p ? error_text(K, &len) : NULL;
            const char *text = p ? t : diag ? diag : "";
            jb_put(r, "status", jb_cstr(a, "error"));
            jb_put(r, "ename", jb_cstr(a, p ? "RuntimeError" : "SyntaxError"));
            jb_put(r, "evalue", jb_cstr(a, p ? qh_error_message(K->Q) : "invalid syntax"));
            put_lines(a, r, "traceback", text, len);
            free(t);
        }
        free(K->captured);
        K->captured = NULL;
        free(diag);
    }
    K->silent = silent;
}

/* Returns whether the cell failed and asked to stop on error (then the
 * execute requests already queued are aborted, as ipykernel does, so Run
 * All stops at the first error). */
static bool execute(Kernel *K, const JmMsg *req)
{
    const IoJson *rq = req->json[JM_CONTENT];
    const char *code = jm_str(rq, "code");
    if (!code) code = "";
    size_t codelen = 0;
    const IoJson *cj = jm_get(rq, "code");
    if (cj && cj->kind == IOJ_STRING) codelen = cj->len;
    K->silent = jm_bool(rq, "silent", false);
    bool store = !K->silent && jm_bool(rq, "store_history", true);
    if (store) K->count++;
    int cell = ++K->cells;
    char label[48], name[64];
    if (store)
        snprintf(label, sizeof label, "cell %d", K->count);
    else
        snprintf(label, sizeof label, "cell (%d)", cell);
    snprintf(name, sizeof name, "<%s>", label);
    if (!K->silent) {
        JbArena a;
        jb_init(&a);
        IoJson *c = jb_obj(&a, 2);
        jb_put(c, "code", jb_str(&a, code, codelen));
        jb_put(c, "execution_count", io_json_number(K->count));
        send_msg(K, K->iopub, req, "execute_input", c);
        jb_free(&a);
        K->cell = req;
        if (K->nlate) send_late(K);
    }
    if (store) hist_add(K, K->count, code);
    JbArena a;
    jb_init(&a);
    IoJson *rc = jb_obj(&a, 8);
    jb_put(rc, "execution_count", io_json_number(K->count));
    bool failed = false;
    char *diag = NULL;
    size_t ndiag = 0;
    FILE *df = open_memstream(&diag, &ndiag);
    qh_Program *p = qh_compile_cell(K->Q, name, code, codelen, cell, label, df ? df : stderr);
    if (df) fclose(df);
    if (!p) {
        const char *msg = diag ? diag : "";
        const char *colon = strstr(msg, "error: ");
        char evalue[300];
        snprintf(evalue, sizeof evalue, "%s", colon ? colon + 7 : msg);
        evalue[strcspn(evalue, "\n")] = 0;
        cell_error(K, rc, &a, "SyntaxError", evalue, msg, ndiag);
        failed = true;
    } else {
        if (ndiag) seg_add(K, true, diag, ndiag); /* warnings: the cell's first stderr */
        atomic_store(&K->running, 1);
        qh_want_poll(K->Q, true);
        qh_Outcome out = qh_run_cell(K->Q, p, QH_SHOW | QH_KEEP_ERROR);
        atomic_store(&K->running, 0);
        qh_want_poll(K->Q, K->npend > 0);
        flush_streams(K);
        if (out == QH_DONE)
            jb_put(rc, "status", jb_cstr(&a, "ok"));
        else {
            failed = true;
            size_t len;
            char *t = error_text(K, &len);
            if (out == QH_FAILED)
                cell_error(K, rc, &a, "RuntimeError", qh_error_message(K->Q), t, len);
            else if (!len)
                cell_error(K, rc, &a, "KeyboardInterrupt", "interrupted", "interrupted", 11);
            else
                cell_error(K, rc, &a, "KeyboardInterrupt", "interrupted", t, len);
            free(t);
            if (out == QH_STOPPED) atomic_store(&K->stop, 1);
        }
    }
    free(diag);
    user_expressions(K, jm_get(rq, "user_expressions"), &a, rc);
    jb_arr_at(&a, rc, "payload", 0);
    reply(K, K->shell, req, "execute_reply", rc);
    jb_free(&a);
    bool stop = failed && !K->silent && jm_bool(rq, "stop_on_error", true);
    K->silent = false;
    return stop;
}

/* a cursor position in code points to a byte offset */
static size_t byte_offset(const char *s, size_t len, double cp)
{
    size_t i = 0;
    /* a client's number: clamped before it is converted (nan, 1e300) */
    long want = cp > 0 ? (cp < (double)len ? (long)cp : (long)len) : 0;
    for (long c = 0; i < len && c < want; c++) {
        i++;
        while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
    }
    return i;
}

static size_t code_points(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
}

/* the request's code and its cursor as a byte offset */
static const char *code_cursor(const JmMsg *req, size_t *len, size_t *cur)
{
    const IoJson *cj = jm_get(req->json[JM_CONTENT], "code");
    if (!cj || cj->kind != IOJ_STRING) {
        *len = *cur = 0;
        return "";
    }
    *len = cj->len;
    double cp = jm_num(req->json[JM_CONTENT], "cursor_pos", (double)code_points(cj->str, cj->len));
    *cur = byte_offset(cj->str, cj->len, cp);
    return cj->str;
}

typedef struct Cands {
    JbArena *a;
    IoJson *arr;
    char **seen;
    size_t n, cap;
} Cands;

static void cand(const char *name, void *ud)
{
    Cands *c = ud;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->seen[i], name) == 0) return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->seen = xrealloc(c->seen, c->cap * sizeof *c->seen);
    }
    c->seen[c->n++] = xstrdup(name);
}

static void complete(Kernel *K, const JmMsg *req)
{
    size_t len, cur;
    const char *code = code_cursor(req, &len, &cur);
    size_t s = cur;
    while (s > 0 && word_char(code[s - 1])) s--;
    char *word = xmalloc(cur - s + 1);
    memcpy(word, code + s, cur - s);
    word[cur - s] = 0;
    JbArena a;
    jb_init(&a);
    Cands c = { &a, NULL, NULL, 0, 0 };
    if (*word || s == cur) qh_complete(K->Q, word, cand, &c);
    IoJson *rc = jb_obj(&a, 5);
    IoJson *m = jb_arr_at(&a, rc, "matches", c.n);
    for (size_t i = 0; i < c.n; i++) {
        jb_push(m, jb_cstr(&a, c.seen[i]));
        free(c.seen[i]);
    }
    free(c.seen);
    jb_put(rc, "cursor_start", io_json_number((double)code_points(code, s)));
    jb_put(rc, "cursor_end", io_json_number((double)code_points(code, cur)));
    jb_obj_at(&a, rc, "metadata", 0);
    jb_put(rc, "status", jb_cstr(&a, "ok"));
    reply(K, K->shell, req, "complete_reply", rc);
    jb_free(&a);
    free(word);
}

static void inspect(Kernel *K, const JmMsg *req)
{
    size_t len, cur;
    const char *code = code_cursor(req, &len, &cur);
    size_t s = cur, e = cur;
    /* the name at the cursor, or the one just before an opening parenthesis */
    if ((s == 0 || !word_char(code[s - 1])) && s > 0 && code[s - 1] == '(') s = e = s - 1;
    while (s > 0 && word_char(code[s - 1])) s--;
    while (e < len && word_char(code[e])) e++;
    char *name = xmalloc(e - s + 1);
    memcpy(name, code + s, e - s);
    name[e - s] = 0;
    char *text = e > s ? qh_describe(K->Q, name) : NULL;
    Value v;
    if (!text && e > s && qh_get_global(K->Q, name, &v)) {
        /* a builtin (not hidden by a global): its row of the reference */
        if (v.t == T_BUILTIN)
            for (const BuiltinDoc *d = builtin_docs; d->name; d++)
                if (strcmp(d->name, name) == 0) {
                    size_t n = strlen(d->sig) + strlen(d->doc) + 2;
                    text = xmalloc(n);
                    snprintf(text, n, "%s\n%s", d->sig, d->doc);
                    break;
                }
        decref(v);
    }
    JbArena a;
    jb_init(&a);
    IoJson *rc = jb_obj(&a, 4);
    jb_put(rc, "status", jb_cstr(&a, "ok"));
    jb_put(rc, "found", io_json_bool(text != NULL));
    IoJson *d = jb_obj_at(&a, rc, "data", 1);
    if (text) jb_put(d, "text/plain", jb_cstr(&a, text));
    jb_obj_at(&a, rc, "metadata", 0);
    reply(K, K->shell, req, "inspect_reply", rc);
    jb_free(&a);
    free(text);
    free(name);
}

static void is_complete(Kernel *K, const JmMsg *req)
{
    const IoJson *cj = jm_get(req->json[JM_CONTENT], "code");
    int depth = 0;
    int st = cj && cj->kind == IOJ_STRING ? qh_entry_state(cj->str, cj->len, &depth) : QH_INVALID;
    JbArena a;
    jb_init(&a);
    IoJson *rc = jb_obj(&a, 2);
    jb_put(rc, "status",
           jb_cstr(&a, st == QH_COMPLETE     ? "complete"
                       : st == QH_INCOMPLETE ? "incomplete"
                                             : "invalid"));
    if (st == QH_INCOMPLETE) {
        char ind[64];
        int n = depth < 15 ? depth : 15;
        memset(ind, ' ', (size_t)n * 4);
        ind[n * 4] = 0;
        jb_put(rc, "indent", jb_cstr(&a, ind));
    }
    reply(K, K->shell, req, "is_complete_reply", rc);
    jb_free(&a);
}

/* a shell-style pattern (* and ?) against text */
static bool glob_match(const char *p, const char *t)
{
    if (!*p) return !*t;
    if (*p == '*') return glob_match(p + 1, t) || (*t && glob_match(p, t + 1));
    if (!*t) return false;
    return (*p == '?' || *p == *t) && glob_match(p + 1, t + 1);
}

static void history(Kernel *K, const JmMsg *req)
{
    const IoJson *rq = req->json[JM_CONTENT];
    const char *access = jm_str(rq, "hist_access_type");
    if (!access) access = "tail";
    size_t from = 0, to = K->nhist;
    char pat[512] = "";
    if (strcmp(access, "tail") == 0) {
        double n = jm_num(rq, "n", 10);
        if (n >= 0 && n < (double)K->nhist) from = K->nhist - (size_t)n;
    } else if (strcmp(access, "range") == 0) {
        /* lines of session 0 (this one): start <= line < stop */
        double start = jm_num(rq, "start", 0), stop = jm_num(rq, "stop", 1e18);
        while (from < K->nhist && K->hist[from].n < start) from++;
        to = from;
        while (to < K->nhist && K->hist[to].n < stop) to++;
    } else if (strcmp(access, "search") == 0) {
        const char *p = jm_str(rq, "pattern");
        snprintf(pat, sizeof pat, "%s", p ? p : "*");
    }
    JbArena a;
    jb_init(&a);
    IoJson *rc = jb_obj(&a, 2);
    jb_put(rc, "status", jb_cstr(&a, "ok"));
    IoJson *h = jb_arr_at(&a, rc, "history", to - from);
    for (size_t i = from; i < to; i++) {
        if (*pat && !glob_match(pat, K->hist[i].code)) continue;
        IoJson *item = jb_push_arr(&a, h, 3);
        jb_push(item, io_json_number(0));
        jb_push(item, io_json_number(K->hist[i].n));
        jb_push(item, jb_cstr(&a, K->hist[i].code));
    }
    reply(K, K->shell, req, "history_reply", rc);
    jb_free(&a);
}

static void comm_info(Kernel *K, const JmMsg *req)
{
    JbArena a;
    jb_init(&a);
    IoJson *rc = jb_obj(&a, 2);
    jb_put(rc, "status", jb_cstr(&a, "ok"));
    jb_obj_at(&a, rc, "comms", 0);
    reply(K, K->shell, req, "comm_info_reply", rc);
    jb_free(&a);
}

/* A shutdown request (control, or shell for older clients): replied to,
 * the running cell interrupted, the interpreter's thread woken. */
static void shutdown_req(Kernel *K, void *sock, const JmMsg *req)
{
    bool restart = jm_bool(req->json[JM_CONTENT], "restart", false);
    JbArena a;
    jb_init(&a);
    IoJson *rc = jb_obj(&a, 2);
    jb_put(rc, "status", jb_cstr(&a, "ok"));
    jb_put(rc, "restart", io_json_bool(restart));
    reply(K, sock, req, "shutdown_reply", rc);
    jb_free(&a);
    atomic_store(&K->restart, restart);
    atomic_store(&K->stop, 1);
    if (atomic_load(&K->running)) qh_interrupt(K->Q);
}

static void interrupt_req(Kernel *K, const JmMsg *req)
{
    if (atomic_load(&K->running)) qh_interrupt(K->Q);
    JbArena a;
    jb_init(&a);
    IoJson *rc = jb_obj(&a, 1);
    jb_put(rc, "status", jb_cstr(&a, "ok"));
    reply(K, K->control, req, "interrupt_reply", rc);
    jb_free(&a);
}

static void shell_request(Kernel *K, const JmMsg *m, bool aborting);

/* After a failed cell: the execute requests already waiting get an
 * "aborted" reply; other requests are handled as usual. Why read them all
 * before answering any: a client that sends its next request on seeing an
 * "aborted" reply (the last of Run All's cells answered, the next cell
 * sent) must find it run, not aborted with the cells that were queued. */
static void abort_queued(Kernel *K)
{
    JmMsg *q = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        zmq_pollitem_t it = { K->shell, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 0) <= 0) break;
        JmMsg m;
        if (!recv_msg(K, K->shell, &m)) continue;
        if (n == cap) q = xrealloc(q, (cap = cap ? 2 * cap : 8) * sizeof *q);
        q[n++] = m;
    }
    for (size_t i = 0; i < n; i++) {
        shell_request(K, &q[i], true);
        jm_msg_free(&q[i]);
    }
    free(q);
}

static void aborted(Kernel *K, const JmMsg *req)
{
    JbArena a;
    jb_init(&a);
    IoJson *rc = jb_obj(&a, 2);
    jb_put(rc, "status", jb_cstr(&a, "aborted"));
    jb_put(rc, "execution_count", io_json_number(K->count));
    reply(K, K->shell, req, "execute_reply", rc);
    jb_free(&a);
}

/* One shell request, on the interpreter's thread, between busy and idle
 * (aborting: after a failed cell, an execute request is refused). */
static void shell_request(Kernel *K, const JmMsg *m, bool aborting)
{
    K->cur = m;
    publish_status(K, m, "busy");
    const char *t = m->type;
    bool stop = false;
    if (strcmp(t, "execute_request") == 0 && aborting)
        aborted(K, m);
    else if (strcmp(t, "execute_request") == 0)
        stop = execute(K, m);
    else if (strcmp(t, "kernel_info_request") == 0)
        kernel_info(K, K->shell, m);
    else if (strcmp(t, "complete_request") == 0)
        complete(K, m);
    else if (strcmp(t, "inspect_request") == 0)
        inspect(K, m);
    else if (strcmp(t, "is_complete_request") == 0)
        is_complete(K, m);
    else if (strcmp(t, "history_request") == 0)
        history(K, m);
    else if (strcmp(t, "comm_info_request") == 0)
        comm_info(K, m);
    else if (strcmp(t, "shutdown_request") == 0)
        shutdown_req(K, K->shell, m);
    else if (strncmp(t, "comm_", 5) != 0)
        log_line("unknown shell message type '%s' (ignored)", t);
    check_pending(K);
    /* before this request's idle, as ipykernel: a client that sends its next
     * cell on seeing idle is not aborted, Run All's queued cells are */
    if (stop) abort_queued(K);
    publish_status(K, m, "idle");
    K->cur = K->cell = NULL;
}

/* ---------------------------------------------------------------- threads */

/* The heartbeat: every message comes back as it is. */
static void *heartbeat(void *p)
{
    Kernel *K = p;
    for (;;) {
        JmFrame *f;
        size_t n;
        if (!recv_frames(K->hb, &f, &n)) {
            if (zmq_errno() == EINTR) continue;
            break; /* ETERM: the context ends */
        }
        send_frames(K->hb, f, n);
        jm_frames_free(f, n);
    }
    return NULL;
}

/* The control channel: answered at once, even while a cell runs. */
static void *control(void *p)
{
    Kernel *K = p;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (!atomic_load(&K->stop)) {
        zmq_pollitem_t it = { K->control, 0, ZMQ_POLLIN, 0 };
        int r = zmq_poll(&it, 1, 100);
        if (r < 0 && zmq_errno() == ETERM) break;
        if (r <= 0) continue;
        JmMsg m;
        if (!recv_msg(K, K->control, &m)) continue;
        publish_status(K, &m, "busy");
        if (strcmp(m.type, "interrupt_request") == 0)
            interrupt_req(K, &m);
        else if (strcmp(m.type, "shutdown_request") == 0)
            shutdown_req(K, K->control, &m);
        else if (strcmp(m.type, "kernel_info_request") == 0)
            kernel_info(K, K->control, &m);
        else
            log_line("unknown control message type '%s' (ignored)", m.type);
        publish_status(K, &m, "idle");
        jm_msg_free(&m);
        if (atomic_load(&K->stop)) zmq_send(K->wake_tx, "", 0, ZMQ_DONTWAIT);
    }
    return NULL;
}

/* SIGINT (interrupt_mode "signal", or Ctrl-C in the terminal that started
 * the kernel): the running cell as the REPL's Ctrl-C; nothing when idle. */
static void on_sigint(int sig)
{
    if (signal_forward(sig)) return;
    Kernel *K = sig_kernel;
    if (K && atomic_load(&K->running)) qh_interrupt(K->Q);
}

/* ---------------------------------------------------------------- start and end */

static void *bind_socket(Kernel *K, int type, const char *transport, const char *ip, double port,
                         bool *ok)
{
    void *s = zmq_socket(K->ctx, type);
    if (!s) {
        *ok = false;
        return NULL;
    }
    int linger = 1000;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    char addr[300];
    if (strcmp(transport, "ipc") == 0)
        snprintf(addr, sizeof addr, "ipc://%s-%.0f", ip, port);
    else
        snprintf(addr, sizeof addr, "%s://%s:%.0f", transport, ip, port);
    if (zmq_bind(s, addr) != 0) {
        fprintf(stderr, "qh kernel: cannot bind %s: %s\n", addr, zmq_strerror(zmq_errno()));
        *ok = false;
    }
    return s;
}

static bool open_sockets(Kernel *K, const IoJson *cf)
{
    const char *transport = jm_str(cf, "transport"), *ip = jm_str(cf, "ip");
    if (!transport) transport = "tcp";
    if (!ip) ip = "127.0.0.1";
    bool ok = true;
    K->ctx = zmq_ctx_new();
    K->shell = bind_socket(K, ZMQ_ROUTER, transport, ip, jm_num(cf, "shell_port", 0), &ok);
    K->control = bind_socket(K, ZMQ_ROUTER, transport, ip, jm_num(cf, "control_port", 0), &ok);
    K->iopub = bind_socket(K, ZMQ_PUB, transport, ip, jm_num(cf, "iopub_port", 0), &ok);
    K->stdin_sock = bind_socket(K, ZMQ_ROUTER, transport, ip, jm_num(cf, "stdin_port", 0), &ok);
    K->hb = bind_socket(K, ZMQ_REP, transport, ip, jm_num(cf, "hb_port", 0), &ok);
    K->wake_rx = zmq_socket(K->ctx, ZMQ_PAIR);
    K->wake_tx = zmq_socket(K->ctx, ZMQ_PAIR);
    char addr[80];
    snprintf(addr, sizeof addr, "inproc://qh-wake-%s", K->session);
    if (zmq_bind(K->wake_rx, addr) != 0 || zmq_connect(K->wake_tx, addr) != 0) ok = false;
    return ok;
}

static void close_sockets(Kernel *K)
{
    void **all[] = { &K->shell, &K->control, &K->iopub,  &K->stdin_sock,
                     &K->hb,    &K->wake_rx, &K->wake_tx };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (*all[i]) {
            zmq_close(*all[i]);
            *all[i] = NULL;
        }
}

static void make_session(Kernel *K)
{
    unsigned char r[16] = { 0 };
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(r, 1, sizeof r, f) != sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
        memcpy(r, &x, sizeof x);
    }
    if (f) fclose(f);
    for (int i = 0; i < 16; i++) snprintf(K->session + 2 * i, 3, "%02x", r[i]);
}

/* The connection file's JSON (NULL after a message). */
static IoJson *read_connection(const char *path)
{
    char err[600];
    size_t len;
    char *text = io_read_file(path, &len, err, sizeof err);
    if (!text) {
        fprintf(stderr, "qh: %s\n", err);
        return NULL;
    }
    IoJson *j = io_json_parse(text, len, err, sizeof err);
    free(text);
    if (!j || j->kind != IOJ_OBJECT) {
        fprintf(stderr, "qh: '%s': %s\n", path, j ? "not a JSON object" : err);
        if (j) io_json_free(j);
        return NULL;
    }
    return j;
}

int kernel_run(qh_Config *cfg, const char *connection_file)
{
    IoJson *cf = read_connection(connection_file);
    if (!cf) return 1;
    Kernel *K = xcalloc(1, sizeof *K);
    make_session(K);
    char err[300];
    const IoJson *kj = jm_get(cf, "key");
    K->key = jm_key_new(jm_str(cf, "signature_scheme"), kj && kj->str ? kj->str : "",
                        kj && kj->kind == IOJ_STRING ? kj->len : 0, err, sizeof err);
    if (!K->key) {
        fprintf(stderr, "qh: '%s': %s\n", connection_file, err);
        io_json_free(cf);
        free(K);
        return 1;
    }
    pthread_mutex_init(&K->io_mu, NULL);
    pthread_mutex_init(&K->out_mu, NULL);
    bool ok = open_sockets(K, cf);
    io_json_free(cf);
    if (!ok) {
        close_sockets(K);
        zmq_ctx_term(K->ctx);
        jm_key_free(K->key);
        free(K);
        return 1;
    }
    cookie_io_functions_t outf = { NULL, out_write, NULL, NULL };
    cookie_io_functions_t errf = { NULL, err_write, NULL, NULL };
    K->out = fopencookie(K, "w", outf);
    K->err = fopencookie(K, "w", errf);
    setvbuf(K->out, NULL, _IONBF, 0);
    setvbuf(K->err, NULL, _IONBF, 0);
    cfg->out = K->out;
    cfg->err = K->err;
    cfg->handle_sigint = false;
    K->Q = qh_open(cfg);
    qh_set_show(K->Q, show, K);
    qh_set_poll(K->Q, poll_cb, K);
    qh_set_input(K->Q, kernel_input, K);
    sig_kernel = K;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    pthread_t hb_th, ctl_th;
    pthread_create(&hb_th, NULL, heartbeat, K);
    pthread_create(&ctl_th, NULL, control, K);
    publish_status(K, NULL, "starting");
    while (!atomic_load(&K->stop) && !qh_ended(K->Q)) {
        zmq_pollitem_t it[2] = { { K->shell, 0, ZMQ_POLLIN, 0 }, { K->wake_rx, 0, ZMQ_POLLIN, 0 } };
        int r = zmq_poll(it, 2, K->npend ? 20 : 500);
        if (r < 0 && zmq_errno() != EINTR) break;
        if (K->npend) check_pending(K);
        if (r <= 0) continue;
        if (it[1].revents & ZMQ_POLLIN) {
            char junk[8];
            zmq_recv(K->wake_rx, junk, sizeof junk, ZMQ_DONTWAIT);
        }
        if (it[0].revents & ZMQ_POLLIN) {
            JmMsg m;
            if (recv_msg(K, K->shell, &m)) {
                shell_request(K, &m, false);
                jm_msg_free(&m);
            }
        }
    }
    atomic_store(&K->stop, 1);
    pthread_join(ctl_th, NULL);
    drop_displays(K);
    /* the calls still running are cancelled: the kernel ends now */
    qh_interrupt(K->Q);
    qh_close(K->Q, 1);
    sig_kernel = NULL;
    signal(SIGINT, SIG_DFL);
    zmq_ctx_shutdown(K->ctx);
    pthread_join(hb_th, NULL);
    close_sockets(K);
    zmq_ctx_term(K->ctx);
    fclose(K->out);
    fclose(K->err);
    for (size_t i = 0; i < K->nsegs; i++) free(K->segs[i].p);
    free(K->segs);
    for (size_t i = 0; i < K->nhist; i++) free(K->hist[i].code);
    free(K->hist);
    jm_key_free(K->key);
    pthread_mutex_destroy(&K->io_mu);
    pthread_mutex_destroy(&K->out_mu);
    free(K);
    return 0;
}

/* ---------------------------------------------------------------- the kernel spec */


static bool mkdirs(const char *path)
{
    char buf[4300];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) return false;
            *p = '/';
        }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

static bool write_text(const char *dir, const char *name, const char *text)
{
    char path[4400], err[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (io_write_file(path, text, strlen(text), 0, err, sizeof err) == 0) return true;
    fprintf(stderr, "qh: %s\n", err);
    return false;
}

int kernel_install(const char *where, const char *dir)
{
    char base[4096];
    if (!where)
        snprintf(base, sizeof base, "/usr/local/share/jupyter");
    else if (strcmp(where, "--user") == 0) {
        const char *d = getenv("JUPYTER_DATA_DIR"), *x = getenv("XDG_DATA_HOME"),
                   *home = getenv("HOME");
        if (d && *d)
            snprintf(base, sizeof base, "%s", d);
        else if (x && *x)
            snprintf(base, sizeof base, "%s/jupyter", x);
        else if (home && *home)
            snprintf(base, sizeof base, "%s/.local/share/jupyter", home);
        else {
            fprintf(stderr, "qh: --install-kernel --user: HOME is not set\n");
            return 1;
        }
    } else
        snprintf(base, sizeof base, "%s/share/jupyter", dir);
    char kdir[4200];
    snprintf(kdir, sizeof kdir, "%s/kernels/qh", base);
    if (!mkdirs(kdir)) {
        fprintf(stderr, "qh: cannot make '%s': %s\n", kdir, strerror(errno));
        return 1;
    }
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "qh: cannot find the qh program: %s\n", strerror(errno));
        return 1;
    }
    exe[n] = 0;
    JbArena a;
    jb_init(&a);
    IoJson *spec = jb_obj(&a, 5);
    IoJson *argv = jb_arr_at(&a, spec, "argv", 3);
    jb_push(argv, jb_cstr(&a, exe));
    jb_push(argv, jb_cstr(&a, "--kernel"));
    jb_push(argv, jb_cstr(&a, "{connection_file}"));
    jb_put(spec, "display_name", jb_cstr(&a, "qh"));
    jb_put(spec, "language", jb_cstr(&a, "qh"));
    jb_put(spec, "interrupt_mode", jb_cstr(&a, "message"));
    jb_obj_at(&a, spec, "metadata", 0);
    char err[100];
    char *text = io_json_dump(spec, 2, NULL, err, sizeof err);
    jb_free(&a);
    size_t tl = strlen(text);
    text = xrealloc(text, tl + 2);
    memcpy(text + tl, "\n", 2);
    bool ok =
        write_text(kdir, "kernel.json", text) && write_text(kdir, "logo-svg.svg", kernel_logo_svg);
    free(text);
    if (!ok) return 1;
    printf("installed the qh kernel in %s\n", kdir);
    return 0;
}

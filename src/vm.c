/* vm.c — a VM's life (its value stack, the C stack guard) and runtime
 * errors: the message, where it happened, the traceback, Ctrl-C. Knows
 * values, the AST and diagnostics; nothing of evaluation. */
#include "vm.h"
#include "qh_assert.h"
#include "diag.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define STACK_VALUES (1u << 18)
#define MAX_DEPTH    2500

/* A worker runs one task VM at a time: its value stack is kept for the
 * next task on the same thread instead of being mapped afresh each time.
 * Per-thread by nature (a VM lives for one task, the thread for many);
 * the key frees it when the thread ends. */
static _Thread_local Value *spare_stack;
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static void spare_free(void *p) { free(p); }
static void spare_init(void) { pthread_key_create(&spare_key, spare_free); }

/* The lowest usable address of the calling thread's stack (it grows down),
 * asked once per thread; NULL if the system cannot say. */
static _Thread_local char *tl_stack_low;
static _Thread_local bool tl_stack_known;
static char *thread_stack_low(void)
{
    if (tl_stack_known) return tl_stack_low;
    tl_stack_known = true;
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return NULL;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_attr_getstack(&a, &addr, &size) == 0 && addr && size) {
        size_t guard = 0;
        pthread_attr_getguardsize(&a, &guard);
        tl_stack_low = (char *)addr + guard;
    }
    pthread_attr_destroy(&a);
    return tl_stack_low;
}

/* when the stack cannot be asked for: what the thread was given */
static size_t fallback_stack(bool is_task)
{
    if (is_task) return 64u << 20;
    struct rlimit rl;
    size_t lim = 8u << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) lim = rl.rlim_cur;
    return lim;
}

void vm_init(VM *vm, Interp *in, bool is_task)
{
    /* everything zero but the error record's buffers (kilobytes, written
     * before they are read): a task's VM is made per call */
    memset(vm, 0, offsetof(VM, err));
    memset((char *)vm + offsetof(VM, err) + sizeof vm->err, 0,
           sizeof *vm - offsetof(VM, err) - sizeof vm->err);
    vm->err.msg[0] = 0;
    vm->err.src = NULL;
    vm->err.line = vm->err.col = 0;
    vm->err.ntb = vm->err.dropped = 0;
    vm->err.interrupted = false;
    vm->in = in;
    vm->is_task = is_task;
    vm->cap = STACK_VALUES;
    if (spare_stack) {
        vm->stack = spare_stack;
        spare_stack = NULL;
        pthread_setspecific(spare_key, NULL);
    } else
        vm->stack = xmalloc(vm->cap * sizeof(Value));
    vm->max_depth = MAX_DEPTH;
    vm->watch_interrupt = !is_task;
    vm->la_on = !is_task && !in->sync && !in->no_lookahead;
    char here;
    vm->stack_base = &here;
    /* what is left of this thread's own stack, whichever thread it is (a
     * task also runs on the main thread: under --sync, or when the program
     * needs a queued call's value), less room for the deepest non-recursive
     * work below an evaluator frame (BLAS, printing, the simulator) */
    char *low = thread_stack_low();
    size_t left = low && &here > low ? (size_t)(&here - low) : fallback_stack(is_task);
    vm->stack_limit = left > (2u << 20) ? left - (1u << 20) : left / 2;
    vm->ret = v_nil();
}

void vm_free(VM *vm)
{
    qh_assert(vm->sp <= vm->cap);
    while (vm->sp) decref(vm->stack[--vm->sp]);
    decref(vm->ret);
    vm->ret = v_nil();
    if (vm->is_task && !spare_stack) {
        spare_stack = vm->stack;
        /* freed when the thread ends */
        pthread_once(&spare_once, spare_init);
        pthread_setspecific(spare_key, spare_stack);
    } else
        free(vm->stack);
    vm->stack = NULL;
}

void vm_thread_cleanup(void)
{
    free(spare_stack);
    spare_stack = NULL;
    pthread_once(&spare_once, spare_init);
    pthread_setspecific(spare_key, NULL);
}

/* ---------------------------------------------------------------- errors */

const Source *vm_source(VM *vm)
{
    if (vm->frame && vm->frame->p) return vm->frame->p->mod->src;
    if (vm->top_src) return vm->top_src;
    return vm->mod ? vm->mod->info->src : NULL;
}

static const char *cur_fn_name(VM *vm)
{
    if (vm->frame && vm->frame->p) return vm->frame->p->name;
    if (vm->mod && vm->mod->name && strcmp(vm->mod->name, "__main__") != 0) return vm->mod->name;
    return "<main>";
}

Value vm_error(VM *vm, const Node *n, const char *fmt, ...)
{
    VMError *e = &vm->err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->src = vm_source(vm);
    e->line = n ? n->line : vm->cur_line;
    e->col = n ? n->col : 1;
    e->ntb = 0;
    e->dropped = 0;
    e->interrupted = false;
    e->chained = false;
    e->tb[e->ntb++] = (TraceEnt){ e->src, e->line, cur_fn_name(vm) };
    return v_exc();
}

Value vm_error_from(VM *vm, const Node *n, const char *who, const char *err)
{
    size_t k = strlen(who);
    if (k > 2 && who[k - 2] == '(' && who[k - 1] == ')') k -= 2; /* "probs()" names "probs" */
    if (strncmp(err, who, k) == 0) {
        const char *r = err + k;
        if (r[0] == '(' && r[1] == ')') r += 2;
        if (r[0] == ':') {
            r++;
            while (*r == ' ') r++;
            err = r;
        }
    }
    return vm_error(vm, n, "%s: %s", who, err);
}

Value vm_oom(VM *vm, const Node *n) { return vm_error(vm, n, "out of memory"); }

Value vm_interrupted(VM *vm, const Node *n)
{
    vm_error(vm, n, "interrupted");
    vm->err.interrupted = true;
    return v_exc();
}

/* adds the caller's line as the error leaves a call */
void vm_tb_push(VM *vm, const Node *site)
{
    VMError *e = &vm->err;
    qh_assert(e->ntb >= 1); /* an error was raised (vm_error) before it leaves a call */
    TraceEnt t = { vm_source(vm), site ? site->line : 0, cur_fn_name(vm) };
    if (e->ntb < (int)(sizeof e->tb / sizeof e->tb[0]))
        e->tb[e->ntb++] = t;
    else {
        e->dropped++;
        e->tb[e->ntb - 1] = t;
    }
}

void vm_print_error(VM *vm, FILE *out)
{
    VMError *e = &vm->err;
    qh_assert(e->ntb >= 1 && e->ntb <= (int)(sizeof e->tb / sizeof e->tb[0]) && e->dropped >= 0);
    diag_print(out, e->src, e->line, e->col, "error", e->msg);
    if (e->ntb > 1 || e->dropped) {
        fprintf(out, "traceback (most recent call last):\n");
        for (int i = e->ntb - 1; i >= 0; i--) {
            if (i == 0 && e->dropped) fprintf(out, "  ... %d more calls ...\n", e->dropped);
            fprintf(out, "  %s:%d: in %s\n", e->tb[i].src ? e->tb[i].src->name : "?", e->tb[i].line,
                    e->tb[i].fn);
        }
    }
}

bool vm_check_interrupt(VM *vm)
{
    /* the main program between two steps (not evaluating ahead, inside a
     * differentiation or a quantum function run here): a host's turn */
    if (!vm->is_task && !vm->la_sandbox && !vm->ad && !vm->q && vm->in->hooks.poll &&
        atomic_load_explicit(&vm->in->poll, memory_order_relaxed))
        vm->in->hooks.poll(vm);
    if ((vm->watch_interrupt && atomic_load_explicit(&vm->in->interrupt, memory_order_relaxed)) ||
        (vm->cancel && atomic_load_explicit(vm->cancel, memory_order_relaxed))) {
        vm_interrupted(vm, NULL);
        return true;
    }
    return false;
}

bool vm_write_out(VM *vm, const char *p, size_t n, bool flush, const Node *site)
{
    FILE *f = vm->in->out;
    errno = 0;
    if ((n == 0 || fwrite(p, 1, n, f) == n) && (!flush || fflush(f) == 0) && !ferror(f))
        return true;
    int e = errno ? errno : EIO;
    clearerr(f); /* a caught error: later writes try again */
    if (e == EPIPE) {
        vm->in->out_errno = EPIPE;
        vm_interrupted(vm, site);
        snprintf(vm->err.msg, sizeof vm->err.msg, "broken pipe");
        return false;
    }
    vm->in->out_lost = true;
    vm_error(vm, site, "cannot write to %s: %s", f == stdout ? "standard output" : "the output",
             strerror(e));
    return false;
}

int vm_stop_status(Interp *in)
{
    if (in->out_errno == EPIPE) return 128 + SIGPIPE;
    int t = atomic_load(&in->terminate); /* the signal that ended the run: SIGTERM or SIGHUP */
    if (t) return 128 + (t == SIGHUP ? SIGHUP : SIGTERM);
    return 130;
}

/* statevector.c — the life of a state and the team that splits big kernels.
 *
 * Allocation (64-byte aligned, failure is an error, never an abort), reset,
 * and SvTeam: persistent worker threads that take one "part" each of a
 * parallel-for, handed over with a generation counter (spin briefly, then
 * sleep on a condition variable) so no thread is created per gate.
 * Must not know about gates, observables or anything of the language.
 */
#include "sv_impl.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* ---- states ----------------------------------------------------------- */

/* Why: callers (the device pool) budget memory before they allocate. */
size_t sv_bytes(int nq)
{
    if (nq < 0 || nq >= (int)(sizeof(size_t) * 8) - 4) return SIZE_MAX;
    return (size_t)16 << nq;
}

/* Why: a device instance is born in |0..0>; asking for too much memory
   must come back as an error the language can report. */
int sv_init(SvState *s, int nq)
{
    memset(s, 0, sizeof *s);
    size_t bytes = sv_bytes(nq);
    if (bytes == SIZE_MAX) return -1;
    size_t alloc = bytes < 64 ? 64 : bytes;
    /* Big states: 2 MiB aligned so that they can live on transparent huge
       pages (madvise needs an aligned start): fewer TLB misses, and the
       strided gates see physically contiguous 2 MiB blocks. */
    size_t align = alloc >= ((size_t)4 << 20) ? ((size_t)2 << 20) : 64;
    void *p = NULL;
    if (posix_memalign(&p, align, alloc) != 0 || !p) return -1;
#ifdef MADV_HUGEPAGE
    if (align > 64) madvise(p, alloc, MADV_HUGEPAGE); /* a hint; may fail */
#endif
    s->nq = nq;
    s->dim = (size_t)1 << nq;
    s->amp = p;
    s->nthreads = 1;
    s->simd = SV_SIMD_AVX512;
    sv_reset(s);
    return 0;
}

/* Why: states are owned by the device pool, which frees them explicitly;
   harmless on a state whose sv_init failed. */
void sv_free(SvState *s)
{
    if (!s) return;
    free(s->amp);
    s->amp = NULL;
    s->dim = 0;
    s->nq = 0;
}

typedef struct ResetCtx {
    SvState *s;
} ResetCtx;

/* Zero one slice (first touch of a big state happens in parallel too). */
static void reset_part(void *ctx, int part, int nparts)
{
    SvState *s = ((ResetCtx *)ctx)->s;
    uint64_t a, b;
    sv_slice(s->dim, part, nparts, &a, &b);
    if (b > a) memset(s->amp + a, 0, (size_t)(b - a) * sizeof(cplx));
}

/* Why: the device pool reuses an instance for the next task. */
void sv_reset(SvState *s)
{
    if (!s || !s->amp) return;
    ResetCtx c = { s };
    sv_parallel(s, reset_part, &c);
    s->amp[0] = 1.0;
}

/* Why: the executor decides per task how many cores a state may use. */
void sv_set_threads(SvState *s, SvTeam *team, int nthreads)
{
    s->team = team;
    s->nthreads = (team && nthreads > 1) ? nthreads : 1;
}

/* ---- the team --------------------------------------------------------- */

/* A job is cut into parts (a few per thread) that participants claim one
   by one with a compare-and-swap on (generation, next part). The caller
   claims parts too, so a worker that is slow to wake (a busy machine) just
   finds fewer parts left instead of making everyone wait for it; results
   do not depend on who ran which part. */
struct SvTeam {
    int n; /* participants, caller included */
    pthread_t th[SV_MAX_TEAM];
    int started;
    pthread_mutex_t run; /* one user at a time */
    pthread_mutex_t mu;
    pthread_cond_t cv_start, cv_done;
    atomic_uint gen;     /* bumped per job */
    atomic_ullong claim; /* (gen << 32) | next unclaimed part */
    atomic_int done;     /* parts finished in the current job */
    atomic_int stop;
    SvPartFn fn; /* the job, written under mu */
    void *ctx;
    int nparts;
    atomic_llong spin_ns; /* fixed spin budget of idle workers; < 0: adaptive */
};

/* Parts of a big pass (sv_nparts): fixed, so results do not depend on how
   many threads run them; enough for a full team to balance its load. */
#define SV_FIXED_PARTS SV_MAX_TEAM

/* Be polite to the sibling hyperthread while spinning. */
static inline void cpu_relax(void)
{
#if SV_X86
    __builtin_ia32_pause();
#endif
}

/* The caller of a job spins this many pauses (about 100 us) for the last
   parts before it sleeps: parts take microseconds to milliseconds. */
#define SV_SPIN 1500

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Why: both the caller and the workers run parts of generation g until
   none is left; the last one to finish wakes a sleeping caller. */
static void run_parts(SvTeam *t, unsigned g, SvPartFn fn, void *ctx, int np)
{
    for (;;) {
        unsigned long long c = atomic_load(&t->claim);
        if ((unsigned)(c >> 32) != g || (int)(c & 0xffffffffu) >= np) return;
        if (!atomic_compare_exchange_weak(&t->claim, &c, c + 1)) continue;
        fn(ctx, (int)(c & 0xffffffffu), np);
        int done = atomic_fetch_add(&t->done, 1) + 1;
        sv_assert(done <= np); /* each part claimed once, by one participant */
        if (done == np) {
            pthread_mutex_lock(&t->mu);
            pthread_cond_signal(&t->cv_done);
            pthread_mutex_unlock(&t->mu);
        }
    }
}

/* The spin policy (tests/bench/README.md has the measurements). An idle
   worker first spins with pause for SV_SPIN_PAUSE, then keeps checking
   between sched_yield calls (its core stays awake, yet any runnable
   thread gets it at once), then sleeps on the condition variable. The
   default budget adapts to the program: gaps between the gates of one
   circuit are microseconds, gaps between calls are the classical work in
   between. A worker keeps a running average of its gaps over
   SV_SPIN_SHORT; while that average is under SV_SPIN_MAX it waits up to
   twice the average (calls that come a few milliseconds apart find it
   awake: no wake-up, no cold core), else only SV_SPIN_SHORT (long
   classical phases do not pay for spinning). sv_team_set_spin fixes the
   budget instead. */
#define SV_SPIN_PAUSE 50e-6
#define SV_SPIN_SHORT 200e-6
#define SV_SPIN_MAX   10e-3

static double spin_budget(const SvTeam *t, double long_gap)
{
    long long fixed = atomic_load_explicit(&t->spin_ns, memory_order_relaxed);
    if (fixed >= 0) return 1e-9 * (double)fixed;
    if (long_gap >= SV_SPIN_MAX) return SV_SPIN_SHORT;
    double b = 2 * long_gap;
    return b < SV_SPIN_SHORT ? SV_SPIN_SHORT : b > SV_SPIN_MAX ? SV_SPIN_MAX : b;
}

/* Why: a worker waits for the next generation (spinning, then asleep:
   see spin_budget), takes the job's description under the lock, claims
   parts. */
static void *worker_main(void *arg)
{
    SvTeam *t = arg;
    unsigned seen = 0;
    double long_gap = 1e30; /* average gap over SV_SPIN_SHORT; none yet */
    for (;;) {
        double budget = spin_budget(t, long_gap), t0 = mono_now();
        int yielding = 0;
        for (unsigned i = 1; budget > 0; i++) {
            if (atomic_load_explicit(&t->gen, memory_order_acquire) != seen ||
                atomic_load_explicit(&t->stop, memory_order_relaxed))
                break;
            if ((i & 63) == 0 || yielding) {
                double el = mono_now() - t0;
                if (el >= budget) break;
                yielding = el >= SV_SPIN_PAUSE;
            }
            if (yielding)
                sched_yield();
            else
                cpu_relax();
        }
        pthread_mutex_lock(&t->mu);
        while (atomic_load(&t->gen) == seen && !atomic_load(&t->stop))
            pthread_cond_wait(&t->cv_start, &t->mu);
        if (atomic_load(&t->stop)) {
            pthread_mutex_unlock(&t->mu);
            break;
        }
        seen = atomic_load(&t->gen);
        SvPartFn fn = t->fn;
        void *ctx = t->ctx;
        int np = t->nparts;
        pthread_mutex_unlock(&t->mu);
        double gap = mono_now() - t0;
        if (gap > SV_SPIN_SHORT) long_gap = long_gap > 1e29 ? gap : 0.5 * (long_gap + gap);
        run_parts(t, seen, fn, ctx, np);
    }
    return NULL;
}

/* Why: thread creation costs tens of microseconds; a team is made once
   (per executor worker or per program) and reused by every gate. */
SvTeam *sv_team_new(int nthreads)
{
    if (nthreads < 1) nthreads = 1;
    if (nthreads > SV_MAX_TEAM) nthreads = SV_MAX_TEAM;
    SvTeam *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->n = nthreads;
    pthread_mutex_init(&t->run, NULL);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv_start, NULL);
    pthread_cond_init(&t->cv_done, NULL);
    atomic_init(&t->gen, 0);
    atomic_init(&t->claim, 0);
    atomic_init(&t->done, 0);
    atomic_init(&t->stop, 0);
    atomic_init(&t->spin_ns, -1);
    for (int i = 1; i < nthreads; i++) {
        if (pthread_create(&t->th[i], NULL, worker_main, t) != 0) {
            sv_team_free(t); /* joins the ones already started */
            return NULL;
        }
        t->started = i;
    }
    return t;
}

/* Why: stop and join the workers (they may be asleep or spinning). */
void sv_team_free(SvTeam *t)
{
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    atomic_store(&t->stop, 1);
    pthread_cond_broadcast(&t->cv_start);
    pthread_mutex_unlock(&t->mu);
    for (int i = 1; i <= t->started; i++) pthread_join(t->th[i], NULL);
    pthread_cond_destroy(&t->cv_start);
    pthread_cond_destroy(&t->cv_done);
    pthread_mutex_destroy(&t->mu);
    pthread_mutex_destroy(&t->run);
    free(t);
}

/* Why: benchmarks compare spin budgets; the default (negative) is the
   adaptive policy of spin_budget. */
void sv_team_set_spin(SvTeam *t, double seconds)
{
    if (!t) return;
    long long ns = -1; /* the adaptive default */
    if (seconds >= 0) ns = (long long)((seconds > 10 ? 10 : seconds) * 1e9);
    atomic_store_explicit(&t->spin_ns, ns, memory_order_relaxed);
}

/* Participants, the caller included. */
int sv_team_size(const SvTeam *t) { return t ? t->n : 1; }

/* Why: reductions size their per-part buffers before the parallel-for.
   The count depends on the state's size only, never on the threads it
   may use: a reduction adds its parts' partial sums in part order, so its
   bits are the same whatever the team, the load or the executor's mode. */
int sv_nparts(const SvState *s) { return s->nq < SV_PAR_QUBITS ? 1 : SV_FIXED_PARTS; }

/* Why: every big pass (gates, reductions, reset) goes through here, so the
   serial/parallel decision lives in one place. Without a team the parts
   run one after another, in order. */
int sv_parallel(const SvState *s, SvPartFn fn, void *ctx)
{
    SvTeam *t = s->team;
    int np = sv_nparts(s);
    if (np <= 1 || !t || s->nthreads <= 1 || t->n <= 1) {
        for (int p = 0; p < np; p++) fn(ctx, p, np);
        return np;
    }
    pthread_mutex_lock(&t->run);
    pthread_mutex_lock(&t->mu);
    t->fn = fn;
    t->ctx = ctx;
    t->nparts = np;
    atomic_store(&t->done, 0);
    unsigned g = atomic_load(&t->gen) + 1;
    atomic_store(&t->claim, (unsigned long long)g << 32);
    atomic_store_explicit(&t->gen, g, memory_order_release);
    pthread_cond_broadcast(&t->cv_start);
    pthread_mutex_unlock(&t->mu);
    sv_assert(np > 1 && np <= SV_FIXED_PARTS);
    run_parts(t, g, fn, ctx, np);
    for (int i = 0; i < SV_SPIN && atomic_load(&t->done) < np; i++) cpu_relax();
    if (atomic_load(&t->done) < np) {
        pthread_mutex_lock(&t->mu);
        while (atomic_load(&t->done) < np) pthread_cond_wait(&t->cv_done, &t->mu);
        pthread_mutex_unlock(&t->mu);
    }
    sv_assert(atomic_load(&t->done) == np); /* every part ran before the job returns */
    pthread_mutex_unlock(&t->run);
    return np;
}

/* qblas.c — loads OpenBLAS at its first use (qblas.h says why) and hands
 * out its functions. State: the table, filled once under pthread_once, and
 * the thread count asked for before the load. Knows nothing of arrays,
 * values or quantum. */
#include "qblas.h"
#include "qh_assert.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static QBlas qblas_table; /* filled by load(), then read-only */
static pthread_once_t qblas_once = PTHREAD_ONCE_INIT;
static atomic_int qblas_state;           /* 0: not loaded, 1: loaded */
static atomic_int qblas_pending_threads; /* a count asked for before the load (0: none) */

/* the sonames Debian's libopenblas-dev links against, then the dev link */
static const char *const qblas_names[] = { "libopenblas.so.0", "libopenblas.so" };

static void *sym(void *h, const char *lib, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "qh: %s has no %s: %s\n", lib, name, dlerror());
        exit(1);
    }
    return p;
}

static void load(void)
{
    void *h = NULL;
    const char *lib = qblas_names[0];
    for (size_t i = 0; i < sizeof qblas_names / sizeof *qblas_names && !h; i++) {
        lib = qblas_names[i];
        h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) {
        fprintf(stderr, "qh: cannot load OpenBLAS (%s), needed for linear algebra: %s\n",
                qblas_names[0], dlerror());
        exit(1);
    }
    QBlas *t = &qblas_table;
    /* dlsym's void * to a function pointer: POSIX guarantees it works */
#define LOAD(field, name) *(void **)&t->field = sym(h, lib, name)
    LOAD(ddot, "cblas_ddot");
    LOAD(dgemm, "cblas_dgemm");
    LOAD(dgemv, "cblas_dgemv");
    LOAD(dnrm2, "cblas_dnrm2");
    LOAD(dznrm2, "cblas_dznrm2");
    LOAD(zdotu_sub, "cblas_zdotu_sub");
    LOAD(zgemm, "cblas_zgemm");
    LOAD(zgemv, "cblas_zgemv");
    LOAD(dsyevd, "dsyevd_");
    LOAD(zheevd, "zheevd_");
    LOAD(dgesv, "dgesv_");
    LOAD(zgesv, "zgesv_");
    LOAD(dgetrf, "dgetrf_");
    LOAD(zgetrf, "zgetrf_");
    LOAD(dgeev, "dgeev_");
    LOAD(zgeev, "zgeev_");
    LOAD(dgesdd, "dgesdd_");
    LOAD(zgesdd, "zgesdd_");
    LOAD(dgeqrf, "dgeqrf_");
    LOAD(zgeqrf, "zgeqrf_");
    LOAD(dorgqr, "dorgqr_");
    LOAD(zungqr, "zungqr_");
    LOAD(dgelsd, "dgelsd_");
    LOAD(set_num_threads, "openblas_set_num_threads");
    LOAD(get_num_threads, "openblas_get_num_threads");
#undef LOAD
    /* loaded, then the count asked for (one asked for meanwhile is applied
     * by qblas_set_threads itself, as it then sees the library loaded) */
    atomic_store(&qblas_state, 1);
    int n = atomic_load(&qblas_pending_threads);
    if (n > 0) t->set_num_threads(n);
}

const QBlas *qblas(void)
{
    if (!atomic_load_explicit(&qblas_state, memory_order_acquire)) pthread_once(&qblas_once, load);
    qh_assert(atomic_load(&qblas_state) == 1);
    return &qblas_table;
}

int qblas_loaded(void) { return atomic_load(&qblas_state); }

void qblas_set_threads(int n)
{
    if (n < 1) n = 1;
    atomic_store(&qblas_pending_threads, n);
    if (atomic_load(&qblas_state)) qblas_table.set_num_threads(n);
}

int qblas_threads(void) { return qblas()->get_num_threads(); }

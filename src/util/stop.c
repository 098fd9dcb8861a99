/* stop.c — the stop request the lower rooms poll (stop.h). */
#include "stop.h"

#include <stddef.h>

/* The interpreter's interrupt flag: a signal handler gets no context, so
 * the one flag a process's handler sets is named here, once. */
static const atomic_int *_Atomic stop_flag;

void qh_stop_watch(const atomic_int *flag) { atomic_store(&stop_flag, flag); }

bool qh_stop_requested(void)
{
    const atomic_int *f = atomic_load_explicit(&stop_flag, memory_order_relaxed);
    return f && atomic_load_explicit(f, memory_order_relaxed) != 0;
}

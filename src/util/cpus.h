/* cpus.h — how many CPUs this process may run on (its affinity mask, so
 * `taskset` and container limits are respected). Knows nothing else. */
#ifndef QH_CPUS_H
#define QH_CPUS_H

#include <sched.h>
#include <unistd.h>

static inline int qh_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

#endif

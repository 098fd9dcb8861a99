/* memlimit.h — how much memory this process may use: the tightest memory
 * limit of its OWN cgroup and of every ancestor up to the hierarchy's root
 * (cgroup v2 memory.max, v1 memory.limit_in_bytes; both where a hybrid
 * system mounts both), or physical memory when no limit is lower. Limits
 * at the mount root alone are not enough: in a container or a systemd
 * slice the process sits in a child cgroup whose limit is the one the
 * kernel enforces. Reads /proc/self/cgroup, /proc/self/mountinfo and the
 * cgroup files; knows nothing else. */
#ifndef QH_MEMLIMIT_H
#define QH_MEMLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct MemLimit {
    uint64_t bytes;   /* the limit */
    bool from_cgroup; /* a cgroup limit (else physical memory) */
    char file[1024];  /* the file the limit came from, or "" */
} MemLimit;

/* The limit of the calling process. */
void mem_limit(MemLimit *out);

/* The same, reading every absolute path below root ("" for the real
 * system) and taking phys as physical memory: tests build fake trees. */
void mem_limit_at(const char *root, uint64_t phys, MemLimit *out);

/* Physical memory (sysconf), or 0 if the system does not say. */
uint64_t mem_physical(void);

#endif

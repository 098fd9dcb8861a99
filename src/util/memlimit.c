/* memlimit.c — the memory limit of this process's own cgroup (v1 and v2),
 * walking up to the hierarchy's root; physical memory otherwise. See
 * memlimit.h. Knows /proc and the cgroup file names, nothing of qh. */
#include "memlimit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* v1 reports "no limit" as a huge page-rounded number (PAGE_COUNTER_MAX
 * pages); anything from 2^62 bytes up is no limit. */
#define NO_LIMIT ((uint64_t)1 << 62)

uint64_t mem_physical(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

/* The number at the start of a limit file; false when absent, "max" or
 * unlimited. */
static bool read_limit(const char *path, uint64_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char buf[64];
    bool ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!ok || buf[0] < '0' || buf[0] > '9') return false;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    if (*end != '\n' && *end != 0) return false;
    if (v >= NO_LIMIT) return false;
    *out = v;
    return true;
}

/* Takes the tighter of *best and the limit in dir/file. */
static void consider(const char *dir, const char *file, MemLimit *best)
{
    char path[1024];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path) return;
    uint64_t v;
    if (!read_limit(path, &v) || v >= best->bytes) return;
    best->bytes = v;
    best->from_cgroup = true;
    snprintf(best->file, sizeof best->file, "%s", path);
}

/* mountinfo escapes blanks and backslashes in paths as \ooo */
static void unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
            p[3] >= '0' && p[3] <= '7') {
            *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else
            *o++ = *p;
    }
    *o = 0;
}

/* Is `opt` one of the comma-separated words of `list`? */
static bool has_word(const char *list, const char *opt)
{
    size_t n = strlen(opt);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, opt, n) == 0) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

/* The cgroup at cgpath of a hierarchy mounted at mnt (showing its subtree
 * mroot): every level from the cgroup up to the mount point. */
static void walk(const char *root, const char *mnt, const char *mroot, const char *cgpath,
                 const char *file, MemLimit *best)
{
    const char *rel = cgpath;
    if (strcmp(mroot, "/") != 0) {
        size_t n = strlen(mroot);
        /* the mount shows only mroot's subtree: the process must be inside it */
        if (strncmp(cgpath, mroot, n) != 0 || (cgpath[n] != '/' && cgpath[n] != 0)) return;
        rel = cgpath + n;
    }
    char base[1024], dir[2048];
    if ((size_t)snprintf(base, sizeof base, "%s%s", root, mnt) >= sizeof base) return;
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", base, strcmp(rel, "/") == 0 ? "" : rel) >=
        sizeof dir)
        return;
    size_t stop = strlen(base);
    for (;;) {
        consider(dir, file, best);
        size_t len = strlen(dir);
        if (len <= stop) break;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < stop) break;
        *slash = 0;
    }
}

void mem_limit_at(const char *root, uint64_t phys, MemLimit *out)
{
    memset(out, 0, sizeof *out);
    out->bytes = phys ? phys : (uint64_t)4 << 30;
    char path[1024], line[4096];
    /* the process's cgroups: "0::PATH" (v2) and "N:CONTROLLERS:PATH" (v1) */
    char v2[1024] = "", v1[1024] = "";
    bool has_v2 = false, has_v1 = false;
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || strlen(c2 + 1) >= sizeof v2) continue;
        *c1 = 0;
        *c2 = 0;
        if (strcmp(line, "0") == 0 && c1[1] == 0) {
            snprintf(v2, sizeof v2, "%s", c2 + 1);
            has_v2 = true;
        } else if (has_word(c1 + 1, "memory")) {
            snprintf(v1, sizeof v1, "%s", c2 + 1);
            has_v1 = true;
        }
    }
    fclose(f);
    if (!has_v1 && !has_v2) return;
    /* where each hierarchy is mounted, and which subtree the mount shows */
    snprintf(path, sizeof path, "%s/proc/self/mountinfo", root);
    f = fopen(path, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *field[6] = { 0 };
        char *save = NULL, *p = strtok_r(line, " ", &save);
        int k = 0;
        for (; p && k < 5; k++, p = strtok_r(NULL, " ", &save)) field[k] = p;
        if (k < 5) continue;
        /* optional fields up to "-", then the type, the source, the options */
        while (p && strcmp(p, "-") != 0) p = strtok_r(NULL, " ", &save);
        char *type = p ? strtok_r(NULL, " ", &save) : NULL;
        char *source = type ? strtok_r(NULL, " ", &save) : NULL;
        char *opts = source ? strtok_r(NULL, " ", &save) : NULL;
        if (!opts) continue;
        char *mroot = field[3], *mnt = field[4];
        unescape(mroot);
        unescape(mnt);
        if (has_v2 && strcmp(type, "cgroup2") == 0)
            walk(root, mnt, mroot, v2, "memory.max", out);
        else if (has_v1 && strcmp(type, "cgroup") == 0 && has_word(opts, "memory"))
            walk(root, mnt, mroot, v1, "memory.limit_in_bytes", out);
    }
    fclose(f);
}

void mem_limit(MemLimit *out) { mem_limit_at("", mem_physical(), out); }

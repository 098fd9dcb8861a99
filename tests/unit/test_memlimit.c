/* test_memlimit.c — Check unit tests of src/util/memlimit.h: the memory
 * limit of the process's own cgroup, on fake /proc and /sys trees built in
 * a temporary folder (cgroup v2, v1, hybrid, nested limits, mounts that
 * show a subtree, escaped mount paths, no cgroup at all), and on the real
 * system (never above physical memory). */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memlimit.h"

#define GiB  ((uint64_t)1 << 30)
#define PHYS (16 * GiB)

static char root[256];

/* mkdir -p of root/path's folder, then the file's text */
static void put(const char *path, const char *fmt, ...)
{
    char full[1024];
    snprintf(full, sizeof full, "%s%s", root, path);
    for (char *p = full + strlen(root) + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        ck_assert_msg(mkdir(full, 0755) == 0 || errno == EEXIST, "mkdir %s", full);
        *p = '/';
    }
    FILE *f = fopen(full, "w");
    ck_assert_msg(f != NULL, "cannot write %s", full);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/qh-memlimit-XXXXXX");
    ck_assert(mkdtemp(root) != NULL);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

static uint64_t limit(void)
{
    MemLimit m;
    mem_limit_at(root, PHYS, &m);
    return m.bytes;
}

#define V2_MOUNT "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
#define V1_MOUNT "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"

START_TEST(v2_namespace_root_unlimited)
{
    put("/proc/self/cgroup", "0::/\n");
    put("/proc/self/mountinfo", V2_MOUNT);
    put("/sys/fs/cgroup/memory.max", "max\n");
    ck_assert_uint_eq(limit(), PHYS);
}
END_TEST

START_TEST(v2_own_cgroup_not_the_root)
{
    /* the mount root has no limit; the process's own cgroup has 1.5 GiB */
    put("/proc/self/cgroup", "0::/user.slice/job.scope\n");
    put("/proc/self/mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n" V2_MOUNT);
    put("/sys/fs/cgroup/user.slice/memory.max", "max\n");
    put("/sys/fs/cgroup/user.slice/job.scope/memory.max", "1610612736\n");
    ck_assert_uint_eq(limit(), 1610612736u);
    MemLimit m;
    mem_limit_at(root, PHYS, &m);
    ck_assert(m.from_cgroup);
    ck_assert_msg(strstr(m.file, "/sys/fs/cgroup/user.slice/job.scope/memory.max") != NULL,
                  "file %s", m.file);
}
END_TEST

START_TEST(v2_tightest_ancestor)
{
    put("/proc/self/cgroup", "0::/a/b/c\n");
    put("/proc/self/mountinfo", V2_MOUNT);
    put("/sys/fs/cgroup/a/memory.max", "%llu\n", (unsigned long long)GiB);
    put("/sys/fs/cgroup/a/b/memory.max", "%llu\n", (unsigned long long)(3 * GiB));
    put("/sys/fs/cgroup/a/b/c/memory.max", "max\n");
    ck_assert_uint_eq(limit(), GiB);
}
END_TEST

START_TEST(v2_mount_shows_subtree)
{
    /* a container without a cgroup namespace: /proc/self/cgroup names the
     * host path, the mount shows only /docker/abc */
    put("/proc/self/cgroup", "0::/docker/abc/inner\n");
    put("/proc/self/mountinfo", "30 23 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
    put("/sys/fs/cgroup/memory.max", "%llu\n", (unsigned long long)(2 * GiB));
    put("/sys/fs/cgroup/inner/memory.max", "max\n");
    ck_assert_uint_eq(limit(), 2 * GiB);
}
END_TEST

START_TEST(v2_outside_the_mounted_subtree)
{
    put("/proc/self/cgroup", "0::/elsewhere\n");
    put("/proc/self/mountinfo", "30 23 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
    put("/sys/fs/cgroup/memory.max", "%llu\n", (unsigned long long)(2 * GiB));
    ck_assert_uint_eq(limit(), PHYS);
}
END_TEST

START_TEST(v1_own_cgroup)
{
    put("/proc/self/cgroup",
        "9:name=systemd:/\n5:cpu,cpuacct:/\n4:memory:/process_api/job\n0::/\n");
    put("/proc/self/mountinfo",
        "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n" V1_MOUNT);
    put("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    put("/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", "9223372036854771712\n");
    put("/sys/fs/cgroup/memory/process_api/job/memory.limit_in_bytes", "1073741824\n");
    ck_assert_uint_eq(limit(), GiB);
}
END_TEST

START_TEST(v1_controllers_listed_together)
{
    put("/proc/self/cgroup", "4:cpu,memory:/g\n");
    put("/proc/self/mountinfo",
        "35 31 0:32 / /sys/fs/cgroup/cpu,memory rw - cgroup cgroup rw,cpu,memory\n");
    put("/sys/fs/cgroup/cpu,memory/g/memory.limit_in_bytes", "%llu\n",
        (unsigned long long)(5 * GiB));
    ck_assert_uint_eq(limit(), 5 * GiB);
}
END_TEST

START_TEST(hybrid_takes_the_tighter)
{
    put("/proc/self/cgroup", "4:memory:/x\n0::/y\n");
    put("/proc/self/mountinfo",
        V1_MOUNT "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
    put("/sys/fs/cgroup/memory/x/memory.limit_in_bytes", "%llu\n", (unsigned long long)(4 * GiB));
    put("/sys/fs/cgroup/unified/y/memory.max", "%llu\n", (unsigned long long)(3 * GiB));
    ck_assert_uint_eq(limit(), 3 * GiB);
}
END_TEST

START_TEST(escaped_mount_point)
{
    put("/proc/self/cgroup", "0::/j\n");
    put("/proc/self/mountinfo", "30 23 0:26 / /sys/fs/my\\040cgroups rw - cgroup2 cgroup2 rw\n");
    put("/sys/fs/my cgroups/j/memory.max", "%llu\n", (unsigned long long)(7 * GiB));
    ck_assert_uint_eq(limit(), 7 * GiB);
}
END_TEST

START_TEST(never_above_physical)
{
    put("/proc/self/cgroup", "0::/big\n");
    put("/proc/self/mountinfo", V2_MOUNT);
    put("/sys/fs/cgroup/big/memory.max", "%llu\n", (unsigned long long)(64 * GiB));
    ck_assert_uint_eq(limit(), PHYS);
}
END_TEST

START_TEST(garbage_and_missing_files)
{
    ck_assert_uint_eq(limit(), PHYS); /* no /proc at all */
    put("/proc/self/cgroup", "garbage\n::\n0::/q\n");
    ck_assert_uint_eq(limit(), PHYS); /* no mountinfo */
    put("/proc/self/mountinfo", "short line\n" V2_MOUNT);
    put("/sys/fs/cgroup/q/memory.max", "12abc\n");
    ck_assert_uint_eq(limit(), PHYS); /* not a number */
    put("/sys/fs/cgroup/q/memory.max", "-5\n");
    ck_assert_uint_eq(limit(), PHYS);
    put("/sys/fs/cgroup/q/memory.max", "1048576\n");
    ck_assert_uint_eq(limit(), 1048576u);
}
END_TEST

START_TEST(real_system)
{
    MemLimit m;
    mem_limit(&m);
    uint64_t phys = mem_physical();
    ck_assert(m.bytes > 0);
    if (phys) ck_assert(m.bytes <= phys);
    ck_assert(m.from_cgroup == (m.file[0] != 0));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("memlimit");
    TCase *tc = tcase_create("cgroup");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, v2_namespace_root_unlimited);
    tcase_add_test(tc, v2_own_cgroup_not_the_root);
    tcase_add_test(tc, v2_tightest_ancestor);
    tcase_add_test(tc, v2_mount_shows_subtree);
    tcase_add_test(tc, v2_outside_the_mounted_subtree);
    tcase_add_test(tc, v1_own_cgroup);
    tcase_add_test(tc, v1_controllers_listed_together);
    tcase_add_test(tc, hybrid_takes_the_tighter);
    tcase_add_test(tc, escaped_mount_point);
    tcase_add_test(tc, never_above_physical);
    tcase_add_test(tc, garbage_and_missing_files);
    tcase_add_test(tc, real_system);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

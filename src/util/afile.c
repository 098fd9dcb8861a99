/* afile.c — files replaced whole or not at all (afile.h). */
#include "afile.h"
#include "qh_assert.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int afile_open(AFile *a, const char *path)
{
    memset(a, 0, sizeof *a);
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) { /* a device or a pipe: written in place */
        a->f = fopen(path, "wb");
        return a->f ? 0 : -1;
    }
    char *real = exists ? realpath(path, NULL) : NULL; /* a link: the file it names */
    const char *target = real ? real : path;
    size_t n = strlen(target);
    char *tmp = malloc(n + 40);
    if (!tmp) {
        free(real);
        errno = ENOMEM;
        return -1;
    }
    static atomic_uint counter; /* distinct names for writers in one process */
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        snprintf(tmp, n + 40, "%s.tmp%ld.%u", target, (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* the umask applies */
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        free(tmp);
        free(real);
        errno = e;
        return -1;
    }
    if (exists) fchmod(fd, st.st_mode & 07777); /* the replaced file's permissions */
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        free(real);
        errno = e;
        return -1;
    }
    a->tmp = tmp;
    a->target = real ? real : strdup(path);
    if (!a->target) {
        afile_abort(a);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

int afile_commit(AFile *a)
{
    qh_assert(a->f && !a->tmp == !a->target); /* open; a temporary replaces its target */
    int bad = ferror(a->f) != 0;
    int e = errno ? errno : EIO;
    if (fflush(a->f) != 0) {
        bad = 1;
        e = errno;
    }
    if (a->tmp && !bad && fsync(fileno(a->f)) != 0 && errno != EINVAL && errno != EROFS) {
        bad = 1;
        e = errno;
    }
    if (fclose(a->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    a->f = NULL;
    if (a->tmp) {
        if (!bad && rename(a->tmp, a->target) != 0) {
            bad = 1;
            e = errno;
        }
        if (bad) unlink(a->tmp);
    }
    free(a->tmp);
    free(a->target);
    a->tmp = a->target = NULL;
    if (bad) {
        errno = e ? e : EIO;
        return -1;
    }
    return 0;
}

void afile_abort(AFile *a)
{
    if (a->f) fclose(a->f);
    if (a->tmp) unlink(a->tmp);
    free(a->tmp);
    free(a->target);
    memset(a, 0, sizeof *a);
}

/* afile.h — a file replaced whole or not at all: written to a temporary
 * file in the same folder and renamed over the target when complete, so a
 * write that fails part-way (disk full, a file-size limit, a signal) leaves
 * the old contents. A target that exists and is not a regular file (a
 * device such as /dev/null or /dev/stdout, a pipe) is written in place; a
 * symbolic link is followed (the file it names is replaced). Knows nothing
 * else. */
#ifndef QH_AFILE_H
#define QH_AFILE_H

#include <stdio.h>

typedef struct AFile {
    FILE *f;      /* write here */
    char *tmp;    /* the temporary's name (NULL: writing in place) */
    char *target; /* the file it replaces */
} AFile;

/* Opens for replacing path; 0, or -1 with errno set. */
int afile_open(AFile *a, const char *path);
/* Closes and renames (or, if anything failed, removes the temporary and
   leaves the target as it was); 0, or -1 with errno set. */
int afile_commit(AFile *a);
/* Gives up: the temporary removed, the target untouched. */
void afile_abort(AFile *a);

#endif

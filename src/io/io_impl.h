/* io_impl.h — internals shared by the files of the I/O room (not its interface). */
#ifndef QH_IO_IMPL_H
#define QH_IO_IMPL_H

/* Errors: qh_errf formats into err if there is one and returns -1. */
#include "errf.h"
#include "io.h"

#include <stddef.h>

/* What a .npy header says: descr (a string), fortran_order, shape. */
typedef struct NpyHeader {
    char descr[32];
    int fortran;
    int ndim;
    size_t shape[IO_MAX_DIMS];
} NpyHeader;

/* A .npy header (hl bytes after the length field; major: the format's
   version) read as NumPy reads it, the Python dict literal it is, into out.
   0; 1 if descr does not fit out->descr (the caller refuses it as
   unsupported; out->descr holds its start); -1 + err naming the file and
   the problem (io_pylit.c). */
int io_npy_header(const unsigned char *h, size_t hl, int major, const char *name, NpyHeader *out,
                  char *err, size_t errlen);

#endif

/* io_impl.h — internals shared by the files of the I/O room (not its interface). */
#ifndef QH_IO_IMPL_H
#define QH_IO_IMPL_H

/* Errors: qh_errf formats into err if there is one and returns -1. */
#include "errf.h"

#include <stddef.h>

/* A .npy header (hl bytes after the length field; major: the format's
   version) read as NumPy reads it, the Python dict literal it is: descr
   (a string, copied into descr), fortran_order, shape. 0; 1 if descr does
   not fit descr (the caller refuses it as unsupported); -1 + err naming
   the file and the problem (io_pylit.c). */
int io_npy_header(const unsigned char *h, size_t hl, int major, const char *name, char *descr,
                  size_t descrlen, int *fortran, int *ndim, size_t *shape, char *err,
                  size_t errlen);

#endif

/* io_impl.h — internals shared by the files of the I/O room (not its interface). */
#ifndef QH_IO_IMPL_H
#define QH_IO_IMPL_H

#include <stdarg.h>
#include <stddef.h>

/* Format into err if there is one; always returns -1. */
int io_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

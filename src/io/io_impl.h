/* io_impl.h — internals shared by the files of the I/O room (not its interface). */
#ifndef QH_IO_IMPL_H
#define QH_IO_IMPL_H

/* Errors: qh_errf formats into err if there is one and returns -1. */
#include "errf.h"

#endif

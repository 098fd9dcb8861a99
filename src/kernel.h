/* kernel.h — qh as a Jupyter kernel (lang/command-line.md, "The Jupyter
 * kernel"): qh --kernel CONNECTION_FILE serves a notebook over ZeroMQ, and
 * qh --install-kernel writes the kernel spec. Without libzmq and libcrypto
 * at build time (kernel_none.c) both say so and fail. */
#ifndef QH_KERNEL_H
#define QH_KERNEL_H

#include "qh.h"

/* Whether this qh was built with the kernel. */
extern const bool kernel_built;
/* Serves the notebook of the connection file until a shutdown request (or
 * SIGTERM); cfg as the command line made it (its out, err and SIGINT
 * handling are the kernel's). The exit status: 0, or 1 if the connection
 * file is bad or a socket cannot be bound. */
int kernel_run(qh_Config *cfg, const char *connection_file);
/* Writes kernels/qh/kernel.json and its logo: where = NULL (the system's
 * folder, /usr/local/share/jupyter), "--user" (the user's Jupyter data
 * folder) or "--prefix" with dir (DIR/share/jupyter). The exit status. */
int kernel_install(const char *where, const char *dir);

#endif

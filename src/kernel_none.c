/* kernel_none.c — the kernel's stand-in when qh is built without libzmq
 * or libcrypto (meson option kernel=disabled, or the libraries missing):
 * qh --kernel and qh --install-kernel say so. */
#include "kernel.h"

const bool kernel_built = false;

static int without(void)
{
    fprintf(stderr, "qh: this qh was built without the Jupyter kernel (it needs libzmq and "
                    "libcrypto at build time: apt-get install libzmq3-dev libssl-dev, then "
                    "meson setup --reconfigure)\n");
    return 2;
}

int kernel_run(qh_Config *cfg, const char *connection_file)
{
    (void)cfg;
    (void)connection_file;
    return without();
}

int kernel_install(const char *where, const char *dir)
{
    (void)where;
    (void)dir;
    return without();
}

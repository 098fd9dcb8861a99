/* fuzz_parse.c — libFuzzer target for the front end: lexer, parser,
 * resolver and dependency analysis on arbitrary bytes (qh_compile), plus
 * the REPL's "is this statement incomplete?" check and the --deps printer.
 * Nothing runs. Diagnostics go to /dev/null.
 *
 * Build: tests/fuzz/build.sh (clang, -fsanitize=fuzzer,address,undefined).
 * Run:   build-fuzz/tests/fuzz/fuzz_parse -close_fd_mask=3 CORPUS_DIR
 * Any crash, sanitizer report or leak is a bug in src/: save the input
 * under tests/fuzz/regressions/ (tests/fuzz/regressions.sh replays them). */
#include "parse.h"
#include "qh.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>


static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    qh_init();
    devnull = fopen("/dev/null", "w");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024) return -1; /* nothing new past this */
    const char *text = (const char *)data;

    /* the REPL's continuation check sees the raw bytes too */
    (void)parse_incomplete(text, size);

    /* the pipeline as qh.h runs it (imports found on disk are preloaded too) */
    qh_State *Q = qh_open(NULL);
    qh_Program *p = qh_compile(Q, "<fuzz>", text, size, devnull);
    if (p) qh_print_deps(p, devnull);
    qh_close(Q, 0);
    return 0;
}

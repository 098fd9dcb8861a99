/* fuzz_parse.c — libFuzzer target for the front end: lexer, parser,
 * resolver and dependency analysis on arbitrary bytes, plus the REPL's
 * "is this statement incomplete?" check and the --deps printer. Nothing
 * runs. Diagnostics go to /dev/null.
 *
 * Build: tests/fuzz/build.sh (clang, -fsanitize=fuzzer,address,undefined).
 * Run:   build-fuzz/tests/fuzz/fuzz_parse -close_fd_mask=3 CORPUS_DIR
 * Any crash, sanitizer report or leak is a bug in src/: save the input
 * under tests/fuzz/regressions/ (tests/fuzz/regressions.sh replays them). */
#include "analyse.h"
#include "diag.h"
#include "parse.h"
#include "resolve.h"
#include "builtins.h"
#include "qh.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>


static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    qh_init();
    devnull = fopen("/dev/null", "w");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024) return -1;              /* nothing new past this */
    const char *text = (const char *)data;

    /* the REPL's continuation check sees the raw bytes too */
    (void)parse_incomplete(text, size);

    Source *src = source_from_text("<fuzz>", text, size);
    ModInfo *m = parse_source(src, devnull);
    if (!m) { source_free(src); return 0; }
    (void)resolve_declare(m, "argv", builtin_lookup);
    bool ok = resolve_module(m, m->body, builtin_lookup, devnull, true) && analyse_module(m, devnull);
    if (ok) analyse_print_deps(m, m->body, devnull);
    analyse_free_body(m->body);
    parse_free(m);
    source_free(src);
    return 0;
}

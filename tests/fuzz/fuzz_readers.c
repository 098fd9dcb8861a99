/* fuzz_readers.c — libFuzzer targets for the readers of untrusted bytes
 * (issue 26), one executable each, chosen at compile time by FUZZ_READER:
 *   fuzz_qasm   OpenQASM text -> circuit (qasm_parse); a circuit read is
 *               written back (qasm_write) and read again
 *   fuzz_json   JSON text -> tree (io_json_parse); a tree read is dumped
 *               (io_json_dump) and read again to the same text
 *   fuzz_csv    CSV text -> array (io_csv_parse); the first byte picks the
 *               delimiter and the lines skipped
 *   fuzz_npy    .npy bytes -> array (io_npy_parse); an array read is encoded
 *               (io_npy_encode) and read again to the same values
 * Built with -DFUZZ_READER_MAIN, the same file is a plain program (no
 * libFuzzer) that runs the target over files and folders given on the
 * command line: meson test runs it over the seeds and the regressions
 * (tests/fuzz/seeds/TARGET, tests/fuzz/regressions/TARGET).
 * Any crash, sanitizer report, leak or failed check is a bug in src/. */
#include "io.h"
#include "qasm.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                              \
        }                                                                         \
    } while (0)

#if FUZZ_READER == 1 /* ---- OpenQASM */
static const char *target = "fuzz_qasm";
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024) return -1;
    char err[300];
    QasmCircuit c;
    if (qasm_parse((const char *)data, size, &c, err, sizeof err) != 0) {
        CHECK(err[0]);
        return 0;
    }
    size_t len;
    char *text = qasm_write(&c, c.version >= 3 ? 3 : 2, &len, err, sizeof err);
    if (text) { /* what qh writes, qh reads (some circuits have no OpenQASM form: refused) */
        QasmCircuit d;
        if (qasm_parse(text, len, &d, err, sizeof err) == 0) qasm_free(&d);
        free(text);
    }
    qasm_free(&c);
    return 0;
}

#elif FUZZ_READER == 2 /* ---- JSON */
static const char *target = "fuzz_json";
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024) return -1;
    char err[300];
    IoJson *j = io_json_parse((const char *)data, size, err, sizeof err);
    if (!j) {
        CHECK(err[0]);
        return 0;
    }
    for (int indent = -1; indent <= 2; indent += 3) {
        size_t len;
        char *text = io_json_dump(j, indent, &len, err, sizeof err);
        if (!text) continue; /* nested too deeply to write */
        IoJson *k = io_json_parse(text, len, err, sizeof err);
        CHECK(k != NULL); /* what qh writes, qh reads */
        size_t len2;
        char *again = io_json_dump(k, indent, &len2, err, sizeof err);
        CHECK(again && len2 == len && memcmp(again, text, len) == 0);
        free(again);
        io_json_free(k);
        free(text);
    }
    io_json_free(j);
    return 0;
}

#elif FUZZ_READER == 3 /* ---- CSV */
static const char *target = "fuzz_csv";
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 256 * 1024) return -1;
    static const char delims[] = { ',', ' ', ';', '\t', '|', 'x', '#', 0 };
    char delim = delims[data[0] & 7];
    long skip = (data[0] >> 3) & 3;
    char err[300];
    IoArray a;
    IoCsvText in = { (const char *)data + 1, size - 1, "<fuzz>", delim, skip };
    if (io_csv_parse(&in, &a, err, sizeof err) != 0) {
        CHECK(err[0]);
        return 0;
    }
    CHECK(a.ndim == 2 && a.n == a.shape[0] * a.shape[1]);
    io_array_free(&a);
    return 0;
}

#elif FUZZ_READER == 4 /* ---- .npy */
static const char *target = "fuzz_npy";
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1024 * 1024) return -1;
    char err[300];
    IoArray a;
    if (io_npy_parse(data, size, "<fuzz>", &a, err, sizeof err) != 0) {
        CHECK(err[0]);
        return 0;
    }
    size_t n = 1;
    for (int i = 0; i < a.ndim; i++) n *= a.shape[i];
    CHECK(n == a.n);
    size_t len;
    unsigned char *bytes = io_npy_encode(&a, &len, err, sizeof err);
    CHECK(bytes != NULL); /* what qh writes, qh reads to the same values */
    IoArray b;
    CHECK(io_npy_parse(bytes, len, "<again>", &b, err, sizeof err) == 0);
    CHECK(b.ndim == a.ndim && b.n == a.n && b.is_complex == a.is_complex);
    size_t nd = a.is_complex ? 2 * a.n : a.n;
    for (size_t i = 0; i < nd; i++) CHECK(memcmp(&a.data[i], &b.data[i], sizeof(double)) == 0);
    io_array_free(&b);
    free(bytes);
    io_array_free(&a);
    return 0;
}
#else
#error "FUZZ_READER: 1 qasm, 2 json, 3 csv, 4 npy"
#endif

#ifdef FUZZ_READER_MAIN
/* One input: a file's bytes. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 4096, n = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

/* Usage: PROG FILE-OR-FOLDER...: every file given, every file of each folder. */
int main(int argc, char **argv)
{
    int ran = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) continue; /* a folder that is not there: no inputs */
        if (!S_ISDIR(st.st_mode)) {
            bad |= run_file(argv[i]);
            ran++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            bad |= run_file(p);
            ran++;
        }
        if (d) closedir(d);
    }
    printf("%s: %d inputs, no crash\n", target, ran);
    return bad;
}
#endif

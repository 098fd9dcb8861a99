/* test_opts.c — Check unit tests of src/util/opts.h: the strict rules for
 * option and environment values (whole text, no blanks, no signs or hex or
 * exponents, nan and inf refused, ranges enforced). */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "opts.h"

START_TEST(integers)
{
    long long v;
    ck_assert(opt_int("4", 1, 1024, &v) && v == 4);
    ck_assert(opt_int("1024", 1, 1024, &v) && v == 1024);
    const char *bad[] = { "",
                          " 4",
                          "4 ",
                          "+4",
                          "-4",
                          "0",
                          "1025",
                          "100000",
                          "4x",
                          "0x10",
                          "4.0",
                          "1e2",
                          "99999999999999999999",
                          "nan",
                          NULL };
    for (int i = 0; bad[i]; i++)
        ck_assert_msg(!opt_int(bad[i], 1, 1024, &v), "accepted '%s'", bad[i]);
    ck_assert(opt_int("-3", -5, 5, &v) && v == -3);
    ck_assert(!opt_int("-", -5, 5, &v));
}
END_TEST

START_TEST(seeds)
{
    uint64_t u;
    ck_assert(opt_u64("0", &u) && u == 0);
    ck_assert(opt_u64("18446744073709551615", &u) && u == UINT64_MAX);
    const char *bad[] = { "", "-1", "+1", " 1", "18446744073709551616", "1.5", "0x1", NULL };
    for (int i = 0; bad[i]; i++) ck_assert_msg(!opt_u64(bad[i], &u), "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(sizes)
{
    uint64_t u;
    ck_assert(opt_size("4G", &u) && u == (uint64_t)4 << 30);
    ck_assert(opt_size("512M", &u) && u == (uint64_t)512 << 20);
    ck_assert(opt_size("512mb", &u) && u == (uint64_t)512 << 20);
    ck_assert(opt_size("1.5GiB", &u) && u == (uint64_t)3 << 29);
    ck_assert(opt_size("1048576", &u) && u == 1048576);
    ck_assert(opt_size("10B", &u) && u == 10);
    ck_assert(opt_size("2T", &u) && u == (uint64_t)2 << 40);
    const char *bad[] = { "",      "nan",  "inf", "-1G", "+1G",       "0",        "0.5",
                          "0x10M", "1e3M", "1.G", ".5G", "4 G",       " 4G",      "4G ",
                          "4GiBx", "4X",   "iB",  "4iB", "99999999T", "8388608T", NULL };
    for (int i = 0; bad[i]; i++) ck_assert_msg(!opt_size(bad[i], &u), "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(numbers_and_words)
{
    double d;
    ck_assert(opt_number("2.5", 0, 10, &d) && d == 2.5);
    const char *bad[] = { "", "nan", "inf", "-1", "1e3", "11", ".5", "5.", NULL };
    for (int i = 0; bad[i]; i++)
        ck_assert_msg(!opt_number(bad[i], 0, 10, &d), "accepted '%s'", bad[i]);
    static const char *const w[] = { "c", "avx2", "avx512", NULL };
    ck_assert_int_eq(opt_choice("avx2", w), 1);
    ck_assert_int_eq(opt_choice("AVX2", w), -1);
    ck_assert_int_eq(opt_choice("", w), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("opts");
    TCase *tc = tcase_create("values");
    tcase_add_test(tc, integers);
    tcase_add_test(tc, seeds);
    tcase_add_test(tc, sizes);
    tcase_add_test(tc, numbers_and_words);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

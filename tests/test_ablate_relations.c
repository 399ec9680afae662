/* Runs tests/ablate_relations_check.py, the known-answer tests of the ablation
 * report's "one head against several" section (scripts/ablate_relations.py): served
 * relations, distinct and shared heads from a hand-made summary.json/heads.csv pair,
 * then the tables, sentences, relations.csv and heatmap of a fake sweep. Python's
 * unittest does the checking; this file puts it in `make test`. Skipped where
 * python3 is missing. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "tests/testutil.h"

Test(ablate_relations, known_answers_of_the_python_checks_hold)
{
    char *out;
    int rc = tu_run(&out, "python3 -c 'import csv, statistics, unittest'");
    free(out);
    if (rc != 0)
        cr_skip_test("python3 is not installed");
    rc = tu_run(&out, "python3 tests/ablate_relations_check.py");
    cr_assert_eq(rc, 0, "tests/ablate_relations_check.py failed:\n%s", out);
    free(out);
}

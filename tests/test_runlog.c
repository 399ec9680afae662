/* Tests of the scripts' shared readers and number helpers: scripts/runlog.py reads
 * a log that resumed runs appended to as the one run it describes (its rule for
 * repeated steps), and scripts/ablate_stats.py's num() and spread() give their
 * known answers. Skipped where python3 is missing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

/* A run killed after step 4 with its checkpoint at step 2, resumed to its end at
 * step 5 (steps 3 and 4 again, with other losses, and no heads record at 4 this
 * time), then resumed once more to step 6 with a larger --steps. */
static const char RESUMED_LOG[] =
    "{\"type\":\"settings\",\"steps\":5,\"params\":7}\n"
    "{\"type\":\"step\",\"step\":1,\"loss\":5}\n"
    "{\"type\":\"step\",\"step\":2,\"loss\":4}\n"
    "{\"type\":\"eval\",\"step\":2,\"train_loss\":4,\"val_loss\":4.5}\n"
    "{\"type\":\"heads\",\"step\":2,\"heads\":[{\"layer\":0,\"head\":0,\"repeat\":0.1}]}\n"
    "{\"type\":\"step\",\"step\":3,\"loss\":3}\n"
    "{\"type\":\"step\",\"step\":4,\"loss\":2.5}\n"
    "{\"type\":\"eval\",\"step\":4,\"train_loss\":2.5,\"val_loss\":3.5}\n"
    "{\"type\":\"heads\",\"step\":4,\"heads\":[{\"layer\":0,\"head\":0,\"repeat\":0.4}]}\n"
    "{\"type\":\"settings\",\"steps\":5,\"params\":7}\n"
    "{\"type\":\"step\",\"step\":3,\"loss\":3.1}\n"
    "{\"type\":\"step\",\"step\":4,\"loss\":2.6}\n"
    "{\"type\":\"eval\",\"step\":4,\"train_loss\":2.6,\"val_loss\":3.6}\n"
    "{\"type\":\"step\",\"step\":5,\"loss\":2.2}\n"
    "{\"type\":\"final\",\"step\":5,\"train_loss\":2.2,\"val_loss\":3}\n"
    "{\"type\":\"settings\",\"steps\":6,\"params\":7}\n"
    "{\"type\":\"step\",\"step\":6,\"loss\":2}\n"
    "{\"type\":\"final\",\"step\":6,\"train_loss\":2,\"val_loss\":2.9}\n";

Test(runlog, a_resumed_part_replaces_every_record_from_its_first_step_on)
{
    tu_need_python("json");
    const char *dir = tu_tmpdir("runlog-resumed");
    char path[400];
    snprintf(path, sizeof path, "%s/run.jsonl", dir);
    cr_assert_eq(tu_write_file(path, RESUMED_LOG, strlen(RESUMED_LOG)), 0);
    char *out;
    int rc = tu_run(&out, "python3 -c \"import sys; sys.path.insert(0, 'scripts'); import runlog\n"
                    "l = runlog.read(sys.argv[1])\n"
                    "print('steps', ' '.join('%%d:%%g' %% (r['step'], r['loss'])"
                    " for r in l.steps))\n"
                    "print('evals', ' '.join('%%s%%d:%%g' %% (r['type'][0], r['step'],"
                    " r['val_loss']) for r in l.evals))\n"
                    "print('heads', ' '.join('%%d:%%g' %% (r['step'], r['heads'][0]['repeat'])"
                    " for r in l.heads))\n"
                    "print('settings steps', l.settings['steps'], 'final step', l.final['step'])\""
                    " %s", path);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_str_eq(out, "steps 1:5 2:4 3:3.1 4:2.6 5:2.2 6:2\n"
                          "evals e2:4.5 e4:3.6 f5:3 f6:2.9\n"
                          "heads 2:0.1\n"
                          "settings steps 5 final step 6\n");
    free(out);
}

#define DASH "\xe2\x80\x93" /* U+2013, the en dash of "median (min–max)" */

Test(ablate_stats, num_and_spread_give_their_known_answers)
{
    tu_need_python("json");
    char *out;
    int rc = tu_run(&out, "python3 -c \"import sys; sys.path.insert(0, 'scripts')\n"
                    "from ablate_stats import num, spread\n"
                    "print([num(v) for v in (2, '1.5', None, True, 'x', 'inf', 10 ** 400, [1])])\n"
                    "print(spread([3, '1', None, 2, float('nan')], 1), '|', spread([0.25], 3), '|',"
                    " spread([], 0), '|', spread([4, 1], 0))\"");
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_str_eq(out, "[2.0, 1.5, nan, nan, nan, nan, nan, nan]\n"
                          "2.0 (1.0" DASH "3.0) | 0.250 | " DASH " | 2 (1" DASH "4)\n");
    free(out);
}

/* Command-line tests of ./train --vocab and of its checkpoints in ./infer:
 * without --vocab a run writes the very bytes it wrote before merges existed
 * (checksums recorded below); the startup line, the log's settings and
 * --print-settings show the vocabulary, whose base is the 256 byte values;
 * learning stops early and says so; the refusals (a vocabulary of 256 or fewer
 * or over the limit, a resume with another --vocab); a resumed BPE run matches
 * an uninterrupted one bit for bit; ./infer --eval on the val split reproduces
 * train's final val loss and bits per byte, whose formula has known answers;
 * sampling streams each token's bytes and encodes the prompt; a byte-pair
 * model accepts bytes its training text never held, and a byte-level model
 * refuses them with a hint. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bpe.h"
#include "model/evaluate.h"
#include "tests/ckpt_fixture.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

/* The SHA-256 of the checkpoints that the byte-level build before this
 * tokenizer (main at 9588e71, -march=native on the project's test machine,
 * with data/synth*.{c,h} and data/synth_lexicon.{c,h} of the current corpus,
 * nine sentence kinds and lines of one or two sentences, put in, and, since
 * the corpus draws from the lexicon, data/lexicon.h and the table the build
 * generates from data/lexicon.tsv)
 * wrote for these two commands, run in a directory holding data.txt as
 * env_init makes it:
 *   train --data data.txt TINY --steps 3 --out a.ckpt
 *   train TINY --steps 2 --out b.ckpt          (the built-in corpus; now with
 *                                              --vocab 0, which its recipe needs
 *                                              to train on bytes, and --warmup
 *                                              100, that build's warm-up, which
 *                                              the recipe made 800)
 * tests/arch_check.sh holds every FMA build to the same bytes. */
#define SHA_DATA_3_STEPS "f5b0dd7850f44e7f39127257950b387daafe4f1c78e2d6cfe8b4a9a572050344"
#define SHA_BUILTIN_2_STEPS "7b872daa225259e9e0555038d698b43d05c24a00d1cba7d725abb46f0606384f"

/* The run's own directory as the working directory, so the stored data path
 * is "data.txt" as in the recorded runs. */
static void run_in(const Env *e, const char *args)
{
    char bin[PATH_MAX], *out;
    cr_assert_not_null(realpath(tu_bin(), bin));
    int rc = tu_run(&out, "cd '%s' && '%s/train' %s", e->dir,
                    bin, args);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

static void expect_sha(const Env *e, const char *name, const char *want)
{
    char *out;
    int rc = tu_run(&out, "cd '%s' && sha256sum %s", e->dir, name);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(strncmp(out, want, 64), 0, "%s: %.64s, the byte-level build wrote %s", name,
                 out, want);
    free(out);
}

Test(vocab, without_vocab_a_run_writes_the_bytes_it_wrote_before_merges, .timeout = 120)
{
    Env e;
    env_init(&e, "vocab-bytes");
    run_in(&e, "--data data.txt " TINY " --steps 3 --out a.ckpt");
    expect_sha(&e, "a.ckpt", SHA_DATA_3_STEPS);
    /* the built-in recipe's warm-up and position embedding of the byte-level build */
    run_in(&e, TINY " --vocab 0 --warmup 100 --pos-std 0.02 --pos-decay on --steps 2 --out b.ckpt");
    expect_sha(&e, "b.ckpt", SHA_BUILTIN_2_STEPS);
}

/* The number after "key": in s. */
static long json_long(const char *s, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *at = strstr(s, k);
    cr_assert_not_null(at, "%s missing from %s", key, s);
    return strtol(at + strlen(k), NULL, 10);
}

Test(vocab, the_vocabulary_is_shown_at_start_in_the_log_and_in_print_settings)
{
    Env e;
    env_init(&e, "vocab-shown");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --vocab 300 --steps 1 --data %s --out %s --log %s",
                    tu_bin(), e.data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "vocabulary 300 = 256 bytes + 44 merges"), "%s", out);
    char *log = tu_read_text(e.log);
    long V = json_long(log, "vocab"), nb = json_long(log, "vocab_bytes");
    cr_assert(V == 300 && nb == 256 && json_long(log, "merges") == 44 &&
              json_long(log, "vocab_asked") == 300, "%s", log);
    free(log);
    free(out);
    rc = tu_run(&out, "%s/train --vocab 300 --print-settings", tu_bin());
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(json_long(out, "vocab"), 300);
    free(out);
    rc = tu_run(&out, "%s/train --data %s --print-settings", tu_bin(), e.data);
    cr_assert_eq(json_long(out, "vocab"), 0, "byte-level shows 0");
    free(out);
}

Test(vocab, learning_stops_when_no_pair_repeats_and_says_so, .timeout = 120)
{
    Env e;
    env_init(&e, "vocab-early");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --vocab %d --steps 1 --data %s --out %s", tu_bin(),
                    TOK_VOCAB_MAX, e.data, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "no pair occurs twice after"), "%s", out);
    free(out);
}

Test(vocab, bad_vocabulary_sizes_are_usage_errors)
{
    Env e;
    env_init(&e, "vocab-refused");
    refuse_train(&e, "--vocab 10", 2, "--vocab: expected an integer in [257, 32768], got '10'");
    refuse_train(&e, "--vocab 256", 2, "--vocab: expected an integer in [257, 32768]");
    char flag[64];
    snprintf(flag, sizeof flag, "--vocab %d", TOK_VOCAB_MAX + 1);
    refuse_train(&e, flag, 2, "--vocab");
    refuse_train(&e, "--vocab -1", 2, "--vocab");
}

/* 3 steps and a resume to 6 write the bytes of 6 steps; the resume refuses
 * another --vocab (the tokens are the checkpoint's). */
Test(vocab, a_resumed_bpe_run_matches_an_uninterrupted_one, .timeout = 120)
{
    Env e;
    env_init(&e, "vocab-resume");
    expect_resume_matches(&e, TINY " --vocab 300 --warmup 100 --eval-every 2", "--vocab 310",
                          "--vocab 310 contradicts the checkpoint (300)");
}

/* The final record's val loss and bits per byte (printed with 6 decimals) come
 * back from ./infer --eval on the dumped val split; bpb is the loss over the
 * predicted tokens' bytes, fewer tokens than bytes. */
Test(vocab, infer_eval_reproduces_the_final_val_loss_and_bits_per_byte, .timeout = 120)
{
    Env e;
    env_init(&e, "vocab-eval");
    char *out, val[400];
    snprintf(val, sizeof val, "%s/val.txt", e.dir);
    int rc = tu_run(&out, "%s/train " TINY " --vocab 300 --steps 20 --data %s --out %s --log %s",
                    tu_bin(), e.data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train --data %s --dump-val %s", tu_bin(), e.data, val);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    size_t n;
    char *text = (char *)tu_read_file(e.log, &n);
    text[n] = '\0';
    const char *final = strstr(text, "\"type\":\"final\"");
    cr_assert_not_null(final, "%s", text);
    double want_loss = json_number(final, "val_loss"), want_bpb = json_number(final, "val_bpb");
    long want_tokens = json_long(final, "val_tokens");
    rc = tu_run(&out, "%s/infer --ckpt %s --eval %s --json", tu_bin(), e.out, val);
    cr_assert_eq(rc, 0, "%s", out);
    double loss = json_number(out, "loss"), bpb = json_number(out, "bpb");
    long tokens = json_long(out, "tokens"), bytes = json_long(out, "bytes");
    cr_assert_eq(tokens, want_tokens, "%s", out);
    cr_assert_lt(tokens, bytes, "BPE tokens should be fewer than the bytes: %s", out);
    cr_assert_lt(fabs(loss - want_loss), 5e-7, "infer %.9f, train %.6f", loss, want_loss);
    cr_assert_lt(fabs(bpb - want_bpb), 5e-7, "infer %.9f, train %.6f", bpb, want_bpb);
    cr_assert_lt(fabs(bpb - loss * (double)tokens / (double)bytes / log(2.0)), 1e-6,
                 "bpb is not loss x tokens / bytes / ln 2: %s", out);
    free(out);
    free(text);
}

/* Sampling writes the prompt and then each drawn token's bytes: at least one
 * byte a token. A prompt byte the training text never held ('~') is encoded
 * all the same: the vocabulary starts from every byte value. */
Test(vocab, sampling_streams_the_bytes_of_each_token)
{
    Env e;
    env_init(&e, "vocab-sample");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --vocab 300 --steps 5 --data %s --out %s", tu_bin(),
                    e.data, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    char sample[400];
    snprintf(sample, sizeof sample, "%s/sample.txt", e.dir);
    rc = tu_run(&out, "{ %s/infer --ckpt %s -n 40 -p 'the cat ~' "
                "2>/dev/null; } > %s", tu_bin(), e.out, sample);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    size_t n, nd;
    unsigned char *s = tu_read_file(sample, &n), *d = tu_read_file(e.data, &nd);
    cr_assert_geq(n, 9 + 40, "%zu bytes for 40 tokens", n);
    cr_assert_eq(memcmp(s, "the cat ~", 9), 0);
    cr_assert_null(memchr(d, '~', nd), "the training text should not hold '~'");
    free(s);
    free(d);
}

/* The line the brief of this vocabulary names: apostrophe, digit, '?' and '!'
 * are none of them in data.txt (the built-in corpus), yet a --vocab model
 * scores the text; a byte-level model of the same file refuses it, naming the
 * first such byte and pointing at --vocab. */
Test(vocab, a_bpe_model_accepts_bytes_its_text_never_held_and_a_byte_model_says_why_not,
     .timeout = 120)
{
    Env e;
    env_init(&e, "vocab-any-text");
    const char *line = "it's, 3 cats?!";
    char q[400], bytes_ckpt[400], *out;
    snprintf(q, sizeof q, "%s/q.txt", e.dir);
    snprintf(bytes_ckpt, sizeof bytes_ckpt, "%s/bytes.ckpt", e.dir);
    cr_assert_eq(tu_write_file(q, line, strlen(line)), 0);
    /* The built-in corpus's text with every digit, apostrophe, '?' and '!'
     * left out, so the model's training text never holds them. */
    size_t nd, kept = 0;
    unsigned char *d = tu_read_file(e.data, &nd);
    for (size_t i = 0; i < nd; i++)
        if (!strchr("'?!0123456789", d[i]) || d[i] == '\0')
            d[kept++] = d[i];
    char plain[400];
    snprintf(plain, sizeof plain, "%s/plain.txt", e.dir);
    cr_assert_eq(tu_write_file(plain, d, kept), 0);
    free(d);
    int rc = tu_run(&out, "%s/train " TINY " --vocab 300 --steps 2 --data %s --out %s", tu_bin(),
                    plain, e.out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --eval %s --json", tu_bin(), e.out, q);
    cr_assert_eq(rc, 0, "%s", out);
    long tokens = json_long(out, "tokens");
    cr_assert(tokens >= 5 && tokens < 14, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/train " TINY " --steps 2 --data %s --out %s", tu_bin(), plain,
                bytes_ckpt);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --eval %s", tu_bin(), bytes_ckpt, q);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "byte 0x27 (') at offset 2 is not in the model's vocabulary"), "%s",
              out);
    cr_assert(strstr(out, "a model trained with --vocab N knows all 256 byte values and "
                          "accepts any text"), "%s", out);
    free(out);
}

/* The checkpoint tests' byte-pair fixture (tests/ckpt_fixture.c: the alphabet
 * "\n abc", the merges "ab", "abc", " a", parameters from seed 42) has the
 * layout every ./train --vocab wrote before vocabularies started from all 256
 * byte values: an alphabet of the file's own bytes. For that file and the text
 * below, the build before the change (main at 17a9b17) gave:
 *   sha256sum model.ckpt                                  OLD_CKPT_SHA
 *   infer --ckpt model.ckpt --eval text.txt --json        OLD_EVAL
 *   infer --ckpt model.ckpt -n 40 --seed 5 -p 'ab c'      stdout of SHA-256 OLD_SAMPLE_SHA
 * (this build's stdout less the newline that now ends every sample)
 * (model.ckpt as main's ckpt/a_file_with_merges_is_version_2... test wrote it.)
 * This build gives the same, and refuses a byte outside the alphabet with the
 * hint for such a checkpoint. */
#define OLD_TEXT "ab abc a\nabc ab c\nb a abc\n"
#define OLD_CKPT_SHA "2f92c3e7d9a5bae32bf0e0ce7f7e38d179e689e8b19740ae2037fe98dcaee3a7"
#define OLD_EVAL \
    "{\"loss\":2.07077449,\"ppl\":7.9309632,\"bpb\":1.86718506,\"tokens\":15,\"bytes\":24}"
#define OLD_SAMPLE_SHA "8df4868bef651945cd098096ef373a99aa19c89347f3d54a23308f4f594252fa"

Test(vocab, a_bpe_checkpoint_over_its_files_bytes_gives_what_the_older_build_gave)
{
    Fix f;
    fix_init_merges(&f, "vocab-old-layout");
    fix_save(&f, f.path, 1);
    char text[400], *out;
    snprintf(text, sizeof text, "%s/text.txt", f.dir);
    cr_assert_eq(tu_write_file(text, OLD_TEXT, strlen(OLD_TEXT)), 0);
    int rc = tu_run(&out, "sha256sum %s", f.path);
    cr_assert(rc == 0 && strncmp(out, OLD_CKPT_SHA, 64) == 0, "the fixture changed: %s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s --eval %s --json", tu_bin(), f.path, text);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, OLD_EVAL), "%s, the older build printed %s", out, OLD_EVAL);
    free(out);
    /* The same sample bytes; the newline that now ends a sample aside. */
    rc = tu_run(&out, "%s/infer --ckpt %s -n 40 --seed 5 -p 'ab c' "
                "2>/dev/null | head -c -1 | sha256sum", tu_bin(), f.path);
    cr_assert(rc == 0 && strncmp(out, OLD_SAMPLE_SHA, 64) == 0, "sample %s", out);
    free(out);
    rc = tu_run(&out, "%s/infer --ckpt %s -n 5 -p 'ab~'", tu_bin(), f.path);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "byte 0x7e (~) at offset 2 is not in the model's vocabulary"), "%s",
              out);
    cr_assert(strstr(out, "this byte-pair model was trained before vocabularies started from "
                          "all 256 byte values"), "%s", out);
    free(out);
    fix_free(&f);
}

/* Known answers: 4 tokens at a mean of 3 ln 2 nats are 12 bits; over 6 bytes,
 * 2 bits per byte. A byte model's bpb is its loss / ln 2, bit for bit. */
Test(vocab, bits_per_byte_is_total_bits_over_bytes)
{
    cr_assert_float_eq(eval_bpb(3.0 * log(2.0), 4, 6), 2.0, 1e-15);
    cr_assert_float_eq(eval_bpb(1.0, 10, 40), 0.25 / log(2.0), 1e-15);
    double loss = 1.2345678901234567, byte_level = eval_bpb(loss, 999, 999);
    double want = loss / log(2.0);
    cr_assert_eq(memcmp(&byte_level, &want, sizeof want), 0, "%.17g, not %.17g", byte_level, want);
}

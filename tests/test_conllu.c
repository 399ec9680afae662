/* CoNLL-U reader tests (data/conllu): known-answer trees (a plain sentence, a
 * multiword token whose words spell it and one whose words do not, empty
 * nodes, a sentence without # text joined by SpaceAfter, CRLF files, no-break
 * spaces in # text), every refusal naming the file, the line and the fault
 * (not CoNLL-U, a bad ID, HEAD out of range, a cycle, a FORM the text does not
 * hold, mixed line endings), ./train --data FILE.conllu training on the text,
 * and the real treebank read whole where ../shared/data/ud-english-ewt is. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/conllu.h"
#include "data/corpus.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

#define EWT_DIR "../shared/data/ud-english-ewt"

static void parse_ok(Conllu *c, const char *s)
{
    char err[1500] = "";
    int rc = conllu_parse(c, (const unsigned char *)s, strlen(s), "t.conllu", err, sizeof err);
    cr_assert_eq(rc, 0, "refused: %s", err);
}

/* conllu_parse must refuse s with a message holding "t.conllu:LINE:" and needle. */
static void parse_fails(const char *s, int line, const char *needle)
{
    Conllu c;
    char err[1500] = "", at[64];
    cr_assert_eq(conllu_parse(&c, (const unsigned char *)s, strlen(s), "t.conllu", err, sizeof err),
                 -1, "accepted (expected '%s')", needle);
    snprintf(at, sizeof at, "t.conllu:%d:", line);
    if (line > 0)
        cr_assert(strstr(err, at), "expected '%s' in: %s", at, err);
    cr_assert(strstr(err, needle), "expected '%s' in: %s", needle, err);
    cr_assert_null(c.text);
    cr_assert_null(c.word);
}

/* The text of word i. */
static const char *word_text(const Conllu *c, size_t i)
{
    static char buf[128];
    const ConlluWord *w = &c->word[i];
    snprintf(buf, sizeof buf, "%.*s", (int)(w->end - w->start), c->text + w->start);
    return buf;
}

static const char *SENT =
    "# sent_id = 1\n"
    "# text = The cat sat.\n"
    "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
    "2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_\n"
    "3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\tSpaceAfter=No\n"
    "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n"
    "\n";

Test(conllu, a_plain_sentence_gives_its_text_spans_heads_and_relations)
{
    Conllu c;
    parse_ok(&c, SENT);
    cr_assert_eq(c.nsent, 1);
    cr_assert_eq(c.nword, 4);
    cr_assert_eq(c.ntext, strlen("The cat sat.\n"));
    cr_assert(memcmp(c.text, "The cat sat.\n", c.ntext) == 0);
    cr_assert_eq(c.sent[0].start, 0);
    cr_assert_eq(c.sent[0].end, 12);
    cr_assert_eq(c.sent[0].line, 2, "a sentence's line is its # text line");
    const char *want[] = {"The", "cat", "sat", "."};
    uint32_t heads[] = {2, 3, 0, 3};
    const char *rels[] = {"det", "nsubj", "root", "punct"};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_str_eq(word_text(&c, i), want[i]);
        cr_assert_eq(c.word[i].head, heads[i]);
        cr_assert_str_eq(c.rel_name[c.word[i].rel], rels[i]);
        cr_assert_eq(c.word[i].line, (uint32_t)i + 3);
    }
    conllu_free(&c);
}

Test(conllu, multiword_tokens_split_where_their_words_spell_them)
{
    Conllu c;
    parse_ok(&c, "# text = I don't know\n"
                 "1\tI\tI\tPRON\t_\t_\t4\tnsubj\t_\t_\n"
                 "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
                 "2\tdo\tdo\tAUX\t_\t_\t4\taux\t_\t_\n"
                 "3\tn't\tnot\tPART\t_\t_\t4\tadvmod\t_\t_\n"
                 "4\tknow\tknow\tVERB\t_\t_\t0\troot\t_\t_\n");
    cr_assert_eq(c.multiword, 1);
    cr_assert_eq(c.multiword_unsplit, 0);
    cr_assert_str_eq(word_text(&c, 1), "do");
    cr_assert_str_eq(word_text(&c, 2), "n't");
    cr_assert_eq(c.word[1].start, 2);
    cr_assert_eq(c.word[2].start, 4);
    cr_assert_str_eq(word_text(&c, 3), "know");
    conllu_free(&c);
}

Test(conllu, a_multiword_token_its_words_do_not_spell_goes_whole_to_its_first_word)
{
    Conllu c;
    parse_ok(&c, "1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n"
                 "1\tde\tde\tADP\t_\t_\t3\tcase\t_\t_\n"
                 "2\tle\tle\tDET\t_\t_\t3\tdet\t_\t_\n"
                 "3\tpain\tpain\tNOUN\t_\t_\t0\troot\t_\t_\n");
    cr_assert_eq(c.multiword_unsplit, 1);
    cr_assert_eq(c.joined, 1, "no # text: the tokens are joined");
    cr_assert(memcmp(c.text, "du pain\n", c.ntext) == 0);
    cr_assert_str_eq(word_text(&c, 0), "du");
    cr_assert_eq(c.word[1].start, c.word[1].end, "the second word holds no byte");
    cr_assert_eq(c.word[1].start, 2);
    cr_assert_str_eq(word_text(&c, 2), "pain");
    conllu_free(&c);
}

Test(conllu, empty_nodes_are_counted_and_in_no_tree)
{
    Conllu c;
    parse_ok(&c, "# text = go and see\n"
                 "1\tgo\tgo\tVERB\t_\t_\t0\troot\t_\t_\n"
                 "2\tand\tand\tCCONJ\t_\t_\t3\tcc\t_\t_\n"
                 "2.1\tgo\tgo\tVERB\t_\t_\t_\t_\t1:conj\tCopyOf=1\n"
                 "3\tsee\tsee\tVERB\t_\t_\t1\tconj\t_\t_\n");
    cr_assert_eq(c.empty, 1);
    cr_assert_eq(c.nword, 3);
    cr_assert_str_eq(word_text(&c, 2), "see");
    cr_assert_eq(c.word[2].head, 1);
    conllu_free(&c);
}

Test(conllu, without_text_tokens_are_joined_by_space_after)
{
    Conllu c;
    parse_ok(&c, "1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
                 "2\t!\t!\tPUNCT\t_\t_\t1\tpunct\t_\t_\n"
                 "\n\n"
                 "# comment only\n"
                 "\n"
                 "1\tok\tok\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No|Foo=1\n"
                 "2\tthen\tthen\tADV\t_\t_\t1\tadvmod\t_\t_");
    cr_assert_eq(c.nsent, 2, "a block of comments alone is no sentence");
    cr_assert_eq(c.joined, 2);
    cr_assert(memcmp(c.text, "Hi!\nokthen\n", c.ntext) == 0, "got %.*s", (int)c.ntext, c.text);
    cr_assert_str_eq(word_text(&c, 3), "then");
    conllu_free(&c);
}

Test(conllu, crlf_files_and_no_break_spaces_in_the_text_are_read)
{
    Conllu c;
    parse_ok(&c, "# text = a\xc2\xa0" "b\r\n"
                 "1\ta\ta\tX\t_\t_\t0\troot\t_\t_\r\n"
                 "2\tb\tb\tX\t_\t_\t1\tdep\t_\t_\r\n"
                 "\r\n");
    cr_assert_eq(c.ntext, 5);
    cr_assert_str_eq(word_text(&c, 1), "b");
    cr_assert_eq(c.word[1].start, 3);
    conllu_free(&c);
}

Test(conllu, what_is_not_conllu_is_refused_with_its_line)
{
    parse_fails("Hello world.\nThis is text.\n", 1, "expected 10 tab-separated fields");
    parse_fails("# only a comment\n", 0, "no sentence");
    parse_fails("1\ta\ta\tX\t_\t_\t0\troot\t_\n", 1, "found 9");
    parse_fails("1\ta\ta\tX\t_\t_\t0\t\t_\t_\n", 1, "field 8 is empty");
    Conllu c;
    char err[300] = "";
    const char nul[] = "1\ta\ta\tX\t_\t_\t0\troot\t_\t_\nx\0y\n";
    cr_assert_eq(conllu_parse(&c, (const unsigned char *)nul, sizeof nul - 1, "t.conllu", err,
                              sizeof err), -1);
    cr_assert(strstr(err, "t.conllu:2: a NUL byte"), "%s", err);
}

#define W(id, form, head, rel) id "\t" form "\t_\tX\t_\t_\t" head "\t" rel "\t_\t_\n"

Test(conllu, bad_ids_heads_and_trees_are_refused_with_their_line)
{
    parse_fails(W("1", "a", "0", "root") W("3", "b", "1", "dep"), 2, "word 3 where word 2");
    parse_fails(W("x", "a", "0", "root"), 1, "is not a word number");
    parse_fails(W("1", "a", "0", "root") W("2", "b", "7", "dep"), 2,
                "HEAD 7 names no word: the sentence has 2");
    parse_fails(W("1", "a", "0", "root") W("2", "b", "-1", "dep"), 2, "HEAD \"-1\"");
    parse_fails(W("1", "a", "_", "root"), 1, "HEAD \"_\"");
    parse_fails(W("1", "a", "0", "_"), 1, "DEPREL");
    parse_fails(W("1", "a", "2", "dep") W("2", "b", "3", "dep") W("3", "c", "2", "dep"), 2,
                "cycle through word 2");
    parse_fails(W("1", "a", "1", "dep"), 1, "cycle through word 1");
    parse_fails(W("1-3", "abc", "_", "_") W("1", "a", "0", "root") W("2", "b", "1", "dep"), 3,
                "ends inside a multiword token");
    parse_fails(W("1", "a", "0", "root") W("3-4", "cd", "_", "_"), 2, "expected 2-M");
    parse_fails(W("1", "a", "0", "root") W("0.1", "e", "_", "_"), 2, "must follow word 0");
    parse_fails(W("1", "a", "0", "root") "# late\n", 2, "a comment among");
    parse_fails("# text = a\n# text = b\n" W("1", "a", "0", "root"), 2, "a second # text");
}

Test(conllu, a_form_the_text_does_not_hold_is_refused)
{
    parse_fails("# text = the dog\n" W("1", "the", "2", "det") W("2", "cat", "0", "root"), 3,
                "FORM \"cat\" is not what the sentence's # text (line 1) reads there: \"dog\"");
    parse_fails("# text = the cat sat\n" W("1", "the", "2", "det") W("2", "cat", "0", "root"), 1,
                "# text goes on after the sentence's last token: \"sat\"");
}

Test(conllu, mixed_line_endings_are_refused)
{
    parse_fails("1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n2\tb\tb\tX\t_\t_\t1\tdep\t_\t_\r\n", 2,
                "mixed line endings: this line ends in CRLF, line 1 in LF");
    parse_fails("1\ta\ta\tX\t_\t_\t0\troot\t_\t_\r\n\n", 2,
                "mixed line endings: this line ends in LF, line 1 in CRLF");
    parse_fails("1\ta\ta\tX\t_\t_\t0\troot\t_\t_\rx\n", 1, "carriage return");
}

Test(conllu, textfile_read_gives_a_conllu_files_text_and_names_a_bad_line)
{
    const char *dir = tu_tmpdir("conllu_read");
    char path[512];
    snprintf(path, sizeof path, "%s/s.conllu", dir);
    cr_assert_eq(tu_write_file(path, SENT, strlen(SENT)), 0);
    TextFile f;
    char err[1500] = "";
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.n, 13);
    cr_assert(memcmp(f.bytes, "The cat sat.\n", 13) == 0);
    cr_assert(strstr(f.note, "1 sentences, 4 words"), "%s", f.note);
    textfile_free(&f);
    const char *bad = "# text = x\n1\tx\tx\tX\t_\t_\t5\troot\t_\t_\n";
    cr_assert_eq(tu_write_file(path, bad, strlen(bad)), 0);
    cr_assert_eq(textfile_read(&f, path, 0, err, sizeof err), -1);
    cr_assert(strstr(err, "s.conllu:2: HEAD 5 names no word"), "%s", err);
    cr_assert_null(f.bytes);
}

Test(conllu, train_on_a_conllu_file_says_what_it_read_and_a_bad_one_exits_1)
{
    Env e;
    env_init(&e, "conllu_train");
    char data[600], out_text[4096];
    size_t n = 0;
    for (int i = 0; i < 20 && n + strlen(SENT) < sizeof out_text; i++) {
        memcpy(out_text + n, SENT, strlen(SENT));
        n += strlen(SENT);
    }
    make_file(&e, "t.conllu", out_text, n, data, sizeof data);
    char *out = NULL;
    int rc = tu_run(&out, "%s/train --data %s --steps 2 --batch 2 --block 8 --layers 1 --embd 8 "
                    "--heads 2 --eval-iters 1 --out %s/m.ckpt 2>&1", tu_bin(), data, e.dir);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "CoNLL-U, training on its sentences' text, one a line (260 bytes): "
                          "20 sentences, 80 words"), "%s", out);
    free(out);
    const char *bad = "not\tconllu\n";
    make_file(&e, "bad.conllu", bad, strlen(bad), data, sizeof data);
    rc = tu_run(&out, "%s/train --data %s --steps 2 --out %s/b.ckpt 2>&1", tu_bin(), data, e.dir);
    expect_error(out, rc, 1, "train", "bad.conllu:1: expected 10 tab-separated fields");
    free(out);
}

/* The treebank itself, read whole: every split parses, with the sentence
 * counts its README gives. */
Test(conllu, the_english_web_treebank_reads_whole)
{
    struct stat st;
    if (stat(EWT_DIR, &st) != 0) {
        cr_skip_test("%s is absent (the UD English Web Treebank; its README says where "
                     "to get it)", EWT_DIR);
    }
    const char *split[] = {"dev", "test", "train"};
    size_t want[] = {2001, 2077, 12544};
    for (int i = 0; i < 3; i++) {
        char path[256], err[1500] = "";
        snprintf(path, sizeof path, "%s/en_ewt-ud-%s.conllu", EWT_DIR, split[i]);
        size_t n;
        unsigned char *b = tu_read_file(path, &n);
        cr_assert_not_null(b, "cannot read %s", path);
        Conllu c;
        cr_assert_eq(conllu_parse(&c, b, n, path, err, sizeof err), 0, "%s", err);
        cr_assert_eq(c.nsent, want[i], "%s: %zu sentences", path, c.nsent);
        for (size_t s = 0; s < c.nsent; s++)
            cr_assert_eq(c.text[c.sent[s].end], '\n');
        conllu_free(&c);
        free(b);
    }
}

/* explore: the files of --explore and --explore-json (see explore.h). */
#include "app/report/explore.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "app/common/cli.h"
#include "app/report/report.h"
#include "app/report/report_files.h"
#include "analysis/deps.h"
#include "model/gates.h"
#include "util/errbuf.h"
#include "util/json.h"

/* Where explore_page.html wants the data: `const DATA = {...};` replaces it. */
#define DATA_MARKER "/*@DATA@*/"

/* Base64 (RFC 4648, padded) of bytes streamed in through b64_put. */
typedef struct {
    FILE *f;
    unsigned char buf[3];
    int n;
} B64;

static void b64_flush(B64 *b)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (b->n == 0)
        return;
    unsigned v = (unsigned)b->buf[0] << 16 | (b->n > 1 ? (unsigned)b->buf[1] << 8 : 0) |
                 (b->n > 2 ? b->buf[2] : 0);
    char out[4] = {A[v >> 18 & 63], A[v >> 12 & 63], b->n > 1 ? A[v >> 6 & 63] : '=',
                   b->n > 2 ? A[v & 63] : '='};
    fwrite(out, 1, 4, b->f);
    b->n = 0;
}

static void b64_put(B64 *b, unsigned char c)
{
    b->buf[b->n++] = c;
    if (b->n == 3)
        b64_flush(b);
}

/* A weight as the page stores it: round(255 w), clamped to [0, 255]. */
static unsigned char quantise(float w)
{
    double q = floor((double)w * 255.0 + 0.5);
    return (unsigned char)(q < 0 ? 0 : q > 255 ? 255 : q);
}

/* "tokens", "ids" and "pieces" (explore.h), each followed by a comma. */
static void write_tokens(FILE *f, const Explore *e)
{
    const Tokenizer *tok = e->tok;
    fputs("\"tokens\":[", f);
    for (int t = 0; t < e->T; t++) {
        size_t n;
        const unsigned char *p = tok_piece(tok, e->ids[t], &n);
        fputs(t ? "," : "", f);
        if (tok->nmerges == 0) {
            fprintf(f, "%d", p[0]);
            continue;
        }
        fputc('[', f);
        for (size_t k = 0; k < n; k++)
            fprintf(f, "%s%d", k ? "," : "", p[k]);
        fputc(']', f);
    }
    fputs("],\n\"ids\":[", f);
    for (int t = 0; t < e->T; t++)
        fprintf(f, "%s%d", t ? "," : "", e->ids[t]);
    fputs("],\n\"pieces\":[", f);
    for (int t = 0; t < e->T; t++) {
        char label[EXPLORE_LABEL_MAX];
        tok_label(tok, e->ids[t], label, sizeof label);
        fputs(t ? "," : "", f);
        json_fput_string(f, label);
    }
    fputs("],\n", f);
}

/* Relation q has keys on this text (the text relations always; the planted
 * ones where the text's sentences are understood). */
static int rel_known(const Explore *e, int q)
{
    return q == HEADS_REL_RARE ? e->rare_keys != NULL : e->rel_key[q] != NULL;
}

static void head_id(char buf[32], int k, int H)
{
    snprintf(buf, 32, "L%dH%d", k / H, k % H);
}

static void write_heads(FILE *f, const Explore *e)
{
    int n = e->cfg.L * e->cfg.H;
    fputs("\"heads\":[", f);
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &e->st[k];
        char id[32];
        head_id(id, k, e->cfg.H);
        fprintf(f, "%s{\"id\":\"%s\",\"layer\":%d,\"head\":%d,\"type\":\"%s\"", k ? ",\n" : "\n",
                id, k / e->cfg.H, k % e->cfg.H, heads_type_names[s->type]);
        /* The metrics whose rows give them a place among the page's scores. */
        for (int m, place = 1;
             (m = heads_metric_at(offsetof(HeadsMetricRow, explore), place)) >= 0; place++) {
            fprintf(f, ",\"%s\":", heads_metric_table[m].name);
            report_jnum(f, heads_metric(s, m));
        }
        fputs(",\"role\":", f);
        json_fput_string(f, heads_role(s));
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            if (rel_known(e, q)) {
                fprintf(f, ",\"%s\":", heads_rel_table[q].name);
                report_jnum(f, s->rel[q]);
            }
        report_head_relations_json(f, s);
        if (e->log_alpha) {
            float z = gate_eval(e->log_alpha[k], NULL);
            fputs(",\"gate\":", f);
            report_jnum(f, z);
            fprintf(f, ",\"closed\":%s", z == 0.0f ? "true" : "false");
        }
        fputc('}', f);
    }
    fputs("]", f);
}

/* "builtin_corpus":..,"relation_keys":{"name":[[keys of row 0],[keys of row 1],..]
 * or null,...}, followed by a comma. */
static void write_relation_keys(FILE *f, const Explore *e)
{
    int T = e->T;
    fprintf(f, "\"builtin_corpus\":%s,\n\"relation_keys\":{", e->builtin ? "true" : "false");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        fprintf(f, "%s\n\"%s\":", q ? "," : "", heads_rel_table[q].name);
        int rare = q == HEADS_REL_RARE;
        if (rare ? !e->rare_keys : !e->rel_key[q]) {
            fputs("null", f);
            continue;
        }
        fputc('[', f);
        for (int i = 0; i < T; i++) {
            fputs(i ? ",[" : "[", f);
            if (rare) {
                const char *sep = "";
                for (int j = 0; j < T; j++)
                    if (e->rare_keys[(size_t)i * T + j]) {
                        fprintf(f, "%s%d", sep, j);
                        sep = ",";
                    }
            } else if (e->rel_key[q][i] >= 0) {
                fprintf(f, "%d", e->rel_key[q][i]);
            }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("},\n", f);
}

/* "relations":{name: {...}} for every relation with keys on this text
 * (docs/explorer.md, "Relations on this text"), followed by a comma. */
static void write_relations(FILE *f, const Explore *e)
{
    int n = e->cfg.L * e->cfg.H, T = e->T;
    char id[32];
    fputs("\"relations\":{", f);
    const char *sep = "";
    for (int q = 0; q < HEADS_REL_COUNT && e->rel; q++) {
        if (!rel_known(e, q))
            continue;
        const HeadsRelation *r = &e->rel[q];
        fprintf(f, "%s\n\"%s\":{\"planted\":%s,\"about\":", sep, heads_rel_table[q].name,
                heads_rel_table[q].planted ? "true" : "false");
        sep = ",";
        json_fput_string(f, heads_rel_table[q].about);
        fprintf(f, ",\"named\":\"%s\"", heads_rel_table[q].named_by_key ? "key-next" : "query-key");
        fputs(",\"query_key\":", f);
        if (q == HEADS_REL_RARE) {
            fputs("null", f);
        } else {
            fputc('[', f);
            const char *s2 = "";
            for (int i = 0; i < T; i++)
                if (e->rel_key[q][i] >= 0) {
                    fprintf(f, "%s[%d,%d]", s2, i, e->rel_key[q][i]);
                    s2 = ",";
                }
            fputc(']', f);
        }
        fprintf(f, ",\"rows\":%.0f,\"best_head\":", r->rows);
        if (r->best >= 0) {
            head_id(id, r->best, e->cfg.H);
            fprintf(f, "\"%s\"", id);
        } else {
            fputs("null", f);
        }
        fputs(",\"attention\":", f);
        report_jnum(f, r->attention);
        fputs(",\"uniform\":", f);
        report_jnum(f, r->uniform);
        fputs(",\"bar\":", f);
        report_jnum(f, heads_rel_table[q].bar);
        fputs(",\"loss\":", f);
        report_jnum(f, r->loss);
        if (e->causal && e->causal->pair[q].pairs > 0)
            report_pair_score_json(f, "", &e->causal->pair[q]);
        if (e->causal && q == HEADS_REL_COREF && e->causal->pair[PAIRS_COREF_CLASS].pairs > 0)
            report_pair_score_json(f, "class_", &e->causal->pair[PAIRS_COREF_CLASS]);
        fputs(",\"serves\":[", f);
        const char *s3 = "";
        for (int k = 0; k < n; k++)
            if (heads_serves(&e->st[k], q)) {
                head_id(id, k, e->cfg.H);
                fprintf(f, "%s\"%s\"", s3, id);
                s3 = ",";
            }
        fputs("]}", f);
    }
    fputs("},\n", f);
}

/* "clearest": the clearest serving head (heads_clearest) as {"head", "layer",
 * "relation", "attention"}, or null; then "sentences": the text's sentences
 * that the window shows, in window positions [first, end), with "understood"
 * (analysis/planted.h) and "cut" (the window holds only part of it). Each followed by
 * a comma. */
static void write_clearest_and_sentences(FILE *f, const Explore *e)
{
    int rel, k = heads_clearest(e->st, e->cfg.L * e->cfg.H, &rel);
    fputs("\"clearest\":", f);
    if (k < 0) {
        fputs("null", f);
    } else {
        char id[32];
        head_id(id, k, e->cfg.H);
        fprintf(f, "{\"head\":\"%s\",\"layer\":%d,\"relation\":\"%s\",\"attention\":", id,
                k / e->cfg.H, heads_rel_table[rel].name);
        report_jnum(f, e->st[k].rel[rel]);
        fputc('}', f);
    }
    fputs(",\n\"sentences\":[", f);
    size_t lo = e->base, hi = e->base + (size_t)e->T;
    const char *sep = "";
    size_t ns = e->planted ? e->planted->nsentence : 0;
    for (size_t s = 0; s < ns; s++) {
        const PlantedSentence *x = &e->planted->sentence[s];
        if (x->end <= lo || x->first >= hi)
            continue;
        size_t a = x->first > lo ? x->first : lo, b = x->end < hi ? x->end : hi;
        int cut = a != x->first || b != x->end;
        fprintf(f, "%s{\"first\":%zu,\"end\":%zu,\"understood\":%s,\"cut\":%s", sep,
                a - lo, b - lo, x->understood ? "true" : "false", cut ? "true" : "false");
        /* Why a whole sentence is not understood: the first word no line of
         * the grammar places, what fits there and the nearest pattern
         * (docs/corpus.md, "When a sentence is not understood"). */
        char why[600];
        if (!cut && planted_why(e->planted, s, why, sizeof why)) {
            fputs(",\"why\":", f);
            json_fput_string(f, why);
        }
        fputc('}', f);
        sep = ",";
    }
    fputs("],\n", f);
}

/* "gold": the treebank sentence's dependencies (explore.h, ExploreGold;
 * docs/explorer.md, "Gold dependencies"), followed by a comma; nothing when
 * the text is not a treebank's. */
static void write_gold(FILE *f, const Explore *e)
{
    const ExploreGold *g = e->gold;
    if (!g)
        return;
    int n = e->cfg.L * e->cfg.H;
    char id[32];
    fputs("\"gold\":{\"file\":", f);
    json_fput_string(f, g->file);
    fprintf(f, ",\"sentence\":%zu,\"line\":%u,\"words\":%zu,\"roots\":%zu,\"no_token\":%zu,"
            "\n\"pairs\":[", g->sentence, g->line, g->words, g->roots, g->no_token);
    for (size_t p = 0; p < g->npair; p++) {
        const ExploreGoldPair *x = &g->pair[p];
        fputs(p ? ",\n{\"relation\":" : "\n{\"relation\":", f);
        json_fput_string(f, x->label);
        fprintf(f, ",\"direction\":\"%s\",\"dependent\":", deps_dir_names[x->dir]);
        json_fput_string(f, x->dependent);
        fputs(",\"head\":", f);
        json_fput_string(f, x->head);
        head_id(id, x->best, e->cfg.H);
        fprintf(f, ",\"dependent_id\":%u,\"head_id\":%u,\"query\":%d,\"key\":[%d,%d],"
                "\"best_head\":\"%s\",\"attention\":[", x->dependent_id, x->head_id, x->query,
                x->key0, x->key1, id);
        for (int k = 0; k < n; k++) {
            fputs(k ? "," : "", f);
            report_jnum(f, x->attn[k]);
        }
        fputs("]}", f);
    }
    fputs("],\n\"relations\":[", f);
    for (size_t r = 0; r < g->nrel; r++) {
        const ExploreGoldRelation *x = &g->rel[r];
        fputs(r ? ",\n{\"relation\":" : "\n{\"relation\":", f);
        json_fput_string(f, x->label);
        head_id(id, x->best, e->cfg.H);
        fprintf(f, ",\"direction\":\"%s\",\"pairs\":%zu,\"best_head\":\"%s\",\"attention\":",
                deps_dir_names[x->dir], x->pairs, id);
        report_jnum(f, x->attention);
        fputs(",\"uniform\":", f);
        report_jnum(f, x->uniform);
        fputc('}', f);
    }
    fputs("]},\n", f);
}

/* The documents' own example sentences: the page's menu (docs/explorer.md).
 * The first two in a row are the text where "The" names the cat again, with a
 * determiner relation to serve ("The → cat"); "The cat sat slowly down." is
 * the one with a verb-modifier row on tokens (in "sat down" the verb's own row
 * predicts its particle). */
static const char *const EXAMPLES[] = {
    "The cat sat on the mat.",
    "The tired cat slept on the warm mat.",
    "The cat sat on the mat. The tired cat slept on the warm mat.",
    "The cat sat down.",
    "The cat sat slowly down.",
    "Apple released a new phone because it is tasty.",
};

/* The DATA object: settings, tokens, quantised attention, head scores. */
/* A routed model's choices: "routed":[L][T][the heads token t's router chose],
 * with a newline; nothing for a plain model. */
static void write_routed(FILE *f, const Explore *e)
{
    if (!e->routed)
        return;
    int L = e->cfg.L, H = e->cfg.H, T = e->T;
    fputs("\"routed\":[", f);
    for (int l = 0; l < L; l++) {
        fputs(l ? ",\n[" : "\n[", f);
        for (int t = 0; t < T; t++) {
            fputs(t ? ",[" : "[", f);
            const char *sep = "";
            for (int h = 0; h < H; h++)
                if (e->routed[((size_t)l * T + t) * H + h]) {
                    fprintf(f, "%s%d", sep, h);
                    sep = ",";
                }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("],\n", f);
}

static void write_data(FILE *f, const Explore *e)
{
    int L = e->cfg.L, H = e->cfg.H, T = e->T;
    fputs("{\"program\":", f);
    json_fput_string(f, "infer (headcount) " HEADCOUNT_VERSION);
    fputs(",\"ckpt\":", f);
    json_fput_string(f, e->ckpt);
    fputs(",\"source\":", f);
    json_fput_string(f, e->source);
    fprintf(f, ",\"L\":%d,\"H\":%d,\"C\":%d,\"block\":%d,\"T\":%d,\"text_bytes\":%zu,"
            "\"text_tokens\":%zu,\"kept\":\"%s\",\"vocab_size\":%d,\"merges\":%d,"
            "\"scored_rows\":%d,\"quant\":255,\"loss\":", L, H, e->cfg.C, e->cfg.T, T,
            e->text_bytes, e->text_tokens, e->from_end ? "last" : "first", e->tok->V,
            e->tok->nmerges, e->scored_rows);
    report_jnum(f, e->loss);
    fputs(",\"delim_share\":", f);
    report_jnum(f, e->delim_share);
    fputs(",", f);
    write_tokens(f, e);
    fputs("\"att\":\"", f);
    B64 b = {.f = f};
    for (int k = 0; k < L * H; k++)
        for (int i = 0; i < T; i++) {
            const float *row = e->att + ((size_t)k * T + i) * T;
            for (int j = 0; j <= i; j++)
                b64_put(&b, quantise(row[j]));
        }
    b64_flush(&b);
    fputs("\",\n", f);
    write_relation_keys(f, e);
    write_relations(f, e);
    write_clearest_and_sentences(f, e);
    write_gold(f, e);
    fputs("\"examples\":[", f);
    for (size_t k = 0; k < sizeof EXAMPLES / sizeof EXAMPLES[0]; k++) {
        fputs(k ? "," : "", f);
        json_fput_string(f, EXAMPLES[k]);
    }
    fputs("],\n", f);
    write_routed(f, e);
    write_heads(f, e);
    fputs("}", f);
}

int explore_write_html(FILE *f, const Explore *e, char *err, size_t errlen)
{
    const char *mark = strstr(explore_page, DATA_MARKER);
    if (!mark)
        return err_set(err, errlen, "the built-in page has no data marker (a build problem)");
    fwrite(explore_page, 1, (size_t)(mark - explore_page), f);
    fputs("const DATA = ", f);
    write_data(f, e);
    fputs(";", f);
    if (e->gold) {
        fputc('\n', f);
        fputs(explore_gold, f);
    }
    fputs(mark + strlen(DATA_MARKER), f);
    return 0;
}

int explore_write_compare(FILE *f, const Explore *const *es, int n, char *err, size_t errlen)
{
    const char *mark = strstr(compare_page, DATA_MARKER);
    if (!mark)
        return err_set(err, errlen, "the built-in compare page has no data marker (a build "
                       "problem)");
    fwrite(compare_page, 1, (size_t)(mark - compare_page), f);
    fputs("const DATA = {\"program\":", f);
    json_fput_string(f, "infer (headcount) " HEADCOUNT_VERSION);
    fputs(",\"source\":", f);
    json_fput_string(f, es[0]->source);
    fprintf(f, ",\"text_bytes\":%zu,\"models\":[", es[0]->text_bytes);
    for (int k = 0; k < n; k++) {
        fprintf(f, "%s{\"D\":%d,\"page\":", k ? ",\n" : "\n", es[k]->cfg.D);
        write_data(f, es[k]);
        fputc('}', f);
    }
    fputs("]};", f);
    fputs(mark + strlen(DATA_MARKER), f);
    return 0;
}

void explore_write_json(FILE *f, const Explore *e)
{
    int L = e->cfg.L, H = e->cfg.H, T = e->T;
    fprintf(f, "{\"L\":%d,\"H\":%d,\"T\":%d,", L, H, T);
    write_tokens(f, e);
    write_relation_keys(f, e);
    write_relations(f, e);
    write_clearest_and_sentences(f, e);
    write_gold(f, e);
    write_routed(f, e);
    write_heads(f, e);
    fputs(",\n\"attention\":[", f);
    for (int l = 0; l < L; l++) {
        fputs(l ? ",\n[" : "\n[", f);
        for (int h = 0; h < H; h++) {
            fputs(h ? ",\n[" : "[", f);
            const float *att = e->att + (size_t)(l * H + h) * T * T;
            for (int i = 0; i < T; i++) {
                fputs(i ? ",[" : "[", f);
                for (int j = 0; j <= i; j++) {
                    if (j)
                        fputc(',', f);
                    fprintf(f, "%.6g", (double)att[(size_t)i * T + j]);
                }
                fputc(']', f);
            }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("]}\n", f);
}

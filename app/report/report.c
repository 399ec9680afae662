/* report: the data files of --heads --report DIR (see report.h): heads.csv,
 * heads.json, summary.json, relations.csv, ablation.csv, tokens.csv, prune.csv, and the
 * directories.
 * The heatmaps and index.html are in report_page.c; what both use (the output
 * file, the per-head fields, head labels) is declared in report_files.h. */
#define _GNU_SOURCE /* RENAME_EXCHANGE for renameat2 */
#include "app/report/report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "app/common/fileguard.h"
#include "app/report/report_files.h"
#include "model/gates.h"
#include "util/errbuf.h"
#include "util/json.h"

const ReportField report_fields[] = {
    {"entropy", offsetof(HeadStats, entropy),
     "mean normalised entropy of a row: 0 = one key, 1 = uniform"},
    {"confidence", offsetof(HeadStats, confidence),
     "mean largest weight of a row"},
    {"distance", offsetof(HeadStats, distance),
     "mean distance to the attended tokens, in positions"},
    {"prev", offsetof(HeadStats, prev),
     "mean weight on the previous token"},
    {"self", offsetof(HeadStats, self),
     "mean weight on the token itself"},
    {"first", offsetof(HeadStats, first),
     "mean weight on the first token of the window"},
    {"delim", offsetof(HeadStats, delim),
     "mean weight on whitespace and punctuation keys"},
    {"repeat", offsetof(HeadStats, repeat),
     "mean weight on the token after the last earlier occurrence of the two tokens ending at the row"},
    {"induction", offsetof(HeadStats, induction),
     "probes: weight on the token after the earlier copy"},
    {"duplicate", offsetof(HeadStats, duplicate),
     "probes: weight on the earlier copy itself"},
    {"delta_loss", offsetof(HeadStats, delta_loss),
     "loss rise when this head alone is silenced"},
    {"grad", offsetof(HeadStats, grad),
     "gate gradient |dL/dgate| (Michel et al. 2019): the sum over windows, then abs"},
    {"grad_window", offsetof(HeadStats, grad_window),
     "the same with abs per window, then the mean"},
    {"jsd_layer", offsetof(HeadStats, jsd_layer),
     "mean Jensen-Shannon divergence to the other heads of its layer (nats)"},
    {"jsd_nearest", offsetof(HeadStats, jsd_nearest),
     "smallest Jensen-Shannon divergence to any other head (nats)"},
    {"previous-token", offsetof(HeadStats, rel[HEADS_REL_PREV]),
     "mean weight on the previous-token relation's key (docs/heads.md, Relations)"},
    {"bracket", offsetof(HeadStats, rel[HEADS_REL_BRACKET]),
     "mean weight on the bracket relation's key (docs/heads.md, Relations)"},
    {"copy", offsetof(HeadStats, rel[HEADS_REL_COPY]),
     "mean weight on the copy relation's key (docs/heads.md, Relations)"},
    {"rare", offsetof(HeadStats, rel[HEADS_REL_RARE]),
     "mean weight on the rare relation's key (docs/heads.md, Relations)"},
    {"agreement", offsetof(HeadStats, rel[HEADS_REL_AGREE]),
     "mean weight on the agreement relation's key (docs/heads.md, Relations)"},
    {"names", offsetof(HeadStats, rel[HEADS_REL_NAMES]),
     "mean weight on the names relation's key (docs/heads.md, Relations)"},
    {"determiner", offsetof(HeadStats, rel[HEADS_REL_DET]),
     "mean weight on the determiner relation's key (docs/heads.md, Relations)"},
    {"coreference", offsetof(HeadStats, rel[HEADS_REL_COREF]),
     "mean weight on the coreference relation's key (docs/heads.md, Relations)"},
    {"subject-verb", offsetof(HeadStats, rel[HEADS_REL_SUBJECT]),
     "mean weight on the subject-verb relation's key (docs/heads.md, Relations)"},
    {"adjective-verb", offsetof(HeadStats, rel[HEADS_REL_MOOD]),
     "mean weight on the adjective-verb relation's key (docs/heads.md, Relations)"},
    {"verb-modifier", offsetof(HeadStats, rel[HEADS_REL_MODIFIER]),
     "mean weight on the verb-modifier relation's key (docs/heads.md, Relations)"},
    {"place", offsetof(HeadStats, rel[HEADS_REL_PLACE]),
     "mean weight on the place relation's key (docs/heads.md, Relations)"},
    {"pronoun", offsetof(HeadStats, rel[HEADS_REL_PRONOUN]),
     "mean weight on the pronoun relation's key (docs/heads.md, Relations)"},
};
const size_t report_nfields = sizeof report_fields / sizeof report_fields[0];

double report_field(const HeadStats *s, const ReportField *f)
{
    return *(const double *)((const char *)s + f->offset);
}

/* Files are created only inside the report's own fresh temporary directory, so
 * O_EXCL never meets a file of the user's; each is fsynced before the directory
 * is put in place. */
int report_out_open(ReportOut *o, const char *dir, const char *name, char *err,
                    size_t errlen)
{
    o->f = NULL;
    if ((size_t)snprintf(o->path, sizeof o->path, "%s/%s", dir, name) >= sizeof o->path)
        return err_set(err, errlen, "%.200s...: path too long", dir);
    int fd = open(o->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    o->fd = fd;
    o->f = fd >= 0 ? guard_fdopen(fd, &o->error) : NULL;
    if (!o->f) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return err_set(err, errlen, "%s: cannot create: %s", o->path, strerror(saved));
    }
    return 0;
}

int report_out_close(ReportOut *o, char *err, size_t errlen)
{
    int bad = guard_stream_close(o->f, o->fd, &o->error);
    o->f = NULL;
    if (bad)
        return err_set(err, errlen, "%s: write failed: %s", o->path, strerror(bad));
    return 0;
}

/* A JSON number, or null for a non-finite value. */
static void jnum(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

/* A JSON number with ten significant digits, for the causal measures, which
 * scripts and tests compare across runs to 1e-6; null when not finite. */
static void jnum10(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.10g", v);
    else
        fputs("null", f);
}

/* s as one CSV field (RFC 4180): quoted, with '"' doubled, when it holds a
 * comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

const char *report_token_label(char *buf, size_t len, const Tokenizer *tok, int id)
{
    tok_label(tok, id, buf, len);
    return buf;
}

/* "L1H10": no spreadsheet reads it as a number (as it would "1.10"). */
const char *report_head_label(char buf[32], int k, int H)
{
    snprintf(buf, 32, "L%dH%d", k / H, k % H);
    return buf;
}

const char *report_rels(char *buf, size_t len, const HeadStats *s, const char *sep,
                        HeadRelTest test)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (test(s, q)) {
            int w = snprintf(buf + at, len - at, "%s%s", at ? sep : "", heads_rel_names[q]);
            if (w < 0 || (size_t)w >= len - at) {
                buf[at] = '\0';   /* a name that does not fit is left out whole */
                break;
            }
            at += (size_t)w;
        }
    return buf;
}

void report_rels_json(FILE *f, const HeadStats *s, HeadRelTest test)
{
    const char *sep = "";
    fputc('[', f);
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        if (test(s, q)) {
            fprintf(f, "%s\"%s\"", sep, heads_rel_names[q]);
            sep = ",";
        }
    fputc(']', f);
}

const char *report_serves(char *buf, size_t len, const HeadStats *s, const char *sep)
{
    return report_rels(buf, len, s, sep, heads_serves);
}

void report_serves_json(FILE *f, const HeadStats *s)
{
    report_rels_json(f, s, heads_serves);
}

void report_head_relations_json(FILE *f, const HeadStats *s)
{
    fputs(",\"attends\":", f);
    report_rels_json(f, s, heads_attends);
    fputs(",\"needed\":", f);
    report_rels_json(f, s, heads_needed);
    fputs(",\"serves\":", f);
    report_rels_json(f, s, heads_serves);
    if (!s->costed)
        return;
    fputs(",\"cost\":{", f);
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        fprintf(f, "%s\"%s\":", q ? "," : "", heads_rel_names[q]);
        jnum(f, s->cost[q]);
    }
    fputc('}', f);
}

static int write_csv(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "heads.csv", err, errlen))
        return -1;
    int H = r->cfg.H, n = r->cfg.L * H;
    fprintf(o.f, "layer,head,type,masked");
    for (size_t i = 0; i < report_nfields; i++)
        fprintf(o.f, ",%s", report_fields[i].name);
    fprintf(o.f, ",delta_loss_pct,nearest,attends,needed,serves");
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        fprintf(o.f, ",cost_%s", heads_rel_names[q]);
    fprintf(o.f, "%s\n", r->log_alpha ? ",gate" : "");
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        char near[32] = "", attends[HEADS_REL_COUNT * 32], needed[HEADS_REL_COUNT * 32];
        char serves[HEADS_REL_COUNT * 32];
        if (s->nearest >= 0)
            report_head_label(near, s->nearest, H);
        fprintf(o.f, "%d,%d,%s,%d", k / H, k % H, heads_type_names[s->type], s->masked);
        for (size_t i = 0; i < report_nfields; i++)
            fprintf(o.f, ",%.6g", report_field(s, &report_fields[i]));
        fprintf(o.f, ",%.6g,%s,%s,%s,%s", 100.0 * s->delta_loss / r->base_loss, near,
                report_rels(attends, sizeof attends, s, "+", heads_attends),
                report_rels(needed, sizeof needed, s, "+", heads_needed),
                report_serves(serves, sizeof serves, s, "+"));
        /* each relation's cost (pairs_cost); empty where it was not measured */
        for (int q = 0; q < HEADS_REL_COUNT; q++)
            if (s->costed)
                fprintf(o.f, ",%.6g", s->cost[q]);
            else
                fputc(',', o.f);
        if (r->log_alpha)
            fprintf(o.f, ",%.6g", (double)gate_eval(r->log_alpha[k], NULL));
        fputc('\n', o.f);
    }
    return report_out_close(&o, err, errlen);
}

/* "name":[{"id":..,"text":label},...] for the tokens ids[0..n). */
static void write_token_list(FILE *f, const char *name, const int *ids, int n,
                             const Tokenizer *tok)
{
    char label[REPORT_LABEL_MAX];
    fprintf(f, ",\"%s\":[", name);
    for (int t = 0; t < n; t++) {
        fprintf(f, "%s{\"id\":%d,\"text\":", t ? "," : "", ids[t]);
        json_fput_string(f, report_token_label(label, sizeof label, tok, ids[t]));
        fputc('}', f);
    }
    fputc(']', f);
}

static int write_heads_json(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "heads.json", err, errlen))
        return -1;
    int H = r->cfg.H, n = r->cfg.L * H;
    fprintf(o.f, "{\"layers\":%d,\"heads\":%d,\"base_loss\":", r->cfg.L, H);
    jnum(o.f, r->base_loss);
    write_token_list(o.f, "text_window", r->text, r->T, r->tok);
    write_token_list(o.f, "probe", r->probe, r->probe_len, r->tok);
    fprintf(o.f, ",\"records\":[\n");
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        fprintf(o.f, "{\"layer\":%d,\"head\":%d,\"type\":\"%s\",\"masked\":%s", k / H, k % H,
                heads_type_names[s->type], s->masked ? "true" : "false");
        for (size_t i = 0; i < report_nfields; i++) {
            fprintf(o.f, ",\"%s\":", report_fields[i].name);
            jnum(o.f, report_field(s, &report_fields[i]));
        }
        fprintf(o.f, ",\"delta_loss_pct\":");
        jnum(o.f, 100.0 * s->delta_loss / r->base_loss);
        char near[32];
        if (s->nearest >= 0)
            fprintf(o.f, ",\"nearest\":\"%s\"", report_head_label(near, s->nearest, H));
        else
            fprintf(o.f, ",\"nearest\":null");
        report_head_relations_json(o.f, s);
        if (r->log_alpha) {
            float z = gate_eval(r->log_alpha[k], NULL);
            fprintf(o.f, ",\"gate\":");
            jnum(o.f, z);
            fprintf(o.f, ",\"closed\":%s", z == 0.0f ? "true" : "false");
        }
        fputc('}', o.f);
        fprintf(o.f, "%s\n", k + 1 < n ? "," : "");
    }
    fprintf(o.f, "]}\n");
    return report_out_close(&o, err, errlen);
}

/* "L1H3" for head k, "" when there is none. */
const char *report_rel_label(char buf[32], int k, int H)
{
    if (k < 0)
        buf[0] = '\0';
    else
        snprintf(buf, 32, "L%dH%d", k / H, k % H);
    return buf;
}

const char report_dropped_why[] =
    "with these tokens the token that predicts the answer already holds the key (as a "
    "repeated name's letters inside one token), so there is no earlier key to attend to";
const char report_skipped_why[] =
    "their key is not before the scored token, or their line is cut by the file's ends";

const char *report_best_label(char buf[32], const HeadsRelation *x, int H)
{
    int k = heads_relation_named(x);
    if (x->rows <= 0.0)
        snprintf(buf, 32, "-");
    else if (k < 0)
        snprintf(buf, 32, "none");
    else
        report_rel_label(buf, k, H);
    return buf;
}

/* "accuracy","logit_diff","pairs" of one pair score, with the key prefix pre. */
static void write_pair_score(FILE *f, const char *pre, const PairScore *p)
{
    fprintf(f, ",\"%saccuracy\":", pre);
    jnum10(f, p->accuracy);
    fprintf(f, ",\"%slogit_diff\":", pre);
    jnum10(f, p->logit_diff);
    fprintf(f, ",\"%spairs\":%.0f", pre, p->pairs);
}

enum { ABLATE_LOGIT_DIFF, ABLATE_ACCURACY, ABLATE_LOSS };

/* ,"name":{"L0H0":change,...}: for every active head, the change of relation
 * q's logit difference, accuracy or loss on its tokens when that head alone is
 * silenced. */
static void write_ablation(FILE *f, const HeadsReport *r, int q, const char *name, int what)
{
    char label[32];
    int H = r->cfg.H, n = r->cfg.L * H, first = 1;
    fprintf(f, ",\"%s\":{", name);
    for (int k = 0; k < n; k++) {
        if (r->st[k].masked)
            continue;
        const CausalScore *a = &r->ablated[k], *b = r->causal;
        double d = what == ABLATE_LOGIT_DIFF ? a->pair[q].logit_diff - b->pair[q].logit_diff
                 : what == ABLATE_ACCURACY ? a->pair[q].accuracy - b->pair[q].accuracy
                 : a->rel_loss[q] - b->rel_loss[q];
        fprintf(f, "%s\"%s\":", first ? "" : ",", report_head_label(label, k, H));
        jnum10(f, d);
        first = 0;
    }
    fputc('}', f);
}

/* Relation q's causal fields (docs/heads.md, "Minimal pairs", "Needed heads"):
 * its minimal pairs (none for relations without), coreference's second contrast,
 * "ablation" (head -> change of the logit difference, or of the loss on the
 * relation's tokens where it has no pairs, when that head alone is silenced),
 * "needed_head" and, with pairs, "needed_set". */
static void write_causal_json(FILE *f, const HeadsReport *r, int q)
{
    char name[32];
    int H = r->cfg.H, paired = r->causal->pair[q].pairs > 0;
    if (paired)
        write_pair_score(f, "", &r->causal->pair[q]);
    if (q == HEADS_REL_COREF && r->causal->pair[PAIRS_COREF_CLASS].pairs > 0)
        write_pair_score(f, "class_", &r->causal->pair[PAIRS_COREF_CLASS]);
    fprintf(f, ",\"ablation_measure\":\"%s\"", paired ? "logit_diff" : "loss");
    write_ablation(f, r, q, "ablation", paired ? ABLATE_LOGIT_DIFF : ABLATE_LOSS);
    if (paired)
        write_ablation(f, r, q, "ablation_accuracy", ABLATE_ACCURACY);
    write_ablation(f, r, q, "ablation_loss", ABLATE_LOSS);
    fputs(",\"needed_head\":", f);
    if (r->needed_head[q] >= 0)
        fprintf(f, "\"%s\"", report_head_label(name, r->needed_head[q], H));
    else
        fputs("null", f);
    if (!paired)
        return;
    const NeededSet *ns = &r->needed[q];
    fputs(",\"needed_set\":[", f);
    for (int i = 0; i < ns->n; i++)
        fprintf(f, "%s\"%s\"", i ? "," : "", report_head_label(name, ns->head[i], H));
    fputs("],\"needed_set_share\":", f);
    jnum(f, ns->share);
    fprintf(f, ",\"needed_set_reached\":%s", ns->reached ? "true" : "false");
}

/* summary.json's "relations" object (docs/heads.md, "Output files"). */
static void write_relations_json(FILE *f, const HeadsReport *r)
{
    char name[32];
    fprintf(f, ",\"relation_windows\":%d,\"builtin_corpus\":%s,\"parsed_sentences\":%zu,",
            r->rel_windows, r->corpus_piece ? "true" : "false", r->parsed_sentences);
    if (r->builtin)
        fprintf(f, "\"planted_dropped\":%zu,", r->planted_dropped);
    fprintf(f, "\"rare_counts\":\"%s\",\"rare_counts_source\":",
            r->rare_training ? "training" : "file");
    json_fput_string(f, r->rare_source ? r->rare_source : "");
    fprintf(f, ",\"probe_tokens\":\"%s\",\"relations\":{", r->probe_rule);
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelation *x = &r->rel[q];
        if (q >= HEADS_REL_TEXT && !r->builtin)
            continue;
        fprintf(f, "%s\"%s\":{\"best_head\":", q ? "," : "", heads_rel_names[q]);
        if (x->best >= 0)
            fprintf(f, "\"%s\"", report_rel_label(name, x->best, r->cfg.H));
        else
            fprintf(f, "null");
        fprintf(f, ",\"attention\":");
        jnum(f, x->attention);
        fprintf(f, ",\"uniform\":");
        jnum(f, x->uniform);
        fprintf(f, ",\"loss\":");
        jnum(f, x->loss);
        fprintf(f, ",\"rows\":%.0f,\"bar\":", x->rows);
        jnum(f, heads_rel_bar[q]);
        if (q == HEADS_REL_COPY || q == HEADS_REL_NAMES) {
            fprintf(f, ",\"loss_ratio\":");
            jnum(f, x->loss_ratio);
            fprintf(f, ",\"first_loss\":");
            jnum(f, x->first_loss);
            fprintf(f, ",\"repeats\":%.0f", x->pairs);
        }
        if (r->causal)
            write_causal_json(f, r, q);
        fputc('}', f);
    }
    fputs("},\"serves\":{", f);
    for (int k = 0; k < r->cfg.L * r->cfg.H; k++) {
        fprintf(f, "%s\"%s\":", k ? "," : "", report_head_label(name, k, r->cfg.H));
        report_serves_json(f, &r->st[k]);
    }
    fputs("},\"attends\":{", f);
    for (int k = 0; k < r->cfg.L * r->cfg.H; k++) {
        fprintf(f, "%s\"%s\":", k ? "," : "", report_head_label(name, k, r->cfg.H));
        report_rels_json(f, &r->st[k], heads_attends);
    }
    fputc('}', f);
    if (r->causal)
        fprintf(f, ",\"causal_windows\":%d,\"ablation_kind\":\"%s\",\"needed_share\":%g,"
                "\"needed_set_share\":%g,\"pairs_skipped\":%zu", r->causal_windows,
                r->mean_ablate ? "mean" : "zero", HEADS_NEEDED_SHARE, HEADS_NEEDED_SET_SHARE,
                r->pairs_skipped);
}

/* --prune-curve's losses as "prune_curve":[{"removed","head","loss"},...]. */
static void write_prune_json(FILE *f, const HeadsReport *r)
{
    char name[32];
    fprintf(f, ",\"prune_curve\":[");
    for (int k = 0; k <= r->nprune; k++) {
        fprintf(f, "%s{\"removed\":%d,\"head\":", k ? "," : "", k);
        if (k)
            fprintf(f, "\"%s\"", report_head_label(name, r->prune_order[k - 1], r->cfg.H));
        else
            fprintf(f, "null");
        fprintf(f, ",\"loss\":");
        jnum(f, r->prune_loss[k]);
        fputc('}', f);
    }
    fputc(']', f);
}

void report_summary_json(FILE *f, const HeadsReport *r)
{
    const HeadsSummary *s = &r->sum;
    fprintf(f, "{\"layers\":%d,\"heads\":%d,\"total_heads\":%d,\"active_heads\":%d,"
            "\"windows\":%d,\"tokens_per_window\":%d,\"vocab_size\":%d,\"merges\":%d,"
            "\"base_loss\":", r->cfg.L, r->cfg.H, r->cfg.L * r->cfg.H, s->active, r->windows, r->T,
            r->tok->V, r->tok->nmerges);
    jnum(f, r->base_loss);
    fprintf(f, ",\"mean_entropy\":");
    jnum(f, s->mean_entropy);
    fprintf(f, ",\"mean_distance\":");
    jnum(f, s->mean_distance);
    fprintf(f, ",\"type_counts\":{");
    for (int t = 0; t < HEAD_TYPES; t++)
        fprintf(f, "%s\"%s\":%d", t ? "," : "", heads_type_names[t], s->type_counts[t]);
    fprintf(f, "},\"effective_heads\":");
    jnum(f, r->effective);
    fprintf(f, ",\"effective_heads_per_layer\":[");
    for (int l = 0; l < r->cfg.L; l++) {
        fputs(l ? "," : "", f);
        jnum(f, r->layer_effective[l]);
    }
    fprintf(f, "],\"removable_heads_1pct\":%d,\"max_importance\":", s->removable_1pct);
    jnum(f, s->max_importance);
    fprintf(f, ",\"jsd_within_layer\":");
    jnum(f, s->jsd_within);
    fprintf(f, ",\"jsd_between_layers\":");
    jnum(f, s->jsd_between);
    fprintf(f, ",\"delimiter_share\":");
    jnum(f, r->delim_share);
    if (r->rel)
        write_relations_json(f, r);
    if (r->prune_order)
        write_prune_json(f, r);
    fprintf(f, "}\n");
}

static int write_summary(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "summary.json", err, errlen))
        return -1;
    report_summary_json(o.f, r);
    return report_out_close(&o, err, errlen);
}

/* relations.csv: one row per relation measured, with its minimal pairs and
 * needed heads where the causal passes ran (empty cells where a field does not
 * apply). */
static int write_relations_csv(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "relations.csv", err, errlen))
        return -1;
    char name[32];
    int H = r->cfg.H;
    fprintf(o.f, "relation,best_head,attention,uniform,loss,rows,loss_ratio,first_loss,repeats,"
            "accuracy,logit_diff,pairs,class_accuracy,class_logit_diff,class_pairs,needed_head,"
            "needed_cost,needed_set,needed_set_share\n");
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelation *x = &r->rel[q];
        if (q >= HEADS_REL_TEXT && !r->builtin)
            continue;
        fprintf(o.f, "%s,%s,%.6g,%.6g,%.6g,%.0f,", heads_rel_names[q],
                report_rel_label(name, x->best, H), x->attention, x->uniform, x->loss,
                x->rows);
        if (q == HEADS_REL_COPY || q == HEADS_REL_NAMES)
            fprintf(o.f, "%.6g,%.6g,%.0f", x->loss_ratio, x->first_loss, x->pairs);
        else
            fprintf(o.f, ",,");
        const PairScore *p = r->causal ? &r->causal->pair[q] : NULL;
        const PairScore *c = r->causal ? &r->causal->pair[PAIRS_COREF_CLASS] : NULL;
        if (p && p->pairs > 0)
            fprintf(o.f, ",%.6g,%.6g,%.0f", p->accuracy, p->logit_diff, p->pairs);
        else
            fprintf(o.f, ",,,");
        if (q == HEADS_REL_COREF && c && c->pairs > 0)
            fprintf(o.f, ",%.6g,%.6g,%.0f", c->accuracy, c->logit_diff, c->pairs);
        else
            fprintf(o.f, ",,,");
        int k = r->causal ? r->needed_head[q] : -1;
        fprintf(o.f, ",%s,", report_rel_label(name, k, H));
        if (k >= 0)
            fprintf(o.f, "%.6g", r->st[k].cost[q]);
        fputc(',', o.f);
        if (p && p->pairs > 0 && r->needed[q].n > 0) {
            for (int i = 0; i < r->needed[q].n; i++)
                fprintf(o.f, "%s%s", i ? "+" : "", report_head_label(name, r->needed[q].head[i], H));
            fprintf(o.f, ",%.6g", r->needed[q].share);
        } else {
            fputc(',', o.f);
        }
        fputc('\n', o.f);
    }
    return report_out_close(&o, err, errlen);
}

/* ablation.csv: the heads x relations matrix of effects, one row per active
 * head and relation measured: the change of the relation's logit difference
 * (empty without pairs), of its accuracy, and of its loss on its tokens when
 * that head alone is silenced, and the cost (pairs_cost) those give. */
static int write_ablation_csv(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "ablation.csv", err, errlen))
        return -1;
    char name[32];
    int H = r->cfg.H, n = r->cfg.L * H;
    fprintf(o.f, "head,relation,logit_diff_change,accuracy_change,loss_change,cost,attends,"
            "needed,serves\n");
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        if (s->masked)
            continue;
        for (int q = 0; q < HEADS_REL_COUNT; q++) {
            if (q >= HEADS_REL_TEXT && !r->builtin)
                continue;
            const PairScore *b = &r->causal->pair[q], *a = &r->ablated[k].pair[q];
            fprintf(o.f, "%s,%s,", report_head_label(name, k, H), heads_rel_names[q]);
            if (b->pairs > 0)
                fprintf(o.f, "%.10g,%.10g", a->logit_diff - b->logit_diff,
                        a->accuracy - b->accuracy);
            else
                fputc(',', o.f);
            fprintf(o.f, ",%.10g,%.10g,%d,%d,%d\n",
                    r->ablated[k].rel_loss[q] - r->causal->rel_loss[q], s->cost[q],
                    heads_attends(s, q), heads_needed(s, q), heads_serves(s, q));
        }
    }
    return report_out_close(&o, err, errlen);
}

/* tokens.csv: the tokens on the heatmaps' axes, the text window's then the
 * probe's: each one's id, its bytes in hex and its label. */
static int write_tokens_csv(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "tokens.csv", err, errlen))
        return -1;
    char label[REPORT_LABEL_MAX];
    fprintf(o.f, "part,position,id,bytes,text\n");
    for (int part = 0; part < 2; part++) {
        const int *ids = part ? r->probe : r->text;
        int n = part ? r->probe_len : r->T;
        for (int t = 0; t < n; t++) {
            size_t len;
            const unsigned char *p = tok_piece(r->tok, ids[t], &len);
            fprintf(o.f, "%s,%d,%d,", part ? "probe" : "text", t, ids[t]);
            for (size_t k = 0; k < len; k++)
                fprintf(o.f, "%02x", p[k]);
            fputc(',', o.f);
            csv_field(o.f, report_token_label(label, sizeof label, r->tok, ids[t]));
            fputc('\n', o.f);
        }
    }
    return report_out_close(&o, err, errlen);
}

static int write_prune(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "prune.csv", err, errlen))
        return -1;
    char name[32];
    fprintf(o.f, "removed,kept,head,loss,loss_pct\n");
    for (int k = 0; k <= r->nprune; k++)
        fprintf(o.f, "%d,%d,%s,%.6g,%.6g\n", k, r->nprune - k,
                k ? report_head_label(name, r->prune_order[k - 1], r->cfg.H) : "",
                r->prune_loss[k], 100.0 * (r->prune_loss[k] / r->base_loss - 1.0));
    return report_out_close(&o, err, errlen);
}

int report_heatmap_dir(char *sub, size_t len, const char *dir, char *err, size_t errlen)
{
    if ((size_t)snprintf(sub, len, "%s/heatmaps", dir) >= len)
        return err_set(err, errlen, "%.200s...: path too long", dir);
    return 0;
}

/* The names a report writes: a file at the top, a heatmap in heatmaps/. */
static const char *const TOP_FILES[] = {REPORT_MARKER, "heads.csv", "heads.json",
                                        "summary.json", "relations.csv", "ablation.csv", "tokens.csv",
                                        "prune.csv",
                                        "index.html"};

static int is_top_file(const char *name)
{
    for (size_t k = 0; k < sizeof TOP_FILES / sizeof TOP_FILES[0]; k++)
        if (strcmp(name, TOP_FILES[k]) == 0)
            return 1;
    return 0;
}

/* "text_L0_H1.svg" or "probe_L2_H3.svg". */
static int is_heatmap(const char *name)
{
    int l, h, n = -1;
    if (sscanf(name, "text_L%d_H%d.svg%n", &l, &h, &n) == 2 && n > 0 && name[n] == '\0')
        return 1;
    n = -1;
    return sscanf(name, "probe_L%d_H%d.svg%n", &l, &h, &n) == 2 && n > 0 && name[n] == '\0';
}

/* Appends "name" to the list of files in the way (at most len bytes in all). */
static void note_foreign(char *list, size_t len, int *count, const char *dir, const char *name)
{
    size_t used = strlen(list);
    if (++*count <= 8 && used < len)
        snprintf(list + used, len - used, "%s%.1000s/%s", used ? ", " : "", dir, name);
}

/* Whether dir (an existing directory) holds only an earlier report of ours: the
 * marker, the report's files and heatmaps/ with its SVGs. The others go to list
 * (up to 8 named) and their number is returned; *marked says whether the marker
 * is there. */
static int foreign_files(const char *dir, int *marked, char *list, size_t len)
{
    int count = 0;
    *marked = 0;
    list[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(list, len, "%s (unreadable: %s)", dir, strerror(errno));
        return 1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        struct stat st;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        int is_dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
        int is_reg = lstat(path, &st) == 0 && S_ISREG(st.st_mode);
        if (is_reg && strcmp(name, REPORT_MARKER) == 0)
            *marked = 1;
        if (is_reg && is_top_file(name))
            continue;
        if (is_dir && strcmp(name, "heatmaps") == 0) {
            DIR *h = opendir(path);
            struct dirent *x;
            while (h && (x = readdir(h)) != NULL) {
                char sub[4700];
                snprintf(sub, sizeof sub, "%s/%s", path, x->d_name);
                if (strcmp(x->d_name, ".") == 0 || strcmp(x->d_name, "..") == 0 ||
                    (is_heatmap(x->d_name) && lstat(sub, &st) == 0 && S_ISREG(st.st_mode)))
                    continue;
                note_foreign(list, len, &count, path, x->d_name);
            }
            if (h)
                closedir(h);
            else
                note_foreign(list, len, &count, dir, name);
            continue;
        }
        note_foreign(list, len, &count, dir, name);
    }
    closedir(d);
    return count;
}

/* What is at dir: 0 nothing, 1 an empty directory, 2 an earlier report of ours;
 * -1 with the reason when a report must not be written there. */
static int dir_state(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno != ENOENT)
            return err_set(err, errlen, "--report %s: %s", dir, strerror(errno));
        return 0;
    }
    if (S_ISLNK(st.st_mode))
        return err_set(err, errlen, "--report %s is a symbolic link; a report replaces its "
                       "directory as a whole, so give the directory's own path or a new "
                       "directory name", dir);
    if (!S_ISDIR(st.st_mode))
        return err_set(err, errlen, "--report %s exists and is not a directory; give a new "
                       "directory name", dir);
    char list[1500];
    int marked, n = foreign_files(dir, &marked, list, sizeof list);
    if (n == 0 && marked)
        return 2;
    if (!marked) {
        /* No marker: every file there is the user's (or another program's). */
        list[0] = '\0';
        n = 0;
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                note_foreign(list, sizeof list, &n, dir, e->d_name);
        if (d)
            closedir(d);
        if (n == 0)
            return 1;
    }
    return err_set(err, errlen, "--report %s holds %d file%s that no earlier report of "
                   "./infer wrote there (%s%s): a report writes only into a new or empty "
                   "directory, or over its own earlier report (marked by %s); give a new "
                   "directory name or move them", dir, n, n > 1 ? "s" : "", list,
                   n > 8 ? ", ..." : "", REPORT_MARKER);
}

int report_check_dir(const char *dir, char *err, size_t errlen)
{
    return dir_state(dir, err, errlen) < 0 ? -1 : 0;
}

/* Removes a report tree of ours (dir/heatmaps/<heatmaps>, dir/<report files>,
 * the two directories); a file not of a report is left, and so is its directory. */
static void remove_report_tree(const char *dir)
{
    char sub[4200], path[4500];
    snprintf(sub, sizeof sub, "%s/heatmaps", dir);
    DIR *d = opendir(sub);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (is_heatmap(e->d_name)) {
            snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(sub);
    for (size_t k = 0; k < sizeof TOP_FILES / sizeof TOP_FILES[0]; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, TOP_FILES[k]);
        unlink(path);
    }
    rmdir(dir);
}

static int write_files(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    char sub[4200];
    if (report_heatmap_dir(sub, sizeof sub, dir, err, errlen))
        return -1;
    if (mkdir(sub, 0777) != 0)
        return err_set(err, errlen, "cannot create directory %s: %s", sub, strerror(errno));
    if (write_csv(dir, r, err, errlen) || write_heads_json(dir, r, err, errlen) ||
        write_summary(dir, r, err, errlen) || write_tokens_csv(dir, r, err, errlen) ||
        report_write_heatmaps(dir, r, err, errlen) ||
        report_write_index(dir, r, err, errlen))
        return -1;
    if (r->prune_order && write_prune(dir, r, err, errlen))
        return -1;
    if (r->rel && write_relations_csv(dir, r, err, errlen))
        return -1;
    if (r->causal && write_ablation_csv(dir, r, err, errlen))
        return -1;
    ReportOut o;
    if (report_out_open(&o, dir, REPORT_MARKER, err, errlen))
        return -1;
    fputs(REPORT_MARKER_TEXT, o.f);
    return report_out_close(&o, err, errlen);
}

/* Puts the complete report at tmp in place of dir (state as dir_state said):
 * renamed over a missing or empty dir; over an earlier report, the two are
 * swapped in one step where the system can (renameat2's RENAME_EXCHANGE), or
 * else the old one is moved aside first; the old one is then removed. */
static int put_in_place(const char *tmp, const char *dir, int state, char *err, size_t errlen)
{
    if (state < 2) {
        if (rename(tmp, dir) != 0)
            return err_set(err, errlen, "cannot rename the report into %s: %s", dir,
                           strerror(errno));
        return 0;
    }
#ifdef SYS_renameat2
    if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        remove_report_tree(tmp); /* now the earlier report */
        return 0;
    }
#endif
    char old[4300];
    snprintf(old, sizeof old, "%s.old.XXXXXX", dir);
    if (!mkdtemp(old))
        return err_set(err, errlen, "cannot move the earlier report in %s aside: %s", dir,
                       strerror(errno));
    if (rename(dir, old) != 0) {
        int saved = errno;
        rmdir(old);
        return err_set(err, errlen, "cannot move the earlier report in %s aside: %s", dir,
                       strerror(saved));
    }
    if (rename(tmp, dir) != 0) {
        int saved = errno;
        rename(old, dir);
        return err_set(err, errlen, "cannot rename the report into %s: %s", dir,
                       strerror(saved));
    }
    remove_report_tree(old);
    return 0;
}

int report_write(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    char real[4096], tmp[4200];
    if (guard_resolve(dir, real, sizeof real))
        return err_set(err, errlen, "%.200s...: path too long", dir);
    int state = dir_state(real, err, errlen);
    if (state < 0)
        return -1;
    size_t n = strlen(real);
    while (n > 1 && real[n - 1] == '/')
        real[--n] = '\0';
    snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", real);
    if (!mkdtemp(tmp))
        return err_set(err, errlen, "cannot create a directory beside %s: %s", real,
                       errno == ENOENT ? "its parent directory does not exist"
                                       : strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    chmod(tmp, 0777 & ~mask); /* mkdtemp makes it 0700; a report gets a directory's mode */
    if (write_files(tmp, r, err, errlen) || put_in_place(tmp, real, state, err, errlen)) {
        remove_report_tree(tmp);
        return -1;
    }
    return 0;
}

/* report: the data files of --heads --report DIR (see report.h): heads.csv,
 * heads.json, summary.json, relations.csv, ablation.csv, tokens.csv, prune.csv,
 * and summary.json's object for --json. The heatmaps and index.html are
 * report_page.c's, the directory they all go into report_dir.c's; what they
 * share (the output file, the per-head fields, labels) is report_files.h's. */
#include "app/report/report.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "app/report/report_files.h"
#include "app/report/report_route.h"
#include "model/gates.h"
#include "util/json.h"

/* A JSON number with ten significant digits, for the causal measures, which
 * scripts and tests compare across runs to 1e-6; null when not finite. */
static void jnum10(FILE *f, double v)
{
    json_fput_number(f, v, 10);
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

static int write_csv(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    ReportOut o;
    if (report_out_open(&o, dir, "heads.csv", err, errlen))
        return -1;
    int H = r->cfg.H, n = r->cfg.L * H;
    fprintf(o.f, "layer,head,type,masked");
    for (size_t i = 0; i < REPORT_NFIELDS; i++)
        fprintf(o.f, ",%s", report_field_at(i).name);
    fprintf(o.f, ",delta_loss_pct,nearest,attends,needed,serves");
    for (int q = 0; q < HEADS_REL_COUNT; q++)
        fprintf(o.f, ",cost_%s", heads_rel_table[q].name);
    fprintf(o.f, "%s\n", r->log_alpha ? ",gate" : "");
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        char near[32] = "", attends[HEADS_REL_COUNT * 32], needed[HEADS_REL_COUNT * 32];
        char serves[HEADS_REL_COUNT * 32];
        if (s->nearest >= 0)
            report_head_label(near, s->nearest, H);
        fprintf(o.f, "%d,%d,%s,%d", k / H, k % H, heads_type_names[s->type], s->masked);
        for (size_t i = 0; i < REPORT_NFIELDS; i++) {
            ReportField fi = report_field_at(i);
            fprintf(o.f, ",%.6g", report_field(s, &fi));
        }
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
    report_jnum(o.f, r->base_loss);
    write_token_list(o.f, "text_window", r->text, r->T, r->tok);
    write_token_list(o.f, "probe", r->probe, r->probe_len, r->tok);
    fprintf(o.f, ",\"records\":[\n");
    for (int k = 0; k < n; k++) {
        const HeadStats *s = &r->st[k];
        fprintf(o.f, "{\"layer\":%d,\"head\":%d,\"type\":\"%s\",\"masked\":%s", k / H, k % H,
                heads_type_names[s->type], s->masked ? "true" : "false");
        for (size_t i = 0; i < REPORT_NFIELDS; i++) {
            ReportField fi = report_field_at(i);
            fprintf(o.f, ",\"%s\":", fi.name);
            report_jnum(o.f, report_field(s, &fi));
        }
        fprintf(o.f, ",\"delta_loss_pct\":");
        report_jnum(o.f, 100.0 * s->delta_loss / r->base_loss);
        char near[32];
        if (s->nearest >= 0)
            fprintf(o.f, ",\"nearest\":\"%s\"", report_head_label(near, s->nearest, H));
        else
            fprintf(o.f, ",\"nearest\":null");
        report_head_relations_json(o.f, s);
        if (r->log_alpha) {
            float z = gate_eval(r->log_alpha[k], NULL);
            fprintf(o.f, ",\"gate\":");
            report_jnum(o.f, z);
            fprintf(o.f, ",\"closed\":%s", z == 0.0f ? "true" : "false");
        }
        fputc('}', o.f);
        fprintf(o.f, "%s\n", k + 1 < n ? "," : "");
    }
    fprintf(o.f, "]}\n");
    return report_out_close(&o, err, errlen);
}

void report_pair_score_json(FILE *f, const char *pre, const PairScore *p)
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
        report_pair_score_json(f, "", &r->causal->pair[q]);
    if (q == HEADS_REL_COREF && r->causal->pair[PAIRS_COREF_CLASS].pairs > 0)
        report_pair_score_json(f, "class_", &r->causal->pair[PAIRS_COREF_CLASS]);
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
    report_jnum(f, ns->share);
    fprintf(f, ",\"needed_set_reached\":%s", ns->reached ? "true" : "false");
}

/* summary.json's "not_understood" on a text that is not a piece of the
 * corpus: how many of its sentences the grammar does not write, and the first
 * REPORT_WHY_LISTED of them with why (planted_why), then a comma. */
enum { REPORT_WHY_LISTED = 20 };
static void write_not_understood(FILE *f, const HeadsReport *r)
{
    const Planted *p = r->planted;
    if (!p || r->corpus_piece)
        return;
    fprintf(f, "\"not_understood\":{\"count\":%zu,\"listed\":[", p->nsentence - p->parsed);
    size_t listed = 0;
    for (size_t s = 0; s < p->nsentence && listed < REPORT_WHY_LISTED; s++) {
        char why[600];
        if (!planted_why(p, s, why, sizeof why))
            continue;
        size_t n;
        const char *text = planted_sentence_text(p, s, &n);
        char sentence[512];
        snprintf(sentence, sizeof sentence, "%.*s", (int)n, text);
        fputs(listed++ ? ",{\"sentence\":" : "{\"sentence\":", f);
        json_fput_string(f, sentence);
        fputs(",\"why\":", f);
        json_fput_string(f, why);
        fputc('}', f);
    }
    fputs("]},", f);
}

/* summary.json's "relations" object (docs/heads.md, "Output files"). */
static void write_relations_json(FILE *f, const HeadsReport *r)
{
    char name[32];
    fprintf(f, ",\"relation_windows\":%d,\"builtin_corpus\":%s,\"parsed_sentences\":%zu,",
            r->rel_windows, r->corpus_piece ? "true" : "false", r->parsed_sentences);
    if (r->builtin)
        fprintf(f, "\"planted_dropped\":%zu,", r->planted_dropped);
    write_not_understood(f, r);
    fprintf(f, "\"rare_counts\":\"%s\",\"rare_counts_source\":",
            r->rare_training ? "training" : "file");
    json_fput_string(f, r->rare_source ? r->rare_source : "");
    fprintf(f, ",\"probe_tokens\":\"%s\",\"relations\":{", r->probe_rule);
    for (int q = 0; q < HEADS_REL_COUNT; q++) {
        const HeadsRelation *x = &r->rel[q];
        if (heads_rel_table[q].planted && !r->builtin)
            continue;
        fprintf(f, "%s\"%s\":{\"best_head\":", q ? "," : "", heads_rel_table[q].name);
        if (x->best >= 0)
            fprintf(f, "\"%s\"", report_rel_label(name, x->best, r->cfg.H));
        else
            fprintf(f, "null");
        fprintf(f, ",\"attention\":");
        report_jnum(f, x->attention);
        fprintf(f, ",\"uniform\":");
        report_jnum(f, x->uniform);
        fprintf(f, ",\"loss\":");
        report_jnum(f, x->loss);
        fprintf(f, ",\"rows\":%.0f,\"bar\":", x->rows);
        report_jnum(f, heads_rel_table[q].bar);
        fprintf(f, ",\"planted\":%s", heads_rel_table[q].planted ? "true" : "false");
        if (heads_rel_table[q].repeat) {
            fprintf(f, ",\"loss_ratio\":");
            report_jnum(f, x->loss_ratio);
            fprintf(f, ",\"first_loss\":");
            report_jnum(f, x->first_loss);
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
        report_jnum(f, r->prune_loss[k]);
        fputc('}', f);
    }
    fputc(']', f);
}

/* The compromise measure (analysis/compromise.h) as
 * "compromise":{"min_rows","overlap","pairs":[{"relations","rows","overlap","best",
 * "one_head","attention":{head:[a,b]}}],"heads":{head:{"split","keys"}}}. */
static void write_compromise_json(FILE *f, const HeadsReport *r)
{
    const Compromise *c = r->compromise;
    char name[32], other[32];
    int n = r->cfg.L * r->cfg.H;
    fprintf(f, ",\"compromise\":{\"min_rows\":%d,\"overlap\":", COMPROMISE_MIN_ROWS);
    report_jnum(f, c->overlap);
    fputs(",\"pairs\":[", f);
    for (int i = 0; i < c->npair; i++) {
        const CompromisePair *p = &c->pair[i];
        fprintf(f, "%s{\"relations\":[\"%s\",\"%s\"],\"rows\":%.0f,\"overlap\":", i ? "," : "",
                heads_rel_table[p->q].name, heads_rel_table[p->r].name, p->rows);
        report_jnum(f, p->overlap);
        if (p->best_q >= 0)
            fprintf(f, ",\"best\":[\"%s\",\"%s\"],\"one_head\":%s",
                    report_head_label(name, p->best_q, r->cfg.H),
                    report_head_label(other, p->best_r, r->cfg.H),
                    p->best_q == p->best_r ? "true" : "false");
        else
            fputs(",\"best\":null,\"one_head\":null", f);
        fputs(",\"attention\":{", f);
        for (int k = 0; k < n; k++) {
            fprintf(f, "%s\"%s\":[", k ? "," : "", report_head_label(name, k, r->cfg.H));
            report_jnum(f, p->att[2 * k]);
            fputc(',', f);
            report_jnum(f, p->att[2 * k + 1]);
            fputc(']', f);
        }
        fputs("}}", f);
    }
    fputs("],\"heads\":{", f);
    for (int k = 0; k < n; k++) {
        fprintf(f, "%s\"%s\":{\"split\":", k ? "," : "", report_head_label(name, k, r->cfg.H));
        report_jnum(f, c->split[k]);
        fputs(",\"keys\":", f);
        report_jnum(f, c->keys[k]);
        fputc('}', f);
    }
    fputs("}}", f);
}

/* An array of the n heads' values. */
static void write_head_values(FILE *f, const double *v, int n)
{
    fputc('[', f);
    for (int k = 0; k < n; k++) {
        fputs(k ? "," : "", f);
        report_jnum(f, v[k]);
    }
    fputc(']', f);
}

/* One relation in one direction of a CoNLL-U file's gold dependencies. */
static void write_dep_score(FILE *f, const DepsScore *sc, int n, int H)
{
    fprintf(f, "{\"pairs\":%zu,\"best_head\":", sc->pairs);
    if (sc->best >= 0)
        fprintf(f, "\"L%dH%d\",\"accuracy\":", sc->best / H, sc->best % H);
    else
        fputs("null,\"accuracy\":", f);
    report_jnum(f, sc->best >= 0 ? sc->acc[sc->best] : 0.0);
    fputs(",\"attention\":", f);
    report_jnum(f, sc->best >= 0 ? sc->attn[sc->best] : 0.0);
    fprintf(f, ",\"offset\":%d,\"offset_accuracy\":", sc->offset);
    report_jnum(f, sc->offset_acc);
    fputs(",\"uniform_accuracy\":", f);
    report_jnum(f, sc->uniform_acc);
    fputs(",\"se\":", f);
    report_jnum(f, sc->se);
    fprintf(f, ",\"beats_offset\":%s,\"ablation_pairs\":%zu,\"ablation_tokens\":%zu,"
            "\"loss\":", sc->beats ? "true" : "false", sc->loss_pairs, sc->loss_tokens);
    report_jnum(f, sc->loss);
    fputs(",\"cost\":", f);
    report_jnum(f, sc->best >= 0 ? sc->cost[sc->best] : 0.0);
    fprintf(f, ",\"serves\":%s,\"head_accuracy\":", deps_serves(sc, sc->best) ? "true"
                                                                                 : "false");
    write_head_values(f, sc->acc, n);
    fputs(",\"head_attention\":", f);
    write_head_values(f, sc->attn, n);
    fputs(",\"head_cost\":", f);
    write_head_values(f, sc->cost, n);
    fputc('}', f);
}

/* {"1":x,...}: the share of pairs at each distance in a relation (null: none). */
static void write_shares_by_distance(FILE *f, const size_t *at, const size_t *dep)
{
    for (int k = 1; k <= DEPS_ALIGN_MAX_DIST; k++) {
        fprintf(f, "%s\"%d\":", k > 1 ? "," : "{", k);
        report_jnum(f, at[k] ? (double)dep[k] / (double)at[k] : NAN);
    }
    fputc('}', f);
}

/* "alignment": Vig & Belinkov's dependency alignment (docs/heads.md, "Dependency
 * alignment"); values not defined are null. */
static void write_align_json(FILE *f, const DepsAlign *al)
{
    char lab[32];
    fputs("{\"per_head\":{", f);
    for (int k = 0; k < al->L * al->H; k++) {
        fprintf(f, "%s\"%s\":", k ? "," : "", report_head_label(lab, k, al->H));
        report_jnum(f, al->head[k]);
    }
    fputs("},\"mean_distance\":{", f);
    for (int k = 0; k < al->L * al->H; k++) {
        fprintf(f, "%s\"%s\":", k ? "," : "", report_head_label(lab, k, al->H));
        report_jnum(f, al->distance[k]);
    }
    fputs("},\"per_layer\":[", f);
    for (int l = 0; l < al->L; l++) {
        int k = al->layer_best[l];
        fprintf(f, "%s{\"best_head\":", l ? "," : "");
        if (k >= 0)
            fprintf(f, "\"%s\",\"best\":", report_head_label(lab, k, al->H));
        else
            fputs("null,\"best\":", f);
        report_jnum(f, k >= 0 ? al->head[k] : NAN);
        fputs(",\"mean\":", f);
        report_jnum(f, al->layer_mean[l]);
        fputs(",\"pooled\":", f);
        report_jnum(f, al->layer_pooled[l]);
        fputc('}', f);
    }
    fputs("],\"uniform\":", f);
    report_jnum(f, al->uniform);
    fprintf(f, ",\"token_pairs\":%zu,\"pair_share\":", al->token_pairs);
    report_jnum(f, al->pair_share);
    fputs(",\"pairs_in_relation_by_distance\":{\"tokens\":", f);
    write_shares_by_distance(f, al->tok_at, al->tok_dep_at);
    fputs(",\"words\":", f);
    write_shares_by_distance(f, al->word_at, al->word_dep_at);
    fputs("},\"distance_r\":", f);
    report_jnum(f, al->r);
    fputc('}', f);
}

/* "dependencies": the counts, then per relation (file order, "all" last) and
 * direction the scores (docs/heads.md, "Gold dependencies"). */
static void write_deps_json(FILE *f, const DepsResult *d, int H)
{
    fprintf(f, ",\"dependencies\":{\"sentences\":%zu,\"scored_sentences\":%zu,"
            "\"over_context\":%zu,\"context\":%d,\"pairs\":%zu,\"roots\":%zu,"
            "\"pairs_over_context\":%zu,\"pairs_without_token\":%zu,\"ablation_sentences\":%zu,"
            "\"ablation_tokens\":%zu,\"bar\":", d->sentences, d->scored, d->over_context, d->T,
            d->pairs, d->roots, d->pairs_over_context, d->pairs_no_token, d->causal_sentences,
            d->causal_tokens);
    report_jnum(f, HEADS_REL_BAR);
    fputs(",\"needed\":", f);
    report_jnum(f, HEADS_NEEDED_SHARE);
    fputs(",\"alignment\":", f);
    write_align_json(f, &d->align);
    fputs(",\"relations\":{", f);
    for (size_t r = 0; r < d->nrel; r++) {
        fputs(r ? "," : "", f);
        json_fput_string(f, deps_rel_name(d, r));
        fputs(":{", f);
        for (int dir = 0; dir < DEPS_DIRS; dir++) {
            fprintf(f, "%s\"%s\":", dir ? "," : "", deps_dir_names[dir]);
            write_dep_score(f, &d->score[r * DEPS_DIRS + dir], d->n, H);
        }
        fputc('}', f);
    }
    fputs("}}", f);
}

void report_summary_json(FILE *f, const HeadsReport *r)
{
    const HeadsSummary *s = &r->sum;
    fprintf(f, "{\"layers\":%d,\"heads\":%d,\"total_heads\":%d,\"active_heads\":%d,"
            "\"windows\":%d,\"tokens_per_window\":%d,\"vocab_size\":%d,\"merges\":%d,"
            "\"base_loss\":", r->cfg.L, r->cfg.H, r->cfg.L * r->cfg.H, s->active, r->windows, r->T,
            r->tok->V, r->tok->nmerges);
    report_jnum(f, r->base_loss);
    fprintf(f, ",\"mean_entropy\":");
    report_jnum(f, s->mean_entropy);
    fprintf(f, ",\"mean_distance\":");
    report_jnum(f, s->mean_distance);
    fprintf(f, ",\"type_counts\":{");
    for (int t = 0; t < HEAD_TYPES; t++)
        fprintf(f, "%s\"%s\":%d", t ? "," : "", heads_type_names[t], s->type_counts[t]);
    fprintf(f, "},\"effective_heads\":");
    report_jnum(f, r->effective);
    fprintf(f, ",\"effective_heads_per_layer\":[");
    for (int l = 0; l < r->cfg.L; l++) {
        fputs(l ? "," : "", f);
        report_jnum(f, r->layer_effective[l]);
    }
    fprintf(f, "],\"removable_heads_1pct\":%d,\"max_importance\":", s->removable_1pct);
    report_jnum(f, s->max_importance);
    fprintf(f, ",\"jsd_within_layer\":");
    report_jnum(f, s->jsd_within);
    fprintf(f, ",\"jsd_between_layers\":");
    report_jnum(f, s->jsd_between);
    fprintf(f, ",\"delimiter_share\":");
    report_jnum(f, r->delim_share);
    if (r->rel)
        write_relations_json(f, r);
    if (r->compromise)
        write_compromise_json(f, r);
    if (r->prune_order)
        write_prune_json(f, r);
    if (r->deps)
        write_deps_json(f, r->deps, r->cfg.H);
    report_routing_json(f, r);
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
        if (heads_rel_table[q].planted && !r->builtin)
            continue;
        fprintf(o.f, "%s,%s,%.6g,%.6g,%.6g,%.0f,", heads_rel_table[q].name,
                report_rel_label(name, x->best, H), x->attention, x->uniform, x->loss,
                x->rows);
        if (heads_rel_table[q].repeat)
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
            if (heads_rel_table[q].planted && !r->builtin)
                continue;
            const PairScore *b = &r->causal->pair[q], *a = &r->ablated[k].pair[q];
            fprintf(o.f, "%s,%s,", report_head_label(name, k, H), heads_rel_table[q].name);
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

int report_write_data(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    if (write_csv(dir, r, err, errlen) || write_heads_json(dir, r, err, errlen) ||
        write_summary(dir, r, err, errlen) || write_tokens_csv(dir, r, err, errlen))
        return -1;
    if (r->prune_order && write_prune(dir, r, err, errlen))
        return -1;
    if (r->rel && write_relations_csv(dir, r, err, errlen))
        return -1;
    if (r->causal && write_ablation_csv(dir, r, err, errlen))
        return -1;
    return 0;
}

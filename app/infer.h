/* infer.h: the options of ./infer and its modes, shared by infer.c (flags,
 * checkpoint loading, --eval) and the mode drivers infer_sample.c (text
 * generation), infer_heads.c (attention-head analysis) and infer_explore.c (the
 * attention explorer page). Drivers print and return an exit status; the maths
 * lives in model/. */
#ifndef HEADCOUNT_INFER_H
#define HEADCOUNT_INFER_H

#include <stdint.h>

#include "data/corpus.h"
#include "data/tokenizer.h"
#include "model/gpt.h"
#include "trainer/ckpt.h"

typedef struct {
    const char *ckpt;
    /* --eval */
    const char *eval;
    /* sampling (the default mode) */
    const char *prompt, *prompt_file;
    long tokens, samples, top_k;
    double temperature, top_p;
    uint64_t seed;
    int no_cache;           /* --no-cache: full forward per token (for benchmarks) */
    /* --heads */
    const char *heads;      /* FILE to analyse */
    const char *report;     /* output directory for csv/json/svg/html */
    long windows;           /* 0: the default */
    int prune_curve;
    const TrainState *train_state; /* the checkpoint's, NULL without: the rare counts' text */
    /* --explore */
    const char *explore;      /* OUT.html */
    const char *explore_json; /* also the weights at full precision */
    const char *text, *text_file; /* the text to explore; without one, the first sample */
    /* shared */
    const char *mask;       /* "L.H,L.H": silenced heads */
    unsigned char *head_on; /* [L*H] parsed from mask, NULL when no mask */
    long threads;
    int json;               /* --json: --eval's result as one JSON object */
} InferOptions;

/* Reads path into f, or standard input when path is "-"; fails (exit 1) with a
 * message naming flag on error. */
void infer_read_input(TextFile *f, const char *path, const char *flag);

/* Writes samples to stdout (with --explore, then the page of the first
 * sample); returns the process exit status. */
int infer_sample(const InferOptions *o, const Model *m, const Tokenizer *tok);
/* The heads report; returns the process exit status. */
int infer_heads(const InferOptions *o, const Model *m, const Tokenizer *tok);
/* The explorer page (and --explore-json) for nbytes of text: the first block
 * of it, or the last when from_end (a sample). source names the text. */
int infer_explore(const InferOptions *o, const Model *m, const Tokenizer *tok,
                  const unsigned char *bytes, size_t nbytes, const char *source, int from_end);

#endif

/* infer.h: the options of ./infer and its three modes, shared by infer.c
 * (flags, checkpoint loading, --eval) and the mode drivers infer_sample.c
 * (text generation) and infer_heads.c (attention-head analysis). Drivers print
 * and return an exit status; the maths lives in model/. */
#ifndef HEADCOUNT_INFER_H
#define HEADCOUNT_INFER_H

#include <stdint.h>

#include "data/tokenizer.h"
#include "model/gpt.h"

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
    /* shared */
    const char *mask;       /* "L.H,L.H": silenced heads */
    unsigned char *head_on; /* [L*H] parsed from mask, NULL when no mask */
    long threads;
} InferOptions;

/* Writes samples to stdout; returns the process exit status. */
int infer_sample(const InferOptions *o, const Model *m, const Tokenizer *tok);
/* The heads report; returns the process exit status. */
int infer_heads(const InferOptions *o, const Model *m, const Tokenizer *tok);

#endif

/* testutil: see testutil.h. */
#include "tests/testutil.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/synth.h"

void tu_fill(float *x, size_t n, Rng *rng, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * rng_uniform(rng);
}

float *tu_alloc_random(size_t n, Rng *rng, float lo, float hi)
{
    float *x = malloc((n ? n : 1) * sizeof(float));
    tu_fill(x, n, rng, lo, hi);
    return x;
}

int tu_gradcheck(const char *name, float *x, const float *analytic, size_t n, TuObjective f,
                 void *ctx, double h, double rtol, double atol, int checks, Rng *rng)
{
    double scale = 0.0;
    size_t argmax = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(analytic[i]) > scale) {
            scale = fabs(analytic[i]);
            argmax = i;
        }
    int failures = 0;
    int total = checks < (int)n ? checks : (int)n;
    for (int c = 0; c <= total; c++) {
        size_t i = c == total ? argmax : (checks >= (int)n ? (size_t)c : rng_below(rng, n));
        float saved = x[i];
        x[i] = (float)(saved + h);
        double fp = f(ctx);
        x[i] = (float)(saved - h);
        double fm = f(ctx);
        double step = (double)(float)(saved + h) - (double)(float)(saved - h);
        x[i] = saved;
        double num = (fp - fm) / step, a = analytic[i];
        if (fabs(a - num) > rtol * fabs(num) + atol * scale || !isfinite(a)) {
            fprintf(stderr, "gradcheck %s[%zu]: analytic %.8g numeric %.8g (scale %.3g)\n", name,
                    i, a, num, scale);
            failures++;
        }
    }
    return failures;
}

const char *tu_shakespeare(void)
{
    static const char *path = "../shared/data/tinyshakespeare.txt";
    return access(path, R_OK) == 0 ? path : NULL;
}

void tu_need_python(const char *modules)
{
    char *out;
    int rc = tu_run(&out, "python3 -c 'import %s'", modules);
    free(out);
    if (rc != 0)
        cr_skip_test("python3 is not installed or cannot import %s", modules);
}

const char *tu_bin(void)
{
    const char *b = getenv("HEADCOUNT_BIN");
    return b && *b ? b : ".";
}

int tu_run(char **out, const char *fmt, ...)
{
    static const char pre[] = "ulimit -c 0; export OMP_WAIT_POLICY=passive; { ";
    static const char post[] = "\n} 2>&1";
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0, "bad command format %s", fmt);
    char *full = malloc(sizeof pre + (size_t)n + sizeof post);
    cr_assert_not_null(full);
    memcpy(full, pre, sizeof pre - 1);
    va_start(ap, fmt);
    vsnprintf(full + sizeof pre - 1, (size_t)n + 1, fmt, ap);
    va_end(ap);
    memcpy(full + sizeof pre - 1 + n, post, sizeof post);
    FILE *p = popen(full, "r");
    free(full);
    if (!p) {
        *out = strdup("popen failed");
        return -1;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[len] = '\0';
    int status = pclose(p);
    *out = buf;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

const char *tu_tmpdir(const char *name)
{
    static char path[256];
    char cmd[700];
    snprintf(path, sizeof path, "build/test-tmp/%s-%d", name, (int)getpid());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
    if (system(cmd) != 0)
        return NULL;
    return path;
}

int tu_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, n, f);
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

unsigned char *tu_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return NULL;
    }
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    *n = fread(buf, 1, (size_t)st.st_size, f);
    buf[*n] = '\0';
    fclose(f);
    return buf;
}

char *tu_read_text(const char *path)
{
    size_t n;
    unsigned char *b = tu_read_file(path, &n);
    cr_assert_not_null(b, "%s could not be read", path);
    return (char *)b;
}

int tu_find_prefix(const char *dir, const char *prefix, char *found, size_t len)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL)
        if (strncmp(ent->d_name, prefix, strlen(prefix)) == 0) {
            if (n++ == 0 && found)
                snprintf(found, len, "%s/%s", dir, ent->d_name);
        }
    closedir(d);
    return n;
}

void tu_model(TuModel *m, const char *name, size_t bytes, unsigned long long seed,
              const char *flags)
{
    const char *d = tu_tmpdir(name);
    cr_assert_not_null(d);
    snprintf(m->dir, sizeof m->dir, "%s", d);
    snprintf(m->data, sizeof m->data, "%s/data.txt", d);
    snprintf(m->ckpt, sizeof m->ckpt, "%s/m.ckpt", d);
    char *text = malloc(bytes);
    cr_assert_not_null(text);
    synth_generate(text, bytes, seed);
    cr_assert_eq(tu_write_file(m->data, text, bytes), 0);
    free(text);
    char *out;
    int rc = tu_run(&out, "%s/train %s --threads 1 --data %s --out %s",
                     tu_bin(), flags, m->data, m->ckpt);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
}

void tu_spread_params(const ParamTable *t, float *params, uint64_t seed)
{
    Rng rng;
    rng_init(&rng, seed, 0);
    for (int k = 0; k < t->n; k++) {
        const ParamSpec *s = &t->spec[k];
        int one = s->init == INIT_ONE;
        tu_fill(params + s->offset, s->count, &rng, one ? 0.7f : -0.3f, one ? 1.3f : 0.3f);
    }
}

# headcount build. `make` builds ./train and ./infer; `make test` runs the Criterion suite.
# ARCH picks the instruction set, and with it the matmul tile: the default tunes for this
# machine (the AVX-512 tile where the CPU has AVX-512, else AVX2/FMA where it has those);
# `make ARCH="-mavx2 -mfma"` builds the AVX2 tile on any such CPU, and `make ARCH=` the
# portable fallback for any x86-64 or other CPU. All give the same bits where they use
# FMA (docs/matmul.md; tests/arch_check.sh checks it).
# BUILD (objects) and BIN (the two programs) can be moved, e.g. for a sanitizer build.
CC      ?= cc
ARCH    ?= -march=native
OPT     ?= -O3
CFLAGS  += -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(OPT) $(ARCH) -fopenmp \
           -ffp-contract=off -fno-math-errno -Wall -Wextra -Wshadow -Wno-unused-parameter -MMD -MP -I.
LDLIBS  += -lm
# MPI=1 builds ./train with Open MPI (mpicc) for `mpirun -np N ./train` (README,
# "Bigger runs"); switching MPI rebuilds (see flags.txt below).
MPI     ?= 0
ifeq ($(MPI),1)
CC      := mpicc
CFLAGS  += -DHEADCOUNT_MPI
endif
BUILD   ?= build
BIN     ?= .

LIB_SRC  := $(wildcard util/*.c kernels/*.c model/*.c data/*.c trainer/*.c analysis/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o) $(BUILD)/tests/testutil.o $(BUILD)/tests/progutil.o \
            $(BUILD)/tests/matmul_ref.o $(BUILD)/tests/ckpt_fixture.o
# ./train and ./infer: their mains, their rooms in app/ (train/, infer/, with infer's
# pages in report/) and the room both use (common/), over the library.
COMMON_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard app/common/*.c))
TRAIN_OBJ  := $(BUILD)/train.o $(patsubst %.c,$(BUILD)/%.o,$(wildcard app/train/*.c)) $(COMMON_OBJ)
REPORT_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard app/report/*.c)) \
              $(BUILD)/app/report/explore_page.o $(BUILD)/app/report/compare_page.o \
              $(BUILD)/app/report/explore_gold.o
INFER_OBJ  := $(BUILD)/infer.o $(patsubst %.c,$(BUILD)/%.o,$(wildcard app/infer/*.c)) \
              $(REPORT_OBJ) $(COMMON_OBJ)

.PHONY: all test criterion clean lexicon lexicon-deps bench bench-deps bench-tok test-tl tl-deps ablation ablation-check test-asan fuzz check-heads test-browser test-mpi test-readme
all: $(BIN)/train $(BIN)/infer

# Every object remembers the compiler and flags it was built with: a change of ARCH, OPT,
# MPI or CC rebuilds them all (so `make bench ARCH=...` times what it names).
$(BUILD)/flags.txt: FORCE
	@mkdir -p $(BUILD)
	@printf '%s\n' '$(CC) $(CFLAGS)' | cmp -s - $@ || printf '%s\n' '$(CC) $(CFLAGS)' > $@
FORCE:

$(BUILD)/%.o: %.c $(BUILD)/flags.txt
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The explorer's pages (HTML, CSS, JavaScript) as C strings named for their file
# (explore_page, compare_page): each line quoted, backslashes, quotes and question
# marks (trigraphs) escaped.
PAGES := $(BUILD)/app/report/explore_page.c $(BUILD)/app/report/compare_page.c
$(PAGES): $(BUILD)/app/report/%.c: app/report/%.html
	@mkdir -p $(dir $@)
	{ echo '/* Generated from $< by the Makefile; do not edit. */'; \
	  echo 'const char $*[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@.tmp && mv $@.tmp $@

# The gold-dependency view (explore_gold.js), which the explorer page carries
# only for a treebank sentence, quoted the same way.
PAGES += $(BUILD)/app/report/explore_gold.c
$(BUILD)/app/report/explore_gold.c: app/report/explore_gold.js
	@mkdir -p $(dir $@)
	{ echo '/* Generated from $< by the Makefile; do not edit. */'; \
	  echo 'const char explore_gold[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@.tmp && mv $@.tmp $@

$(PAGES:.c=.o): %.o: %.c $(BUILD)/flags.txt
	$(CC) $(CFLAGS) -c $< -o $@

# The word table (data/lexicon.h; docs/corpus.md, "Where the words come from"):
# lexicon_gen checks the table LEXICON names and writes it as C, which the library
# links. A missing or damaged table stops the build with one line from lexicon_gen.
# The chosen path is remembered, so naming another table rebuilds; a missing one
# always runs lexicon_gen, which says so.
LEXICON ?= data/lexicon.tsv
$(BUILD)/lexicon_gen: scripts/lexicon/lexicon_gen.c data/lexicon.h $(BUILD)/flags.txt
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS)
$(BUILD)/gen/lexicon_path.txt: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(LEXICON)' | cmp -s - $@ || printf '%s\n' '$(LEXICON)' > $@
$(BUILD)/gen/lexicon_table.c: $(BUILD)/lexicon_gen $(BUILD)/gen/lexicon_path.txt \
                              $(if $(wildcard $(LEXICON)),$(LEXICON),FORCE)
	$(BUILD)/lexicon_gen '$(LEXICON)' $@
$(BUILD)/gen/lexicon_table.o: $(BUILD)/gen/lexicon_table.c data/lexicon.h $(BUILD)/flags.txt
	$(CC) $(CFLAGS) -c $< -o $@
# Deriving the table anew (never part of the build): WordNet from Debian's
# wordnet-base, the frequencies from wordfreq in a venv (pinned).
LEXICON_VENV ?= .venv-lexicon
lexicon-deps:
	python3 -m venv $(LEXICON_VENV)
	$(LEXICON_VENV)/bin/pip install $(VENV_PIP_ARGS) wordfreq==3.1.1
lexicon:
	$(LEXICON_VENV)/bin/python scripts/lexicon/derive.py --out data/lexicon.tsv

$(BUILD)/libheadcount.a: $(LIB_OBJ) $(BUILD)/gen/lexicon_table.o
	$(AR) rcs $@ $^

$(BIN)/train: $(TRAIN_OBJ) $(BUILD)/libheadcount.a
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BIN)/infer: $(INFER_OBJ) $(BUILD)/libheadcount.a
	@mkdir -p $(BIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Criterion, the tests' framework, before any test is compiled: found by its header
# (CRITERION_H), else installed with apt-get as root or through passwordless sudo, or
# make stops with the one command to run (tests/need_criterion.sh).
CRITERION_H ?= /usr/include/criterion/criterion.h
criterion:
	@CRITERION_H='$(CRITERION_H)' bash tests/need_criterion.sh
$(TEST_OBJ) $(BUILD)/run_tests: | criterion

# The tests link the library and the rooms' parts they call directly (the rest they
# run as ./train and ./infer).
$(BUILD)/run_tests: $(TEST_OBJ) $(BUILD)/app/common/fileguard.o $(BUILD)/app/common/flags.o \
             $(BUILD)/app/common/cli.o $(BUILD)/app/train/dist.o $(BUILD)/app/train/train_options.o \
             $(BUILD)/app/infer/rare_counts.o $(BUILD)/app/report/report.o \
             $(BUILD)/app/report/report_page.o $(BUILD)/app/report/report_files.o \
             $(BUILD)/app/report/report_dir.o $(BUILD)/app/report/report_route.o \
             $(BUILD)/app/report/explore.o $(BUILD)/app/report/explore_page.o \
             $(BUILD)/app/report/compare_page.o $(BUILD)/app/report/explore_gold.o \
             $(BUILD)/libheadcount.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

# The suite runs from the repository root (first the include-direction check of
# docs/architecture.md, and the check of Criterion's set-up against fakes): tests find
# ../shared, write under build/test-tmp, and run the programs found in HEADCOUNT_BIN.
# Then arch_check: on a CPU with AVX-512, the AVX-512, AVX2 and portable builds must
# train byte-identical checkpoints (it says plainly when it skips).
test: $(BUILD)/run_tests $(BIN)/train $(BIN)/infer
	bash tests/layers_check.sh
	bash tests/lexicon_check.sh $(BUILD)/lexicon-check
	bash tests/need_criterion_check.sh $(BUILD)/need-criterion-check
	HEADCOUNT_BIN=$(BIN) OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive ./$(BUILD)/run_tests --jobs 2
	CC="$(CC)" ARCH="$(ARCH)" OMP_NUM_THREADS=2 bash tests/arch_check.sh $(BIN) $(BUILD)/arch-check

clean:
	rm -rf build build-* train infer fuzz/seeds

-include $(LIB_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(wildcard $(BUILD)/*.d $(BUILD)/app/*/*.d)

# Training throughput, sgemm peak, PyTorch (if installed) and sampling speed: docs/bench.md.
bench: all $(BUILD)/libheadcount.a
	BENCH_VENV=$(BENCH_VENV) bash scripts/bench.sh

# PyTorch 2.x for `make bench`, in a venv inside the repository (CPU build: the
# pin's +cpu label keeps pip from taking the CUDA build; VENV_PIP_ARGS can name
# where the wheel is, e.g. --find-links DIR or an --index-url; numpy only quiets
# torch's warning). Never needed by the tests.
BENCH_VENV ?= .venv-bench
BENCH_PINS ?= torch==2.13.0+cpu numpy==2.4.6
bench-deps:
	python3 -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install $(VENV_PIP_ARGS) $(BENCH_PINS)
	$(BENCH_VENV)/bin/python scripts/bench_torch.py --info

# scripts/headcount.py's TransformerLens bridge against ./infer on its shapes
# (tests/tl_check.py, docs/transformer_lens.md). TL_PYTHON: a python with torch and
# transformer_lens, by default that of the venv `make tl-deps` makes (pinned versions,
# scripts/requirements-tl.txt, about 1.6 GB); without it the check says it skips.
TL_VENV   ?= .venv-tl
TL_PYTHON ?= $(TL_VENV)/bin/python
test-tl: $(BIN)/train $(BIN)/infer
	@if [ -x "$(TL_PYTHON)" ]; then $(TL_PYTHON) tests/tl_check.py $(BIN) $(BUILD)/test-tl; \
	else echo "tl_check: skipped: no $(TL_PYTHON) (make tl-deps makes it, or set TL_PYTHON)"; fi
tl-deps:
	python3 -m venv $(TL_VENV)
	$(TL_VENV)/bin/pip install $(VENV_PIP_ARGS) -r scripts/requirements-tl.txt

# The byte-pair tokenizer's speed, and Hugging Face tokenizers' when BENCH_TOK_PYTHON
# (default python3) imports it: docs/tokenizer.md.
bench-tok: $(BUILD)/libheadcount.a
	bash scripts/bench_tok.sh

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/).
test-asan:
	bash scripts/test_asan.sh

# libFuzzer on the checkpoint loader, the C and Python checkpoint readers against
# each other, then libFuzzer on the byte-pair tokenizer and the CoNLL-U reader, each
# for FUZZ_SECONDS
# (clang + libclang-rt-14-dev; python3).
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh

# The head-count ablation (docs/ablation.md) on the text file DATA names (make ablation
# DATA=input.txt), or else on train's built-in corpus; e.g. ABLATION_FLAGS="--seeds 1".
DATA ?=
ablation: $(BIN)/train $(BIN)/infer
	bash scripts/ablate.sh --bin $(BIN) $(if $(DATA),--data '$(DATA)') $(ABLATION_FLAGS)

# CI: the ablation pipeline on tiny settings, end to end.
ablation-check: $(BIN)/train $(BIN)/infer
	bash tests/ablation_check.sh $(BIN) $(BUILD)/ablation-check

# The slow ground-truth check (about 16 minutes on 2 quiet Zen 4 cores): models on the
# built-in corpus, bytes and words, must show heads that track the planted relations
# (docs/heads.md). Not part of `make test`.
check-heads: $(BIN)/train $(BIN)/infer
	HEADCOUNT_BIN=$(BIN) BUILD=$(BUILD) bash scripts/check_heads.sh

# The explorer page in headless Chromium (apt-get install -y chromium; node 18+):
# hover, layer switch and head toggle checked against ./infer --explore-json.
test-browser: $(BIN)/train $(BIN)/infer
	bash tests/browser/run.sh $(BIN) $(BUILD)/test-browser

# The README walk (tests/readme_check.sh): every command block of README.md, in order,
# as written, in a clean export of the tree, with training capped at a few steps and
# tiny Shakespeare from ../shared for the download (about two minutes on 2 cores).
test-readme:
	bash tests/readme_check.sh $(BUILD)/test-readme

# ./train over MPI ranks against one process (tests/mpi_check.sh; skips without Open MPI).
test-mpi: $(BIN)/train
	bash tests/mpi_check.sh

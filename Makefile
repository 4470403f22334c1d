# Two entry points on a fresh clone (only python3 and make needed):
#   make run    create .venv, install receval, run the default sweep on the built-in dataset
#   make test   create .venv, install receval with its test and ray extras, run every test
#   make docs   the site (docs/mkdocs.yml) into docs/site, reference pages regenerated from the code
#   make docs-examples   rewrite the tutorials' and how-to pages' shown outputs with what the commands print now
#   make test-fast   under a minute: the same without slow (subprocess, wheel, Ray, or over
#                    ~0.6 s: most compose several configs) and dense (real model) tests
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test test-fast bench docs docs-examples clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,ray]'
	touch $@ $(VENV)/.core

SWEEP := runs/$(shell date +%Y-%m-%d/%H-%M-%S-%6N)

run: $(VENV)/.core
	$(BIN)/receval retriever=bm25,tfidf chunking.max_words=20,40,120 hydra.sweep.dir=$(SWEEP) -m
	$(BIN)/receval report $(SWEEP)

# -n auto: one pytest worker per core; tests that start Ray heads share one worker
# (xdist_group "ray"), so two heads never start at once
test: $(VENV)/.test
	$(BIN)/python -m pytest -q -n auto --dist loadgroup

# the fuzz tests draw a quarter of their examples here (make test draws them all);
# bytecode is cached even where PYTHONDONTWRITEBYTECODE is set, so a second run reads
# receval's and pytest's rewritten test modules instead of compiling them in every worker;
# no test here starts a Ray head (that needs the slow marker), so an idle worker may take
# queued tests from a busy one (worksteal). lint-imports first prints each layer contract
# of pyproject.toml kept or broken (tests/test_layers.py checks the same contracts)
test-fast: $(VENV)/.test
	$(BIN)/lint-imports --no-cache
	PYTHONDONTWRITEBYTECODE= RECEVAL_FUZZ_SCALE=0.25 $(BIN)/python -m pytest -q -n auto --dist worksteal -m "not slow and not dense"

$(VENV)/.bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,ray,bench]'
	touch $@ $(VENV)/.test $(VENV)/.core

# every benchmark, each printing both sides and its ratio (scale.py takes minutes) and
# writing its figures to benchmarks/figures.json (then python docs/gen_reference.py puts
# them on the benchmarks page); each script's --small runs it in seconds without writing
# them (make test does, tests/test_benchmarks.py); benchmarks/_*.py are helpers (the
# figures file's writer, and a model builder and a server the README's walkthroughs use)
bench: $(VENV)/.bench
	for script in benchmarks/[!_]*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

$(VENV)/.docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[docs]'
	touch $@ $(VENV)/.core

# the reference pages are written from the code (docs/gen_reference.py), then the site built;
# --strict: a broken link or a page missing from the nav fails
docs: $(VENV)/.docs
	$(BIN)/python docs/gen_reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict -f docs/mkdocs.yml

# every tutorial and how-to block run twice in fresh folders; what it prints replaces what the page shows
# (tokens that differ between the two runs, latencies, become …)
docs-examples: $(VENV)/.test
	RECEVAL_DOCS_UPDATE=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_docs.py -k shows_what

clean:
	rm -rf $(VENV) build *.egg-info docs/site

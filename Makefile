# The two commands the README promises: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

PY_DIRS := $(wildcard kubectl_gitdrift plugins tests bench testdata tools)

# The helm tools/install_helm.sh installs: kubectl-gitdrift looks for helm on PATH (or
# $KUBECTL_GITDRIFT_HELM), never in the checkout, so every target finds this one first.
export PATH := $(CURDIR)/.tools/bin:$(PATH)

.DEFAULT_GOAL := check
.PHONY: check demo test lint fmt golden parity clean bench dist lock

$(STAMP): pyproject.toml
	@command -v kubectl >/dev/null 2>&1 || command -v kustomize >/dev/null 2>&1 || \
	  { echo "error: need kubectl (for 'kubectl kustomize') or kustomize on PATH" >&2; exit 3; }
	@command -v git >/dev/null 2>&1 || { echo "error: need git on PATH" >&2; exit 3; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Only the targets that render Helm charts need helm; `make demo` does not. Both majors: helm 4
# (.tools/bin/helm) and helm 3 (.tools/bin/helm3, for apps whose Argo CD bundles helm 3); the
# script installs whichever is missing (a second run for the other target is a no-op).
HELM := .tools/bin/helm .tools/bin/helm3
$(HELM):
	./tools/install_helm.sh

DEMO_REPO := $(VENV)/demo-repo

# The founding incident: a real git repo built from testdata, the recorded cluster state, and
# the report. Exit code 1 (drift found) is the expected outcome, so the target tolerates it.
demo: $(STAMP)
	@rm -rf $(DEMO_REPO)
	@$(BIN)/python testdata/make_repo.py testdata/incident/repo-src $(DEMO_REPO) >/dev/null
	@$(BIN)/kubectl-gitdrift guestbook --snapshot testdata/incident/snapshot.yaml \
	  --repo-root $(DEMO_REPO); rc=$$?; [ $$rc -le 1 ] || exit $$rc

test: $(STAMP) $(HELM)
	@./tools/test_prereqs.sh
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check $(PY_DIRS)
	$(BIN)/ruff format --check $(PY_DIRS)
	$(BIN)/mypy
	$(BIN)/lint-imports

check: test lint

fmt: $(STAMP)
	$(BIN)/ruff format $(PY_DIRS)
	$(BIN)/ruff check --fix $(PY_DIRS)

golden: $(STAMP) $(HELM)
	$(BIN)/python -m pytest -q tests/test_scenarios.py tests/test_packaging.py --update-golden

# Benchmarks (issue #8, BENCHMARKS.md): under 10 minutes on 2 cores; the fixtures are generated
# once into bench/out/fixtures (about a minute). BENCH_ARGS: --quick, --only fleet, --warm, ...
# (bench/run.py --help). Prints a phase table per scenario and a summary of the targets.
bench: $(STAMP) $(HELM)
	@$(BIN)/python -c 'import deepdiff' 2>/dev/null || $(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# Argo CD parity: the acceptance cases and the real-server oracle cases (../shared/argocd-parity,
# labeled by Argo CD's own diff code) must all agree with gitdrift's verdicts.
parity: $(STAMP) $(HELM)
	$(BIN)/python ../shared/argocd-parity/check --cli $(BIN)/kubectl-gitdrift --oracle

clean:
	rm -rf $(VENV) build dist *.egg-info

# Release archives for krew (dist/kubectl-gitdrift-v<version>-<os>-<arch>.tar.gz, one executable
# bundling every supported CPython's dependencies) and their sha256/uri in krew-manifest.yaml.
# Installs only the wheels dist.lock pins (pip --require-hashes): same lock + same sources = same
# archives, any day, any machine. Needs the package index (PyPI) once per wheel; docs/install.md.
dist: $(STAMP)
	$(BIN)/python tools/make_dist.py --out dist --manifest krew-manifest.yaml

# dist.lock: the exact version and sha256 of every wheel `make dist` bundles, per platform and
# CPython, resolved from pyproject.toml's dependencies, and of the build tools. The one deliberate
# way to move dependencies: after changing pyproject's, run it (a test fails until dist.lock
# agrees), then `make dist`, and commit dist.lock and krew-manifest.yaml.
lock: $(STAMP)
	$(BIN)/python tools/make_dist.py --make-lock

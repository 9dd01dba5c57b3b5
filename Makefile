# The README's two commands are `make book` and `make test`; everything else serves them
# (`make site` and `make serve` rebuild and show the site `make book` built).
# Every pip call goes through constraints.txt, which pins torch (docs/design.md).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BOOTSTRAP_PYTHON ?= python3
VENV := .venv
VENV_PYTHON := $(CURDIR)/$(VENV)/bin/python
# `make test-gpu PYTHON=python3` runs on a machine's own Python, without the venv.
PYTHON ?= $(VENV_PYTHON)
PIP := $(PYTHON) -m pip install -q -c constraints.txt
STAMP := $(VENV)/.installed

# Kernels are found through the committed specs; their argv starts with `python`,
# so the venv's bin goes first on PATH. `src` on PYTHONPATH serves the no-venv case.
export JUPYTER_PATH := $(CURDIR)/jupyter
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# An inherited PYTHONPATH is kept after src: the GPU check installs its carried wheels into a
# folder it puts there, and `make test-gpu` must still find them (tools/gpu_check).
export PYTHONPATH := $(CURDIR)/src$(if $(PYTHONPATH),:$(PYTHONPATH))
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help setup widgets-js book site serve lab test test-gpu gpu-wheels lint clean

help:
	@echo "make setup     create .venv and install the course with its tools (make book, site, test and lab do it first)"
	@echo "make book      build the course site, English and Chinese (every notebook executed, full size); ends with where it is"
	@echo "make site      rebuild the site from the notebooks make book executed, without executing them (MODE=quick: make test's)"
	@echo "make serve     serve the built site over http: open http://127.0.0.1:$(PORT)/ (PORT=8080 for another port, MODE=quick for make test's site)"
	@echo "make test      lint, unit tests, every notebook on the CPU (quick), site build and checks (Chromium for the browser test)"
	@echo "make lab       open JupyterLab on the course kernel (ARGS=--allow-root as root in a container)"
	@echo "make test-gpu  the notebooks on the GPU kernel with device=cuda, plus unit tests marked gpu"
	@echo "make gpu-wheels  the wheels the GPU check carries to the device (CPython 3.12, manylinux) into .whl/"
	@echo "make clean     remove the build folder and the venv"

# Each step prints one line as it starts and its time as it ends (tools/execution/step.py): pip stays
# quiet, and the first install takes minutes.
STEP = $(BOOTSTRAP_PYTHON) tools/execution/step.py

$(STAMP): pyproject.toml constraints.txt
	@test -x $(VENV_PYTHON) || $(STEP) "creating the virtual environment $(VENV)" -- $(BOOTSTRAP_PYTHON) -m venv $(VENV)
	@$(STEP) "installing gpulab with its dev and workshop tools (minutes the first time)" -- \
		$(VENV_PYTHON) -m pip install -q -c constraints.txt -e ".[dev,workshop]"
	@# Triton (the kernels extra) has no macOS wheels; the lab says so there and skips its kernels.
	@if [ "$$(uname)" != Darwin ]; then $(STEP) "installing Triton for lab 4" -- \
		$(VENV_PYTHON) -m pip install -q -c constraints.txt -e ".[kernels]"; fi
	@$(STEP) "registering the course's Jupyter kernels" -- $(VENV_PYTHON) tools/install_kernels.py
	@touch $@

setup: $(STAMP)

# The site carries its own copy of the widget JavaScript and of Pyodide (no third-party CDN);
# eslint, jsdom and Pyodide also serve `make lint` and the node tests (tests/js).
node_modules/.package-lock.json: package.json package-lock.json
	@$(STEP) "installing the site's JavaScript from npm" -- npm ci --no-audit --no-fund --loglevel=error

widgets-js: node_modules/.package-lock.json

# The site step prints its own lines: Sphinx's output goes to a log under _build (it names
# which), its warnings and errors to the terminal, and its last line says where the site is.
book: setup widgets-js
	@$(STEP) "executing every notebook at full size (one line per notebook)" -- \
		$(VENV_PYTHON) tools/pipeline.py execute --mode full
	@$(VENV_PYTHON) tools/pipeline.py site --mode full

# `make site` rebuilds the site from the notebooks already executed (after a change to a page,
# a translation or the site's style): minutes, where `make book` re-executes every notebook.
# MODE=quick takes the ones `make test` executed; `make serve` serves the same MODE's site.
# MODE and PORT are set on the command line only (`:=`): a MODE or PORT in the environment,
# set there for something else, does not change them.
MODE := full
site: setup widgets-js
	@$(VENV_PYTHON) tools/pipeline.py site --mode $(MODE)

# The standard library's http server, on 127.0.0.1 only: the calculators load their files over
# http, which a page opened from disk cannot. The pipeline needs no venv for this.
PORT := 8000
serve:
	@$(BOOTSTRAP_PYTHON) tools/pipeline.py serve --mode $(MODE) --port $(PORT)

# ARGS passes options to JupyterLab: `make lab ARGS=--allow-root` in a container run as root.
# The lab extra has its own stamp, so pip runs once, and again only when pyproject.toml or
# constraints.txt change.
ARGS ?=
LAB_STAMP := $(VENV)/.installed-lab
$(LAB_STAMP): pyproject.toml constraints.txt | $(STAMP)
	@$(STEP) "installing JupyterLab (the lab extra)" -- \
		$(VENV_PYTHON) -m pip install -q -c constraints.txt -e ".[dev,lab]"
	@touch $@

lab: setup $(LAB_STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=$(CURDIR) --MappingKernelManager.default_kernel_name=gpulab $(ARGS)

lint: setup widgets-js
	@# ruff's style, lines of 100 at most (E501) and its formatter's layout
	$(VENV_PYTHON) -m ruff check src tests tools benchmarks workshop labs/07_distributed
	$(VENV_PYTHON) -m ruff format --check -q src tests tools benchmarks workshop labs/07_distributed
	$(VENV)/bin/lint-imports --no-cache
	$(VENV_PYTHON) tools/checks/nbcheck.py
	node_modules/.bin/eslint --max-warnings=0 .
	@# the GitHub workflows (.github/workflows; its runner labels in .github/actionlint.yaml)
	@if [ "$$(uname -s)-$$(uname -m)" = Linux-x86_64 ]; then $(VENV)/bin/actionlint; \
		else echo "actionlint: no wheel for $$(uname -s)-$$(uname -m); CI (Linux) runs it"; fi

# GPULAB_STRICT=1: every extra and tool the tests use is installed here, so a missing one
# fails instead of skipping (tests/helpers.py). `gpu` tests skip with their reason on a CPU.
test: export GPULAB_STRICT := 1
# torch's OpenMP threads wait by sleeping, not spinning: on a busy machine spinning threads
# take the time slices their peers need, and a notebook ran 6 times slower
# (tools/execution/executor.py, quick_run_environment)
test: export OMP_WAIT_POLICY ?= PASSIVE
test: setup widgets-js lint
	GPULAB_QUICK=1 $(VENV_PYTHON) -m pytest tests/unit
	PYTHON=$(PYTHON) node --test tests/js/
	$(VENV_PYTHON) -m pytest tests/workshop
	GPULAB_QUICK=1 $(VENV_PYTHON) -m pytest tests/benchmarks
	GPULAB_QUICK=1 $(VENV_PYTHON) -m pytest tests/notebooks
	$(VENV_PYTHON) tools/pipeline.py site --mode quick
	$(VENV_PYTHON) -m pytest tests/site

# GPULAB_REQUIRE_GPU=1: a `gpu` test fails, not skips, when no CUDA device is there.
test-gpu: export GPULAB_REQUIRE_GPU := 1
test-gpu:
	$(PYTHON) -m pytest tests/unit -m gpu
	GPULAB_KERNEL=gpulab GPULAB_DEVICE=cuda GPULAB_QUICK=1 $(PYTHON) -m pytest tests/notebooks

clean:
	rm -rf _build $(VENV) node_modules

# The wheels tools/gpu_check carries to the device machine, which has no Jupyter package and no
# internet: CPython 3.12 on manylinux x86_64, each without its dependencies (the check's dry
# run verifies the closure against tools/gpu_check/wheels.lock.json, which this rewrites).
GPU_WHEELS := .whl
MANYLINUX := $(foreach n,2_28 2_27 2_24 2_17,--platform manylinux_$(n)_x86_64) --platform manylinux2014_x86_64 --platform manylinux1_x86_64
gpu-wheels: setup
	@rm -rf $(GPU_WHEELS)
	@$(STEP) "downloading the GPU check's wheels into $(GPU_WHEELS)/" -- $(VENV_PYTHON) -m pip download -q \
		--no-deps --only-binary=:all: --python-version 3.12 --implementation cp $(MANYLINUX) \
		-d $(GPU_WHEELS) -r tools/gpu_check/wheels.txt
	@$(STEP) "recording them in tools/gpu_check/wheels.lock.json" -- $(VENV_PYTHON) tools/gpu_check --lock
	$(VENV_PYTHON) tools/gpu_check --dry-run

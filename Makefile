# Two entry points: `make run` (the all-in-one stack on the embedded default) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DATA_DIR ?= .data
PORT ?= 8700
# Browser apps on these origins may call the services (a web app's local development server)
CORS_ORIGINS ?= http://localhost:5173 http://127.0.0.1:5173
# Python writes bytecode caches (__pycache__, ignored by git) even where the environment says
# not to: a test run starts hundreds of interpreters, and each would otherwise compile every
# module of ours again (a third of a CPU-second per service start) and pytest rewrite every
# test module's asserts again in every worker.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-unit test-durations test-slow test-replicas test-edge edge-tools lint screenshots bench images clean

$(STAMP): setup.cfg pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/cluster-manager up --data-dir $(DATA_DIR) --port $(PORT) \
		$(if $(ADVERTISE),--advertise $(ADVERTISE)) $(if $(LISTEN),--listen $(LISTEN)) \
		$(if $(FLUX_INSTALL_FILE),--flux-install-file $(FLUX_INSTALL_FILE)) \
		$(if $(EDGE_SYNC_IMAGE),--edge-sync-image $(EDGE_SYNC_IMAGE)) \
		$(if $(filter-out 0 no false,$(TLS)),--tls) \
		$(if $(filter-out 0 no false,$(AIR_GAPPED)),--air-gapped) \
		$(foreach origin,$(CORS_ORIGINS),--cors-origin $(origin))

# mypy's cache lives outside the clone: it is checked by content, so a fresh clone reuses it.
MYPY_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/fplus/mypy
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy --cache-dir $(MYPY_CACHE)

# Everything but the PostgreSQL, soak and real-edge suites, spread over TEST_WORKERS pytest-xdist
# workers (default: three per CPU, since a process test spends much of its time waiting on
# the services it started: on 2 cores 6 workers beat 4 by 8% and 8 by 4%; auto: one per CPU;
# 0: one process), a whole test module per worker
# at a time so a module's fixtures start once; each worker starts one shared stack
# (tests/conftest.py).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 3 )))
# Modules go out longest first, by tests/module_durations.json (tests/scheduling.py).
XDIST = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
# The soak and PostgreSQL suites keep two workers per CPU: the first has four modules, and each
# worker of the second starts its own PostgreSQL.
SUITE_XDIST = -n $(or $(SUITE_WORKERS),$(shell echo $$(( $$(nproc) * 2 )))) --dist loadfile \
	--no-loadscope-reorder
# More pytest arguments for any test target, e.g. PYTEST_ARGS='-x --basetemp=/tmp/t'
PYTEST_ARGS ?=
# Our modules compiled once before a run (only what changed), rather than by each of the first
# interpreters a cold run starts at once.
COMPILE = $(BIN)/python -m compileall -q -j 0 fplus harness
test: lint
	$(COMPILE)
	$(BIN)/python -m pytest -q -m "not replicas and not slow and not edge" --durations=15 $(XDIST) $(PYTEST_ARGS)

# Rewrite tests/module_durations.json from a run of every suite but the real edge's.
test-durations: $(STAMP)
	$(MAKE) test test-slow test-replicas PYTEST_ARGS="--record-durations $(PYTEST_ARGS)"

# Quick feedback while editing: `make test`'s tests that start no process (no service, no
# PostgreSQL, no command; tests/conftest.py marks the others `process` from their code).
test-unit: $(STAMP)
	$(BIN)/python -m pytest -q -m "not process and not replicas and not slow and not edge" $(XDIST) $(PYTEST_ARGS)

# The soak and scale tests (up to a minute each), kept out of `make test` to keep it short.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m "slow and not replicas and not edge" --durations=15 $(SUITE_XDIST) \
		$(PYTEST_ARGS)

# The slower half on PostgreSQL: the Config Store suite again, multi-replica and HA tests (each
# worker starts its own throwaway PostgreSQL).
test-replicas: $(STAMP)
	$(BIN)/python -m pytest -q -m replicas --durations=15 $(SUITE_XDIST) $(PYTEST_ARGS)

# The real edge's toolchain (Kubernetes, etcd, kwok, Flux, Sealed Secrets) built with Go from
# the versions pinned in harness/edgetools/pins.txt into ~/.cache/fplus-edge (FPLUS_EDGE_CACHE).
edge-tools: $(STAMP)
	$(BIN)/python -m harness.edgetools

# End-to-end tests on a real edge control plane, Flux and Sealed Secrets (after edge-tools), a
# module per worker at a time over EDGE_WORKERS workers (default 2: each module starts its own
# edge and stack, and spends most of its time waiting on them; 0: one process).
EDGE_WORKERS ?= 2
test-edge: $(STAMP)
	$(BIN)/python -m pytest -q -m edge --durations=15 -n $(EDGE_WORKERS) --dist loadfile \
		--no-loadscope-reorder $(PYTEST_ARGS)

# The console's pictures in docs/console/ (linked from docs/console.md), taken again by the
# browser tests on this machine: run after changing a console page.
screenshots: $(STAMP)
	FPLUS_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/console/test_accessibility.py $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/config_store.py

# The central services' image and the Edge Sync image, where a Docker engine runs.
VERSION ?= $(shell sed -n 's/^version *= *//p' setup.cfg)
REGISTRY ?= ghcr.io/fplus-edge-manager
images:
	@docker info >/dev/null 2>&1 || { echo "make images: no Docker engine answers (docker info failed); build where one runs" >&2; exit 1; }
	docker build -t $(REGISTRY)/central:$(VERSION) .
	docker build -f fplus/edge_sync/Dockerfile -t $(REGISTRY)/edge-sync:$(VERSION) .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# Set-up and everyday commands. Every target creates .venv and installs volsched into it first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo simulate test test-deps lint bench bench-bind bench-fairshare bench-parse bench-steady bench-evict constraints clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

## The main job: the operator on a local control plane, converging on a mixed workload.
demo: $(STAMP)
	$(BIN)/volsched demo

## The engine alone, in memory, on the bundled example cluster.
simulate: $(STAMP)
	$(BIN)/volsched simulate

## Lint, types and the whole test suite (real kube-apiserver, Prometheus and Elasticsearch included).
test: $(STAMP) lint test-deps
	$(BIN)/python -m pytest -q -rfE $(PYTEST_ARGS)

## The real servers and tools the tests use; each step is idempotent and cached (the fixtures would do it
## too, but a failure here is clearer, and the cold kube-apiserver and helm builds take minutes).
test-deps:
	bash hack/controlplane/build.sh >/dev/null
	bash hack/helm/build.sh >/dev/null || test $$? -eq 3  # 3: no Go toolchain, the chart tests skip
	bash hack/ui/install-chromium.sh
	bash hack/metrics/install-prometheus.sh
	bash hack/metrics/build-es.sh

lint: $(STAMP)
	$(BIN)/ruff check volsched volsched_dev tests bench
	$(BIN)/ruff format --check volsched volsched_dev tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python bench/bench_allocate.py

## Binds on a real kube-apiserver: volsched, kube-scheduler and a bare binder (the ceiling), backlog and
## arriving pods (1,000 nodes x 10,000 pods; BENCH_ARGS=--quick: 200 x 2,000; see bench/bind_throughput.py).
bench-bind: $(STAMP)
	bash hack/controlplane/build.sh >/dev/null
	$(BIN)/python bench/bind_throughput.py $(BENCH_ARGS)

## Decision quality, not time: placements against the fluid hierarchical water-fill.
bench-fairshare: $(STAMP)
	$(BIN)/python bench/bench_fairshare.py

bench-parse: $(STAMP)
	$(BIN)/python bench/bench_parse.py

## A session's fixed cost: 10,000 and 50,000 bound pods cached, ~50 arriving a cycle.
bench-steady: $(STAMP)
	$(BIN)/python bench/bench_steady.py

## Reclaim and preempt on a full cluster of 1,000 and 5,000 nodes.
bench-evict: $(STAMP)
	$(BIN)/python bench/bench_evict.py

## Pin the image's Python dependencies (constraints.txt) to what pip resolves now for '.[metrics]'.
constraints: $(STAMP)
	$(BIN)/python -m pip install --dry-run --ignore-installed --quiet --report $(VENV)/pip-report.json \
		'.[metrics]' 'setuptools>=68' wheel
	$(BIN)/python hack/image/lock.py $(VENV)/pip-report.json constraints.txt

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

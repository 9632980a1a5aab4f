# Set-up and everyday commands. Every target creates .venv and installs volsched into it first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo simulate test test-deps lint bench bench-bind bench-fairshare bench-parse bench-steady bench-evict bench-replay bench-dra bench-sim-vs-real constraints clean

# Every package at the version constraints-dev.txt pins (pip and the isolated build's setuptools too):
# the same environment on every machine and in CI; `make constraints` moves the pins, on purpose.
$(STAMP): pyproject.toml constraints-dev.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	PIP_CONSTRAINT=$(CURDIR)/constraints-dev.txt $(BIN)/python -m pip install -q pip
	PIP_CONSTRAINT=$(CURDIR)/constraints-dev.txt $(BIN)/python -m pip install -q -e '.[dev]'
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
	bash hack/kwok/build.sh >/dev/null
	bash hack/kubeflow/build.sh >/dev/null
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

## Binds on a real kube-apiserver: volsched and kube-scheduler (the bare binder only with BENCH_ARGS=--only ...,ceiling), backlog and
## arriving pods (1,000 nodes x 10,000 pods; BENCH_ARGS=--quick: 200 x 2,000; see bench/bind_throughput.py).
bench-bind: $(STAMP)
	bash hack/controlplane/build.sh >/dev/null
	$(BIN)/python bench/bind_throughput.py $(BENCH_ARGS)

## kube-scheduler's scheduler_perf workloads, volsched and kube-scheduler in one invocation (BENCH_ARGS=--full:
## 5,000 nodes; default --quick, a few minutes; see bench/bench_perf.py).
bench-perf: $(STAMP)
	bash hack/controlplane/build.sh >/dev/null
	nice -n 10 $(BIN)/python bench/bench_perf.py --json bench-perf.json $(BENCH_ARGS)

## The simulator's time mode against the operator on kwok nodes: one seeded workload, each queue's wait
## from both (a few minutes; BENCH_ARGS=--jobs N --rate R; see bench/sim_vs_real.py).
bench-sim-vs-real: $(STAMP)
	bash hack/controlplane/build.sh >/dev/null
	bash hack/kwok/build.sh >/dev/null
	bash hack/kubeflow/build.sh >/dev/null
	nice -n 10 $(BIN)/python bench/sim_vs_real.py $(BENCH_ARGS)

## Devices (DRA): a session placing 5,000 pods that each claim a GPU against the same without claims, on 1,000
## nodes of 8 GPUs; the median over interleaved rounds (BENCH_ARGS=--repeat N; see bench/bench_dra.py).
bench-dra: $(STAMP)
	$(BIN)/python bench/bench_dra.py $(BENCH_ARGS)

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

## The simulator's time mode: Kueue's scheduler baseline replayed (next to Kueue's thresholds), memory
## against finished jobs, 100,000 jobs on 1,000 nodes (BENCH_ARGS="kueue --cohorts 1": a fifth of the baseline).
bench-replay: $(STAMP)
	$(BIN)/python bench/bench_replay.py $(BENCH_ARGS)

## Move the pins to what pip resolves now: the development and test environment (constraints-dev.txt,
## '.[dev]') and, under it, the image's (constraints.txt, '.[metrics]'); then reinstall .venv to match.
constraints: $(STAMP)
	$(BIN)/python -m pip install --dry-run --ignore-installed --quiet --report $(VENV)/pip-report-dev.json \
		'.[dev]' pip 'setuptools>=68' wheel
	$(BIN)/python hack/image/lock.py dev $(VENV)/pip-report-dev.json constraints-dev.txt
	$(BIN)/python -m pip install --dry-run --ignore-installed --quiet --report $(VENV)/pip-report.json \
		-c constraints-dev.txt '.[metrics]' 'setuptools>=68' wheel
	$(BIN)/python hack/image/lock.py image $(VENV)/pip-report.json constraints.txt
	$(MAKE) $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

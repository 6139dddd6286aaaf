# Two entry points for a newcomer: `make plan` (the main job on the bundled example) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= inventories/h100-4su.yaml

.PHONY: plan test bench lint golden clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

# libyang (SONiC's YANG models) needs the C library libyang2-dev; without it the SONiC YANG tests skip locally.
$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet 'libyang==2.7.1' || echo "libyang not installed (apt-get install libyang2-dev): SONiC YANG validation tests will skip"
	@touch $@

plan: $(VENV)/.installed
	$(BIN)/fabricgen plan $(SPEC)

test: $(VENV)/.installed-test
	$(BIN)/python -m ruff check cli tests bench stacks
	$(BIN)/python -m mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest

# bench.py exits 1 on a missed target; the leading '-' lets the CLI figures (bench/cli.py) follow regardless.
bench: $(VENV)/.installed-test
	-$(BIN)/python bench/bench.py
	$(BIN)/python bench/cli.py
	$(BIN)/python bench/avd.py
	$(BIN)/python bench/libreoffice_open.py
	@if command -v opensm >/dev/null && command -v ibsim >/dev/null; then \
		$(BIN)/python bench/opensm_bringup.py --nodes 256; \
	else echo "opensm/ibsim not installed: skipping the OpenSM bring-up measurement (see .ci/run for the packages)"; fi
	@if [ "$$(id -u)" = 0 ] && command -v vtysh >/dev/null && command -v ping >/dev/null && command -v lldpctl >/dev/null; then \
		$(BIN)/python bench/lab_up.py; \
	else echo "not root, or frr/iputils-ping/lldpd not installed: skipping the lab measurement (see .ci/run)"; fi

golden: $(VENV)/.installed-test
	$(BIN)/python -m pytest tests/test_golden.py tests/test_negative.py --update-goldens
	$(BIN)/fabricgen schema > schemas/fabricgen.editor.json
	$(BIN)/fabricgen docs > docs/reference.md

clean:
	rm -rf $(VENV) out build dist .pytest_cache .mypy_cache .ruff_cache

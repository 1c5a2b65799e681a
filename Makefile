# kapstan's two commands: `make demo` (the local demo) and `make test` (everything CI checks).
# Both set up what they need from nothing: a virtualenv in .venv with kapstan built by maturin.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint pytest cargo-test setup sandbox clean chaos image image-test browser

setup: $(STAMP)

$(STAMP): pyproject.toml Cargo.toml rust/Cargo.toml $(shell find rust/src -name '*.rs')
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

# The gate: formatting, lint, types, the stub against the binary, clippy, then every test.
test: lint cargo-test pytest

lint: $(STAMP)
	$(VENV)/bin/ruff format --check operator tests bench
	$(VENV)/bin/ruff check operator tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(PY) -m mypy.stubtest kapstan._core
	cargo fmt --all --check
	cargo clippy --all-targets --quiet -- -D warnings
	cd sandbox && test -z "$$(gofmt -l .)" && CGO_ENABLED=0 go vet -trimpath ./...
	test -z "$$(gofmt -l bench/peers/karpenter)"

cargo-test:
	cargo test --quiet

# The sandbox binaries (kube-apiserver, scheduler, kwok, Cluster API) are built from Go modules once and
# cached in ~/.cache/kapstan; building them here, not inside a pytest fixture, keeps the progress visible.
sandbox: $(STAMP)
	$(PY) -m kapstan.local.build

# KAPSTAN_SKIP_SANDBOX=1 skips the sandbox tests (tests/sandbox_fixture.py), so their binaries are not built.
pytest: $(STAMP) $(if $(filter 1,$(KAPSTAN_SKIP_SANDBOX)),,sandbox)
	$(PY) -m pytest -q -m "not chaos"

# The chaos suite (tests/chaos/): what Cluster API does underneath kapstan, on the sandbox; each scenario
# rewrites its row of tests/chaos/REPORT.md. Too slow for make test's budget, so it runs on its own.
chaos: $(STAMP) sandbox
	$(PY) -m pytest -q -m chaos tests/chaos

clean:
	rm -rf $(VENV) target dist

# The OCI image, from Debian's and PyPI's packages without Docker (image/build.sh): writes
# dist/kapstan-<version>.oci.tar and prints its digest. The tools come from image/install-tools.sh.
# Not part of `make test`: a cold build takes minutes (image/README.md).
image: $(STAMP)
	sh image/install-tools.sh
	sh image/build.sh

# Builds the image, then runs it with podman against the sandbox (tests/e2e/test_image.py).
image-test: image sandbox
	$(PY) -m pytest -q -m image tests/e2e/test_image.py

# Debian's headless Chromium (about 64 MB), for the report page's screenshot test
# (tests/whatif/test_report_screenshot.py), which `make test` skips, saying so, without it. Not a step of
# `make test`: a large download for one check.
browser:
	command -v chromium-headless-shell >/dev/null || { \
	  SUDO=$$(test "$$(id -u)" -eq 0 || echo sudo); \
	  $$SUDO apt-get update -q && $$SUDO apt-get install -y -q --no-install-recommends chromium-headless-shell; }

# The live demo: a sandbox of its own, kapstan running against it, the article's flows as a timeline.
demo: $(STAMP)
	$(VENV)/bin/kapstan demo

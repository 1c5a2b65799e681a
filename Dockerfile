# The kapstan image: `kapstan run` (the autoscaler, in workload clusters) and `kapstan addon` (the
# management-side installer) are the same binary, so one image serves both Deployments.
#
#   docker build -t ghcr.io/kapstan/kapstan:0.1.0 .
#
# Every source input is in this repository: pyproject.toml, Cargo.toml, Cargo.lock (crates pinned, built
# with --locked), rust/ and operator/. What comes from outside is the two base images, maturin (pinned
# below) and the Python dependencies from PyPI as pyproject.toml allows them.
#
# Stage 1 builds the wheel (Rust core + Python package) with maturin; stage 2 installs it into a venv on
# a slim Python image and drops to the non-root user the Deployment expects (65532, see
# kapstan.install.deployment.NONROOT). The root filesystem can be read-only at run time: nothing writes
# bytecode (PYTHONDONTWRITEBYTECODE) and scratch space is the /tmp emptyDir.

ARG PYTHON_VERSION=3.11
ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-slim-bookworm AS wheel
# Debian bookworm's python3 is 3.11, the same minor version as the runtime stage, so the extension
# module's ABI tag (cp311) matches.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/maturin && /opt/maturin/bin/pip install --no-cache-dir "maturin==1.16.0"
WORKDIR /src
COPY Cargo.toml Cargo.lock pyproject.toml ./
COPY rust rust
COPY operator operator
# The source tree may hold a locally built extension module; the wheel must contain the one built here.
RUN rm -f operator/kapstan/_core*.so \
    && /opt/maturin/bin/maturin build --release --locked --manylinux off \
        --interpreter python3 --out /dist

FROM python:${PYTHON_VERSION}-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/kapstan/bin:$PATH
COPY --from=wheel /dist /dist
RUN python -m venv /opt/kapstan \
    && /opt/kapstan/bin/pip install --no-cache-dir /dist/*.whl \
    && rm -rf /dist
USER 65532:65532
ENTRYPOINT ["kapstan"]
CMD ["--help"]

# RuleDrift as a GitHub Docker container action (action.yml) and as a CLI image for any CI:
#   docker run --rm -v "$PWD:/work" -w /work IMAGE run suite.json --start-ollama
# See docs/github-action.md and docs/gitlab-ci.md. Python 3.12 and Ollama's CPU build; no Node.
#
# Base images are pinned by tag AND by the digest of their multi-arch index (linux/amd64 and
# linux/arm64): the tag says what it is, the digest makes every build use the same bytes.
# Dependabot updates both together (.github/dependabot.yml); the release workflow resolves the
# tags again and refuses to release when a digest here is not what its tag points at
# (scripts/release/base_pins.py). Ollama's version is the same everywhere: the CI service
# containers, examples/gitlab-ci.yml and the docs name this one (tests/test_image.py checks).

# Ollama, CPU only: the official image's binary and libraries, without the GPU libraries (about
# 3.7 GB of its download). Since v0.30, ollama runs llama.cpp's server from
# <dir of ollama>/../lib/ollama, so both paths are copied below. This stage is thrown away: only
# the two COPY --from=ollama lines reach the final image, never the GPU layer.
FROM ollama/ollama:0.34.2@sha256:da6e0dc5651df159e45686fd663c4dbe1624a52c44d7280eeac1551d8f865532 AS ollama
RUN rm -rf /usr/lib/ollama/cuda_* /usr/lib/ollama/vulkan* /usr/lib/ollama/mlx* \
    /usr/lib/ollama/rocm*

# One Python for building the wheel and for running it.
FROM python:3.12.14-slim-trixie@sha256:f77ac9e44ae96ef2c90b8053ea08c31f8be030f824196b0ae4db6d462c84e51f AS base

# RuleDrift's wheel, built by the locked build backend (requirements/build.txt, every file
# checked by its hash) without build isolation, so pip fetches no unpinned setuptools of its
# own. Also a throwaway stage: the final image gets the wheel, not setuptools or the source.
FROM base AS wheel
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
COPY requirements/build.txt /tmp/requirements/build.txt
RUN pip install --no-deps --require-hashes -r /tmp/requirements/build.txt
COPY pyproject.toml README.md /src/
COPY ruledrift /src/ruledrift
RUN pip wheel --no-build-isolation --no-deps --wheel-dir /wheels /src

FROM base

LABEL org.opencontainers.image.title="RuleDrift" \
      org.opencontainers.image.description="Test that an LLM agent keeps obeying its critical rules as a conversation grows." \
      org.opencontainers.image.source="https://github.com/ruledrift/action" \
      org.opencontainers.image.documentation="https://github.com/ruledrift/action/blob/v1/docs/github-action.md" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.vendor="RuleDrift"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# tini, Debian's package pinned to trixie's version, is PID 1 (see ENTRYPOINT). An apt pin has no
# digest: when Debian replaces the version, this build fails and the pin is raised by hand.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini=0.19.0-3+b8 \
    && rm -rf /var/lib/apt/lists/* \
    && tini --version

COPY --from=ollama /usr/bin/ollama /usr/bin/ollama
COPY --from=ollama /usr/lib/ollama /usr/lib/ollama

# Dependencies first (a layer that changes only with the lock), every file checked by its hash.
COPY requirements/runtime.txt /tmp/requirements/runtime.txt
RUN pip install --no-deps --require-hashes -r /tmp/requirements/runtime.txt \
    && rm -rf /tmp/requirements

# Then RuleDrift itself: the wheel from the stage above, mounted for this one command (so no
# layer keeps a copy), installed without an index and without dependencies.
RUN --mount=type=bind,from=wheel,source=/wheels,target=/tmp/wheels \
    pip install --no-deps --no-index /tmp/wheels/ruledrift-*.whl \
    && pip check \
    && ruledrift --version \
    && ollama --version

COPY entrypoint.py /app/entrypoint.py
# Where `docker run -v "$PWD:/work" IMAGE …` mounts a project; GitHub and GitLab set their own.
WORKDIR /work

# No USER: GitHub runs Docker actions as root (the entrypoint gives written files back to the
# workspace's owner). Absolute paths: a workflow's PATH replaces the image's.
# tini is PID 1: it forwards signals to RuleDrift and reaps orphans. RuleDrift kills what an
# agent's call left running; a child whose agent had exited belongs to PID 1 by then, and a
# PID 1 that never waits (Python) would keep it a zombie until the run ends
# (scripts/release/smoke/reaping.json checks). -s: also a subreaper when it is not PID 1
# (`docker run --init`), without tini's warning.
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "/usr/local/bin/python", "/app/entrypoint.py"]

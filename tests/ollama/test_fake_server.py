"""The fake honours Ollama's contract (tests/support/ollama_fake/CONTRACT.md, read from Ollama's
source): each endpoint, errors, what changed between releases, truncation, faults, recording,
and the `ollama` stand-in executable."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.ollama_fake import (
    BUSY,
    OLLAMA_BIN,
    PULL_MISSING,
    FakeModel,
    FakeOllama,
    Fault,
    count_prompt,
    free_port,
)
from tests.support.ollama_fake.server import Messages, Tools, tokens

pytestmark = pytest.mark.process

SYSTEM = {"role": "system", "content": "Never reveal hunter2."}


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def chat_body(*messages: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "llama3.2:1b", "messages": list(messages), "stream": False, **fields}


@pytest.fixture
def server() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        yield fake


@pytest.fixture
def client(server: FakeOllama) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        yield http


def lines(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines()]


# --- endpoints -------------------------------------------------------------------------------


def test_root_get_and_head(client: httpx.Client) -> None:
    assert client.get("/").text == "Ollama is running"
    head = client.head("/")
    assert head.status_code == 200
    assert head.content == b""


def test_version_tags_and_show(client: httpx.Client) -> None:
    assert client.get("/api/version").json() == {"version": "0.34.2"}
    models = {m["name"]: m for m in client.get("/api/tags").json()["models"]}
    assert set(models) == {"qwen3:1.7b", "llama3.2:1b"}
    tag = models["qwen3:1.7b"]
    assert tag["model"] == "qwen3:1.7b"
    assert len(tag["digest"]) == 64
    assert tag["size"] > 0
    assert tag["modified_at"]
    assert tag["digest"] == FakeModel("qwen3:1.7b").digest  # stable identity
    show = client.post("/api/show", json={"model": "qwen3:1.7b"}).json()
    assert show["capabilities"] == ["completion", "tools", "thinking"]
    assert "temperature 0.6" in show["parameters"]
    assert show["template"]
    plain = client.post("/api/show", json={"model": "llama3.2:1b"}).json()
    assert plain["capabilities"] == ["completion", "tools"]


def test_unknown_model_is_404_on_show_and_chat(client: httpx.Client) -> None:
    for path, body in (
        ("/api/show", {"model": "nope:1b"}),
        ("/api/chat", chat_body(user("hi"), model="nope:1b")),
    ):
        response = client.post(path, json=body)
        assert response.status_code == 404
        assert response.json() == {"error": "model 'nope:1b' not found"}


def test_names_without_a_tag_mean_latest() -> None:
    with (
        FakeOllama(["smollm2"]) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        assert client.get("/api/tags").json()["models"][0]["name"] == "smollm2:latest"
        response = client.post("/api/chat", json=chat_body(user("hi"), model="smollm2"))
        assert response.status_code == 200


def test_unknown_paths_and_methods(client: httpx.Client) -> None:
    assert client.get("/api/nothing").status_code == 404
    assert client.get("/api/chat").status_code == 405


# --- chat ------------------------------------------------------------------------------------


def test_chat_non_streaming(client: httpx.Client) -> None:
    messages = [SYSTEM, user("Hello there, agent!")]
    answer = client.post("/api/chat", json=chat_body(*messages)).json()
    assert answer["message"] == {"role": "assistant", "content": "You said: Hello there, agent!"}
    assert answer["done"] is True
    assert answer["done_reason"] == "stop"
    assert answer["prompt_eval_count"] == count_prompt(messages)
    assert answer["eval_count"] == 8  # You said : Hello there , agent !
    for key in ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration"):
        assert isinstance(answer[key], int)


def test_chat_streams_by_default(client: httpx.Client) -> None:
    body = chat_body(user("one, two three"))
    del body["stream"]
    response = client.post("/api/chat", json=body)
    assert response.headers["content-type"] == "application/x-ndjson"
    parts = lines(response)
    assert all(p["done"] is False for p in parts[:-1])
    assert "prompt_eval_count" not in parts[0]
    assert "".join(p["message"]["content"] for p in parts) == "You said: one, two three"
    assert parts[-1]["done"] is True
    assert parts[-1]["prompt_eval_count"] == count_prompt([user("one, two three")])


def test_empty_messages_only_load_the_model(client: httpx.Client) -> None:
    answer = client.post("/api/chat", json=chat_body()).json()
    assert answer["done_reason"] == "load"


def test_answer_function_sees_the_messages() -> None:
    def leaky(messages: Messages) -> str:
        return "hunter2" if len(messages) > 3 else "I cannot say."

    with FakeOllama(answer=leaky) as server, httpx.Client(base_url=server.base_url) as client:
        short = client.post("/api/chat", json=chat_body(SYSTEM, user("secret?"))).json()
        assert short["message"]["content"] == "I cannot say."
        long = [SYSTEM, user("hi"), {"role": "assistant", "content": "hello"}, user("secret?")]
        assert client.post("/api/chat", json=chat_body(*long)).json()["message"]["content"] == (
            "hunter2"
        )


def test_thinking(client: httpx.Client) -> None:
    def ask(**fields: Any) -> httpx.Response:
        return client.post("/api/chat", json=chat_body(user("hi"), **fields))

    on_by_default = ask(model="qwen3:1.7b").json()["message"]
    assert on_by_default["thinking"]
    assert on_by_default["content"] == "You said: hi"
    assert "thinking" not in ask(model="qwen3:1.7b", think=False).json()["message"]
    assert ask(model="qwen3:1.7b", think="high").json()["message"]["thinking"]
    assert "thinking" not in ask().json()["message"]  # not capable, omitted: no thinking
    assert "thinking" not in ask(think=False).json()["message"]  # false is always safe
    refused = ask(think=True)
    assert refused.status_code == 400
    assert refused.json() == {"error": '"llama3.2:1b" does not support thinking'}
    assert ask(model="qwen3:1.7b", think="max").json()["message"]["thinking"]
    assert ask(think="max").json() == {"error": '"llama3.2:1b" does not support thinking'}
    bad = ask(model="qwen3:1.7b", think="most")
    assert bad.status_code == 400
    assert bad.json() == {
        "error": 'invalid think value: "most" (must be "high", "medium", "low", "max", true, or '
        "false)"
    }
    assert ask(model="qwen3:1.7b", think=3).json() == {
        "error": 'think must be a boolean or string ("high", "medium", "low", "max", true, or '
        "false)"
    }


def test_think_max_arrived_in_0_22_0() -> None:
    body = chat_body(user("hi"), model="qwen3:1.7b", think="max")
    with FakeOllama(version="0.21.2") as server:
        before = httpx.post(f"{server.base_url}/api/chat", json=body)
        server.version = "0.22.0"
        since = httpx.post(f"{server.base_url}/api/chat", json=body)
    assert before.status_code == 400
    assert before.json() == {
        "error": 'invalid think value: "max" (must be "high", "medium", "low", true, or false)'
    }
    assert since.status_code == 200


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"num_ctx": "8192"}, 'option "num_ctx" must be of type integer'),
        ({"seed": True}, 'option "seed" must be of type integer'),
        ({"temperature": "0"}, 'option "temperature" must be of type float32'),
        ({"use_mmap": 1}, 'option "use_mmap" must be of type boolean'),
        ({"stop": "###"}, 'option "stop" must be of type array'),
        ({"stop": ["###", 1]}, 'option "stop" must be of an array of strings'),
    ],
)
def test_an_option_of_the_wrong_type_is_http_500(
    client: httpx.Client, options: dict[str, Any], error: str
) -> None:
    response = client.post("/api/chat", json=chat_body(user("hi"), options=options))
    assert response.status_code == 500
    assert response.json() == {"error": error}


def test_options_of_the_right_type_and_unknown_ones_pass(client: httpx.Client) -> None:
    options: dict[str, object] = {"num_ctx": 512.0, "temperature": 0, "seed": None, "stop": []}
    options["nonsense"] = "x"
    response = client.post("/api/chat", json=chat_body(user("hi"), options=options))
    assert response.status_code == 200


def test_streamed_thinking_comes_first(client: httpx.Client) -> None:
    parts = lines(
        client.post("/api/chat", json=chat_body(user("hi"), model="qwen3:1.7b", stream=True))
    )
    thinking = "".join(p["message"].get("thinking", "") for p in parts)
    assert thinking.startswith("The user wrote: hi")
    assert parts[0]["message"]["content"] == ""


def test_invalid_request_bodies(client: httpx.Client) -> None:
    broken = client.post("/api/chat", content=b"{not json")
    assert broken.status_code == 400
    assert "invalid character" in broken.json()["error"]
    empty = client.post("/api/chat", content=b"")
    assert empty.status_code == 400
    assert empty.json() == {"error": "missing request body"}
    assert client.post("/api/chat", json=[1]).status_code == 400
    assert client.post("/api/chat", json={"messages": []}).json() == {"error": "model is required"}


def test_num_predict_cuts_with_done_reason_length(client: httpx.Client) -> None:
    body = chat_body(user("a b c d e"), options={"num_predict": 4})
    answer = client.post("/api/chat", json=body).json()
    assert answer["message"]["content"] == "You said: a"
    assert answer["done_reason"] == "length"
    assert answer["eval_count"] == 4


def test_stop_strings(client: httpx.Client) -> None:
    answer = client.post("/api/chat", json=chat_body(user("x"), options={"stop": [":"]})).json()
    assert answer["message"]["content"] == "You said"
    assert answer["done_reason"] == "stop"


# --- tools -----------------------------------------------------------------------------------

REFUND = {
    "type": "function",
    "function": {
        "name": "refund",
        "description": "Refund an order",
        "parameters": {
            "type": "object",
            "properties": {"order": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order", "amount"],
        },
    },
}
LOOKUP = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
TWO_CALLS = 'call lookup {"order": "A1"}\ncall refund {"order": "A1", "amount": 250}'


def test_parallel_tool_calls_as_ollama_sends_them(client: httpx.Client) -> None:
    body = chat_body(user(TWO_CALLS), tools=[REFUND, LOOKUP])
    answer = client.post("/api/chat", json=body).json()
    message = answer["message"]
    assert message["content"] == ""
    assert [call["function"] for call in message["tool_calls"]] == [
        {"index": 0, "name": "lookup", "arguments": {"order": "A1"}},
        {"index": 1, "name": "refund", "arguments": {"order": "A1", "amount": 250}},
    ]
    ids = [call["id"] for call in message["tool_calls"]]  # v0.12.10+: random ids
    assert all(len(id) == 13 and id.startswith("call_") for id in ids)
    assert answer["done_reason"] == "stop"
    generated = 'lookup {"order": "A1"} refund {"order": "A1", "amount": 250}'
    assert answer["eval_count"] == len(tokens(generated))
    assert answer["prompt_eval_count"] == count_prompt([user(TWO_CALLS)], [REFUND, LOOKUP])
    assert answer["prompt_eval_count"] > count_prompt([user(TWO_CALLS)])  # the tools cost tokens


def test_servers_before_0_12_10_send_no_call_ids() -> None:
    for fake in (FakeOllama(version="0.12.9"), FakeOllama(call_ids=False)):
        with fake as server, httpx.Client(base_url=server.base_url) as client:
            body = chat_body(user(TWO_CALLS), tools=[REFUND, LOOKUP])
            calls = client.post("/api/chat", json=body).json()["message"]["tool_calls"]
            assert [sorted(call) for call in calls] == [["function"], ["function"]]


def test_no_tools_no_calls(client: httpx.Client) -> None:
    """Ollama parses calls only when the request offers tools, and only offered tools here."""
    plain = client.post("/api/chat", json=chat_body(user(TWO_CALLS))).json()["message"]
    assert "tool_calls" not in plain
    assert plain["content"].startswith("You said: call lookup")
    only_refund = chat_body(user(TWO_CALLS), tools=[REFUND])
    calls = client.post("/api/chat", json=only_refund).json()["message"]["tool_calls"]
    assert [call["function"]["name"] for call in calls] == ["refund"]
    assert calls[0]["function"]["index"] == 0


def test_a_model_without_the_tools_capability() -> None:
    with (
        FakeOllama(models=["gemma3:270m", FakeModel("qwen3:0.6b", tools=False)]) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        for model in ("gemma3:270m", "qwen3:0.6b"):
            show = client.post("/api/show", json={"model": model}).json()
            assert "tools" not in show["capabilities"]
            refused = client.post(
                "/api/chat", json=chat_body(user("hi"), model=model, tools=[REFUND])
            )
            assert refused.status_code == 400
            assert refused.json() == {
                "error": f"registry.ollama.ai/library/{model} does not support tools"
            }
            fine = client.post("/api/chat", json=chat_body(user("hi"), model=model, tools=[]))
            assert fine.status_code == 200


def test_tool_calls_stream_in_their_own_line(client: httpx.Client) -> None:
    body = chat_body(user(TWO_CALLS), tools=[REFUND, LOOKUP], stream=True)
    parts = lines(client.post("/api/chat", json=body))
    with_calls = [p for p in parts if "tool_calls" in p["message"]]
    assert len(with_calls) == 1
    assert with_calls[0]["done"] is False
    assert with_calls[0]["message"]["content"] == ""
    assert len(with_calls[0]["message"]["tool_calls"]) == 2
    assert parts[-1]["done"] is True


def test_the_tool_calls_function_sees_messages_and_tools() -> None:
    seen: list[tuple[int, list[str]]] = []

    def calls(messages: Messages, tools: Tools) -> list[tuple[str, Any]]:
        seen.append((len(messages), [t["function"]["name"] for t in tools]))
        return [("lookup", {"order": "B2"})] if messages[-1]["role"] == "user" else []

    with (
        FakeOllama(tool_calls=calls) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        first = client.post("/api/chat", json=chat_body(user("hi"), tools=[LOOKUP])).json()
        call = first["message"]["tool_calls"][0]
        history: list[dict[str, Any]] = [
            user("hi"),
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_name": "lookup", "content": "shipped"},
        ]
        second = client.post("/api/chat", json=chat_body(*history, tools=[LOOKUP])).json()
    assert seen == [(1, ["lookup"]), (3, ["lookup"])]
    assert second["message"] == {"role": "assistant", "content": "You said: hi"}
    assert second["prompt_eval_count"] == count_prompt(history, [LOOKUP])
    assert count_prompt(history) > count_prompt([user("hi"), history[2]]) + 4  # calls count


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tools", {"name": "refund"}),
        ("tools", [{"type": "function"}]),
        ("tools", [{"function": {"name": "x", "parameters": {"type": 1}}}]),
        ("tool_calls", "refund"),
        ("tool_calls", [{"function": {"name": "x", "arguments": '{"a": 1}'}}]),
        ("tool_name", 7),
    ],
)
def test_tool_fields_of_the_wrong_shape_are_400(
    client: httpx.Client, field: str, value: object
) -> None:
    if field == "tools":
        body = chat_body(user("hi"), tools=value)
    else:
        body = chat_body(user("hi"), {"role": "assistant", "content": "", field: value})
    refused = client.post("/api/chat", json=body)
    assert refused.status_code == 400
    assert refused.json()["error"].startswith("json: cannot unmarshal")


# --- context size ----------------------------------------------------------------------------


def history(turns: int) -> list[dict[str, str]]:
    messages = [SYSTEM]
    for n in range(1, turns + 1):
        messages += [user(f"turn {n} words words"), {"role": "assistant", "content": f"ok {n}"}]
    return messages


def test_overflow_drops_the_oldest_messages_silently() -> None:
    seen: list[Messages] = []

    def record(messages: Messages) -> str:
        seen.append(messages)
        return "fine"

    with (
        FakeOllama(answer=record, num_ctx=60) as server,
        httpx.Client(base_url=server.base_url) as c,
    ):
        messages = [*history(5), user("probe now")]
        assert count_prompt(messages) > 60
        answer = c.post("/api/chat", json=chat_body(*messages)).json()
        assert answer["done_reason"] == "stop"  # HTTP 200, nothing said
        kept = seen[-1]
        assert kept[0] == SYSTEM
        assert kept[-1] == user("probe now")
        assert kept == [SYSTEM, *messages[len(messages) - len(kept) + 1 :]]  # a suffix
        assert len(kept) < len(messages)
        assert answer["prompt_eval_count"] == count_prompt(kept) <= 60
        # options.num_ctx overrides the server default
        roomy = chat_body(*messages, options={"num_ctx": 1000})
        assert c.post("/api/chat", json=roomy).json()["prompt_eval_count"] == count_prompt(messages)


def test_truncate_false_turns_overflow_into_400() -> None:
    with FakeOllama(num_ctx=60) as server, httpx.Client(base_url=server.base_url) as client:
        body = chat_body(*history(5), user("probe"), truncate=False, shift=False)
        response = client.post("/api/chat", json=body)
        assert response.status_code == 400
        detail = json.loads(response.json()["error"])["error"]
        assert detail["type"] == "exceed_context_size_error"
        assert detail["n_ctx"] == 60
        assert "exceeds the available context size (60 tokens)" in detail["message"]
        fits = chat_body(user("short"), truncate=False, shift=False)
        assert client.post("/api/chat", json=fits).status_code == 200


@pytest.mark.parametrize("version", ["0.12.5", "0.12.4", "0.9.0"])
def test_servers_before_0_12_6_ignore_truncate_false(version: str) -> None:
    with (
        FakeOllama(num_ctx=60, version=version) as server,
        httpx.Client(base_url=server.base_url) as client,
    ):
        body = chat_body(*history(5), user("probe"), truncate=False, shift=False)
        response = client.post("/api/chat", json=body)
        assert response.status_code == 200
        assert response.json()["prompt_eval_count"] <= 60
        server.version = "0.12.6"
        assert client.post("/api/chat", json=body).status_code == 400


def test_whole_messages_go_from_the_front_so_the_prompt_can_still_grow() -> None:
    """server/prompt.go drops messages from the front until the prompt fits: not in pairs,
    and the cut prompt lands anywhere up to num_ctx."""
    seen: list[Messages] = []

    def record(messages: Messages) -> str:
        seen.append(messages)
        return "ok"

    notes = user("keep these notes: " + "note " * 20)
    turn = [SYSTEM, notes, {"role": "assistant", "content": "word " * 30}, user("next")]
    before = count_prompt(turn[:2])
    with FakeOllama(answer=record, num_ctx=count_prompt(turn) - 1) as server:
        answer = httpx.post(f"{server.base_url}/api/chat", json=chat_body(*turn)).json()
    assert seen[-1] == [SYSTEM, turn[2], user("next")]  # an answer now opens the conversation
    assert answer["prompt_eval_count"] == count_prompt(seen[-1]) > before


def test_version_0_30_0_counts_only_the_tokens_its_cache_lacked() -> None:
    first = [SYSTEM, user("hello there")]
    second = [*first, {"role": "assistant", "content": "You said: hello there"}, user("again")]
    counts: dict[str, list[int]] = {}
    for version in ("0.30.0", "0.30.0-rc4", "0.30.1", "0.29.1"):
        with FakeOllama(version=version) as server:
            counts[version] = [
                httpx.post(f"{server.base_url}/api/chat", json=chat_body(*messages)).json()[
                    "prompt_eval_count"
                ]
                for messages in (first, second, second)
            ]
    whole = [count_prompt(first), count_prompt(second), count_prompt(second)]
    assert counts["0.30.1"] == counts["0.29.1"] == whole
    # the second prompt starts with the first prompt and its answer; the third is all cached
    new = [whole[0], whole[1] - whole[0] - len(["You", "said", ":", "hello", "there"]), 1]
    assert counts["0.30.0"] == counts["0.30.0-rc4"] == new


def test_a_reload_empties_the_prompt_cache() -> None:
    body = chat_body(SYSTEM, user("hello"))
    with FakeOllama(version="0.30.0") as server:
        url = f"{server.base_url}/api/chat"
        counts = [
            httpx.post(url, json=body).json()["prompt_eval_count"],
            httpx.post(url, json=body).json()["prompt_eval_count"],
            httpx.post(url, json=body | {"options": {"num_ctx": 512}}).json()["prompt_eval_count"],
        ]
    assert counts == [count_prompt(body["messages"]), 1, count_prompt(body["messages"])]


def test_an_mlx_model_has_a_fixed_context_and_never_truncates() -> None:
    mlx = FakeModel("gemma3:4b-mlx", format="safetensors", context_length=60)
    with FakeOllama([mlx], num_ctx=30) as server, httpx.Client(base_url=server.base_url) as c:
        assert c.get("/api/tags").json()["models"][0]["details"]["format"] == "safetensors"
        show = c.post("/api/show", json={"model": "gemma3:4b-mlx"}).json()
        assert show["details"]["format"] == "safetensors"
        messages = [*history(5), user("probe")]
        body = chat_body(*messages, model="gemma3:4b-mlx", options={"num_ctx": 4096})
        response = c.post("/api/chat", json=body)
        fits = chat_body(*history(2), model="gemma3:4b-mlx", options={"num_ctx": 4})
        assert c.post("/api/chat", json=fits).status_code == 200  # num_ctx changes nothing
    assert response.status_code == 400
    assert response.json() == {
        "error": f"input length ({count_prompt(messages)} tokens) exceeds the model's maximum "
        "context length (60 tokens)"
    }
    assert server.loads == [("gemma3:4b-mlx", 60)]


def test_num_ctx_is_capped_and_loads_are_counted() -> None:
    with FakeOllama([FakeModel("tiny:1b", context_length=50)], num_ctx=4096) as server:
        with httpx.Client(base_url=server.base_url) as client:
            body = chat_body(*history(5), user("probe"), model="tiny:1b")
            assert client.post("/api/chat", json=body).json()["prompt_eval_count"] <= 50
            client.post("/api/chat", json=body)
            client.post("/api/chat", json=body | {"options": {"num_ctx": 30}})
        assert server.loads == [("tiny:1b", 50), ("tiny:1b", 30)]


# --- faults, latency, recording --------------------------------------------------------------


def test_status_faults_are_consumed_in_order(server: FakeOllama, client: httpx.Client) -> None:
    server.fail_next(2)
    server.add_fault(Fault(status=500, error="model runner has unexpectedly stopped"))
    body = chat_body(user("hi"))
    statuses = [client.post("/api/chat", json=body).status_code for _ in range(4)]
    assert statuses == [503, 503, 500, 200]
    server.fail_next(1)
    assert client.post("/api/chat", json=body).json() == {"error": BUSY}
    assert client.get("/api/version").status_code == 200  # faults target /api/chat by default


def test_mid_stream_error_and_eof(server: FakeOllama, client: httpx.Client) -> None:
    body = chat_body(user("one two three four"), stream=True)
    server.add_fault(Fault("error_line", error="boom"))
    parts = lines(client.post("/api/chat", json=body))
    assert parts[-1] == {"error": "boom"}
    assert not any(p.get("done") for p in parts)
    server.add_fault(Fault("eof"))
    parts = lines(client.post("/api/chat", json=body))
    assert parts
    assert not any(p.get("done") for p in parts)
    assert "error" not in parts[-1]


def test_faults_without_streaming(server: FakeOllama, client: httpx.Client) -> None:
    body = chat_body(user("hi"))
    server.add_fault(Fault("error_line", error="boom"))
    failed = client.post("/api/chat", json=body)
    assert (failed.status_code, failed.json()) == (500, {"error": "boom"})
    server.add_fault(Fault("eof"))
    cut = client.post("/api/chat", json=body)
    assert cut.status_code == 200
    with pytest.raises(ValueError):  # noqa: PT011 - any JSON decoding error
        cut.json()
    server.add_fault(Fault("invalid_json"))
    html = client.post("/api/chat", json=body)
    assert html.status_code == 200
    assert html.text.startswith("<html>")


def test_disconnect_and_delay(server: FakeOllama, client: httpx.Client) -> None:
    server.add_fault(Fault("disconnect"))
    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/api/chat", json=chat_body(user("hi")))
    server.add_fault(Fault("delay", delay_s=0.3, path="/api/version"))
    start = time.monotonic()
    assert client.get("/api/version").status_code == 200
    assert time.monotonic() - start >= 0.3


def test_hostile_json_and_lines(server: FakeOllama, client: httpx.Client) -> None:
    server.add_fault(
        Fault("json", path="/api/tags", body={"models": "nope"}),
        Fault("lines", path="/api/pull", body=[{"status": 5}, [1], "text"]),
    )
    assert client.get("/api/tags").json() == {"models": "nope"}
    assert lines(client.post("/api/pull", json={"model": "qwen3:1.7b"})) == [
        {"status": 5},
        [1],
        "text",
    ]
    assert client.get("/api/tags").json() != {"models": "nope"}  # used up


def test_any_path_forever_fault(server: FakeOllama, client: httpx.Client) -> None:
    server.add_fault(Fault(status=503, error="starting", path="*", times=None))
    assert [client.get("/api/version").status_code for _ in range(3)] == [503] * 3
    server.faults.clear()
    assert client.get("/api/version").status_code == 200


def test_latency_and_parallel_slots() -> None:
    with FakeOllama(latency_s=0.2, num_parallel=1) as server:
        start = time.monotonic()
        threads = [
            threading.Thread(
                target=httpx.post,
                args=(f"{server.base_url}/api/chat",),
                kwargs={"json": chat_body(user("x"))},
            )
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert time.monotonic() - start >= 0.4  # the second request waited for the slot


def test_a_full_queue_answers_503() -> None:
    with FakeOllama(latency_s=0.3, max_queue=1) as server:
        results: list[int] = []

        def post() -> None:
            results.append(
                httpx.post(f"{server.base_url}/api/chat", json=chat_body(user("x"))).status_code
            )

        threads = [threading.Thread(target=post) for _ in range(3)]
        for thread in threads:
            thread.start()
            time.sleep(0.05)
        for thread in threads:
            thread.join()
        assert sorted(results) == [200, 200, 503]


def test_requests_are_recorded(server: FakeOllama, client: httpx.Client) -> None:
    body = chat_body(user("hi"), options={"num_ctx": 512}, keep_alive="30m")
    client.post("/api/chat", json=body, headers={"X-Probe": "yes"})
    client.get("/api/tags")
    client.post("/api/chat", content=b"{oops")
    first, second, third = server.requests
    assert (first.method, first.path, first.body) == ("POST", "/api/chat", body)
    assert first.headers["x-probe"] == "yes"
    assert first.headers["content-type"] == "application/json"
    assert (second.method, second.path, second.body) == ("GET", "/api/tags", None)
    assert third.body == "{oops"
    assert server.chats() == [body, "{oops"]


def test_a_stopped_server_refuses_connections() -> None:
    server = FakeOllama().start()
    client = httpx.Client(base_url=server.base_url)
    assert client.get("/").status_code == 200  # a keep-alive connection now exists
    server.stop()
    with pytest.raises(httpx.TransportError):
        client.get("/")
    client.close()


# --- pull ------------------------------------------------------------------------------------


def test_pull_reports_progress_and_installs(client: httpx.Client) -> None:
    response = client.post("/api/pull", json={"model": "gemma3:270m"})
    assert response.status_code == 200
    parts = lines(response)
    statuses = [p.get("status") for p in parts]
    assert statuses[0] == "pulling manifest"
    assert statuses[-3:] == ["verifying sha256 digest", "writing manifest", "success"]
    layers = [p for p in parts if "digest" in p]
    assert layers
    assert all(p["digest"].startswith("sha256:") and p["total"] > 0 for p in layers)
    assert any(p.get("completed") == p["total"] for p in layers)
    names = [m["name"] for m in client.get("/api/tags").json()["models"]]
    assert "gemma3:270m" in names
    assert client.post("/api/pull", json={"model": "gemma3:270m", "stream": False}).json() == {
        "status": "success"
    }


def test_pull_of_an_unknown_model_fails_mid_stream(client: httpx.Client) -> None:
    response = client.post("/api/pull", json={"model": "no-such-model:7b"})
    assert response.status_code == 200
    assert lines(response) == [{"status": "pulling manifest"}, {"error": PULL_MISSING}]
    assert client.post("/api/pull", json={"model": "x", "stream": False}).status_code == 500


def test_pull_fault(server: FakeOllama, client: httpx.Client) -> None:
    server.add_fault(Fault("error_line", error="connection reset", path="/api/pull"))
    parts = lines(client.post("/api/pull", json={"model": "gemma3:270m"}))
    assert parts[-1] == {"error": "connection reset"}
    assert "gemma3:270m" not in [m["name"] for m in client.get("/api/tags").json()["models"]]


def test_pulled_models_persist_in_the_store(tmp_path: Path) -> None:
    with FakeOllama([], store=tmp_path) as server:
        httpx.post(f"{server.base_url}/api/pull", json={"model": "qwen3:0.6b"})
        digest = server.models["qwen3:0.6b"].digest
    manifest = tmp_path / "manifests/registry.ollama.ai/library/qwen3/0.6b"
    assert manifest.is_file()
    assert list((tmp_path / "blobs").iterdir())
    with FakeOllama([], store=tmp_path) as again:
        tags = httpx.get(f"{again.base_url}/api/tags").json()["models"]
        assert [(t["name"], t["digest"]) for t in tags] == [("qwen3:0.6b", digest)]


# --- the stand-in executable -----------------------------------------------------------------


class StandIn:
    """`ollama serve` started through PATH, its stderr collected by a thread."""

    def __init__(self, tmp_path: Path, **env: str) -> None:
        self.port = free_port()
        self.store = tmp_path / "models"
        environment = os.environ | {
            "PATH": f"{OLLAMA_BIN.parent}{os.pathsep}{os.environ['PATH']}",
            "OLLAMA_HOST": f"http://127.0.0.1:{self.port}",
            "OLLAMA_MODELS": str(self.store),
        }
        self.process = subprocess.Popen(
            ["ollama", "serve"],
            env=environment | env,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr
        for line in self.process.stderr:
            self.log.append(line)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_for(self, text: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.log):
            assert time.monotonic() < deadline, f"no {text!r} in {self.log}"
            time.sleep(0.02)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.kill()
        code = self.process.wait(5)
        self._reader.join(5)
        return code


@pytest.fixture
def stand_ins(tmp_path: Path) -> Iterator[list[StandIn]]:
    started: list[StandIn] = []
    yield started
    for stand_in in started:
        stand_in.stop()


def start(stand_ins: list[StandIn], tmp_path: Path, **env: str) -> StandIn:
    stand_in = StandIn(tmp_path, **env)
    stand_ins.append(stand_in)
    return stand_in


def test_version_flag() -> None:
    done = subprocess.run(
        [str(OLLAMA_BIN), "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("ollama version is 0.")


def test_serve_logs_records_and_keeps_pulls(stand_ins: list[StandIn], tmp_path: Path) -> None:
    first = start(stand_ins, tmp_path, OLLAMA_NUM_PARALLEL="2", OLLAMA_KEEP_ALIVE="30m")
    first.wait_for(f"Listening on 127.0.0.1:{first.port} (version 0.")
    assert httpx.get(first.url).text == "Ollama is running"
    record = json.loads((first.store / "fake-ollama-env.json").read_text())
    assert record["env"]["OLLAMA_NUM_PARALLEL"] == "2"
    assert record["env"]["OLLAMA_KEEP_ALIVE"] == "30m"
    assert record["env"]["OLLAMA_MODELS"] == str(first.store)
    assert record["pid"] == first.process.pid
    assert httpx.get(f"{first.url}/api/tags").json() == {"models": []}
    pulled = httpx.post(f"{first.url}/api/pull", json={"model": "qwen3:0.6b"})
    assert pulled.text.splitlines()[-1] == '{"status": "success"}'
    first.process.send_signal(signal.SIGTERM)
    assert first.process.wait(5) == 0
    second = start(stand_ins, tmp_path)
    second.wait_for("Listening on")
    assert [m["name"] for m in httpx.get(f"{second.url}/api/tags").json()["models"]] == [
        "qwen3:0.6b"
    ]


def test_exit_mode(stand_ins: list[StandIn], tmp_path: Path) -> None:
    stand_in = start(stand_ins, tmp_path, FAKE_OLLAMA_MODE="exit", FAKE_OLLAMA_EXIT_CODE="3")
    assert stand_in.process.wait(10) == 3
    assert stand_in.stop() == 3
    assert any(line.startswith("Error: ") for line in stand_in.log)


def test_unready_mode_listens_but_answers_503(stand_ins: list[StandIn], tmp_path: Path) -> None:
    stand_in = start(stand_ins, tmp_path, FAKE_OLLAMA_MODE="unready")
    stand_in.wait_for("Listening on")
    assert httpx.get(f"{stand_in.url}/api/version").status_code == 503


def test_a_client_that_hangs_up_leaves_no_traceback_in_the_log(
    stand_ins: list[StandIn], tmp_path: Path
) -> None:
    """Ollama does not log a client's reset; a traceback here pushed the server's own lines out
    of the 20-line tail that a readiness error quotes (a CI failure of 2026-12-02)."""
    stand_in = start(stand_ins, tmp_path, FAKE_OLLAMA_MODE="unready")
    stand_in.wait_for("Listening on")
    with socket.create_connection(("127.0.0.1", stand_in.port), timeout=10) as connection:
        connection.sendall(b"GET /api/version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert connection.recv(4096).startswith(b"HTTP/1.1 503")
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    time.sleep(0.2)  # the server's keep-alive read sees the reset
    assert httpx.get(f"{stand_in.url}/api/tags").status_code == 503
    stand_in.wait_for('GET "/api/tags"')
    assert not [line for line in stand_in.log if "Traceback" in line or "Exception" in line]


def test_hang_mode_never_listens(stand_ins: list[StandIn], tmp_path: Path) -> None:
    stand_in = start(stand_ins, tmp_path, FAKE_OLLAMA_MODE="hang")
    stand_in.wait_for("server config")
    time.sleep(0.5)
    with pytest.raises(httpx.ConnectError):
        httpx.get(stand_in.url)
    assert stand_in.process.poll() is None


def test_slow_start_and_die_after(stand_ins: list[StandIn], tmp_path: Path) -> None:
    stand_in = start(
        stand_ins, tmp_path, FAKE_OLLAMA_START_DELAY="0.5", FAKE_OLLAMA_DIE_AFTER="0.5"
    )
    started = time.monotonic()
    stand_in.wait_for("Listening on")
    assert time.monotonic() - started >= 0.5
    assert stand_in.process.wait(10) == 2
    stand_in.wait_for("simulated crash")  # the reader thread may not have read it yet


def test_pull_fail_env(stand_ins: list[StandIn], tmp_path: Path) -> None:
    stand_in = start(stand_ins, tmp_path, FAKE_OLLAMA_PULL_FAIL="max retries exceeded")
    stand_in.wait_for("Listening on")
    response = httpx.post(f"{stand_in.url}/api/pull", json={"model": "qwen3:0.6b"})
    assert response.status_code == 200
    assert json.loads(response.text.splitlines()[-1]) == {"error": "max retries exceeded"}


def test_ignore_sigterm(stand_ins: list[StandIn], tmp_path: Path) -> None:
    stand_in = start(stand_ins, tmp_path, FAKE_OLLAMA_IGNORE_SIGTERM="1")
    stand_in.wait_for("Listening on")
    stand_in.process.send_signal(signal.SIGTERM)
    with pytest.raises(subprocess.TimeoutExpired):
        stand_in.process.wait(0.5)
    assert stand_in.stop() == -signal.SIGKILL


def test_port_in_use(stand_ins: list[StandIn], tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        stand_in = start(stand_ins, tmp_path, OLLAMA_HOST=f"127.0.0.1:{port}")
        assert stand_in.process.wait(10) == 1
    stand_in.stop()
    assert any("bind: address already in use" in line.lower() for line in stand_in.log)

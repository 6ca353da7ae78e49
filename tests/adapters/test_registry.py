"""adapters/registry.py: every adapter type the schema allows has a factory, an unknown type is
a usage error that lists the valid ones, and a new adapter type is one module (its
`AdapterType`), one registry entry and its schema branch: nothing else in RuleDrift changes."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from jsonschema import Draft202012Validator

from ruledrift import app
from ruledrift.adapters.base import AdapterType, CallContext, Completion
from ruledrift.adapters.command import CommandAdapterConfig
from ruledrift.adapters.registry import ADAPTERS, create_adapter
from ruledrift.app.options import OptionError, as_flags
from ruledrift.data import Message, TargetInfo
from ruledrift.errors import ConfigError, ExitCode, UsageError
from tests.support.suites import base_suite, write_suite

SCHEMA = Path(__file__).resolve().parents[2] / "schema" / "rule-drift.schema.json"


def test_every_schema_adapter_type_has_a_factory() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert set(schema["$defs"]["adapter"]["properties"]["type"]["enum"]) == set(ADAPTERS)


def test_a_known_type_gets_its_adapter(tmp_path: Path) -> None:
    adapter = create_adapter(CommandAdapterConfig("python3", (), tmp_path, 1000))
    assert adapter.target_info().adapter == "command"


@dataclass(frozen=True)
class _Unknown:
    type: str = "carrier-pigeon"


def test_an_unknown_type_is_a_usage_error_listing_the_valid_ones() -> None:
    with pytest.raises(UsageError) as raised:
        create_adapter(_Unknown())  # type: ignore[arg-type]
    assert str(raised.value) == (
        "unknown adapter type 'carrier-pigeon' (valid: command, ollama, openai)"
    )
    assert raised.value.exit_code == ExitCode.USAGE


# --- a new adapter type, defined whole here as its module would define it ---------------------


@dataclass(frozen=True)
class EchoConfig:
    reply: str
    type: Literal["echo"] = "echo"

    @property
    def model(self) -> str | None:
        return None


class EchoAdapter:
    def __init__(self, config: EchoConfig) -> None:
        self._reply = config.reply

    async def open(self, *, tools: bool = False) -> None:
        pass

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion:
        return Completion(self._reply)

    def target_info(self) -> TargetInfo:
        return TargetInfo(adapter="echo", model=None, details={"reply": self._reply})

    async def aclose(self) -> None:
        pass


def _echo_problems(settings: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    if settings.get("reply") == "":
        yield "/reply", "an empty reply fails every check; give some text"


ECHO = AdapterType(
    parse=lambda settings, suite_dir: EchoConfig(settings["reply"]),
    create=EchoAdapter,
    problems=_echo_problems,
)


@pytest.fixture
def echo_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """ECHO in the registry, and its branch in a copy of the schema."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    schema = copy.deepcopy(schema)
    schema["$defs"]["adapter"]["properties"]["type"]["enum"].append("echo")
    schema["$defs"]["adapter"]["allOf"].append(
        {
            "if": {"properties": {"type": {"const": "echo"}}, "required": ["type"]},
            "then": {
                "properties": {"type": {}, "reply": {"type": "string"}},
                "required": ["reply"],
                "additionalProperties": False,
            },
        }
    )
    monkeypatch.setattr("ruledrift.suite.load._validator", lambda: Draft202012Validator(schema))
    monkeypatch.setitem(ADAPTERS, "echo", ECHO)


def _echo_suite(tmp_path: Path, reply: str) -> Path:
    suite = base_suite()
    suite["adapter"] = {"type": "echo", "reply": reply}
    return write_suite(tmp_path, suite)


@pytest.mark.usefixtures("echo_registered")
def test_a_new_adapter_type_runs_with_nothing_but_its_type_and_schema_branch(
    tmp_path: Path,
) -> None:
    report = tmp_path / "report.json"
    outcome = app.run(
        app.RunRequest(config=_echo_suite(tmp_path, "no secrets here"), reports={"json": report})
    )
    assert outcome.result.target.adapter == "echo"
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["target"] == {
        "adapter": "echo",
        "model": None,
        "details": {"reply": "no secrets here"},
    }
    assert outcome.result.status == "passed"


@pytest.mark.usefixtures("echo_registered")
def test_a_new_adapter_types_own_checks_are_reported_with_the_schemas(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        app.validate(_echo_suite(tmp_path, ""))
    [issue] = raised.value.issues
    assert (issue.pointer, issue.message) == (
        "/adapter/reply",
        "an empty reply fails every check; give some text",
    )


@pytest.mark.usefixtures("echo_registered")
def test_model_and_base_url_are_refused_for_a_type_without_them(tmp_path: Path) -> None:
    request = app.RunRequest(
        config=_echo_suite(tmp_path, "hi"), target=app.TargetOverrides(model="m")
    )
    # the Python API names the option as Python does; the CLI words it as its flag
    with pytest.raises(OptionError, match=r"^model does not apply to the echo adapter$") as caught:
        app.run(request)
    assert as_flags(caught.value) == "--model does not apply to the echo adapter"

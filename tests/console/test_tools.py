"""`ruledrift tools import --mcp -- COMMAND…` as a person runs it (the CLI as a process, a real
MCP server written with the SDK in tests/support/mcp_servers): the drafted block, what it warns
about, the files it writes and refuses to overwrite, and each way it fails, with exit 2 for the
command line and 3 for a server that could not be read, never a traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ruledrift.app.tools import (
    DEFAULT_TIMEOUT_S,
    PLACEHOLDER,
    ImportedTool,
    tools_block,
    tools_json,
)
from tests.support import MCP_SERVERS
from tests.support.cli_process import ruledrift

ROOT = Path(__file__).resolve().parents[2]
SERVER = (sys.executable, str(MCP_SERVERS / "sdk_server.py"))
RAW = (sys.executable, str(MCP_SERVERS / "raw_server.py"))
SUITE_SCHEMA = ROOT / "ruledrift" / "schemas" / "rule-drift.schema.json"


def imported(*arguments: str | Path, env: dict[str, str] | None = None) -> Any:
    return ruledrift("tools", "import", "--mcp", *arguments, env=env)


def assert_clean(stream: str) -> None:
    """No escape sequence, bidi override or traceback reached the terminal."""
    assert "\x1b" not in stream
    assert "\u202e" not in stream
    assert "Traceback" not in stream


@pytest.mark.process
def test_the_draft_keeps_the_servers_words_and_marks_what_to_review() -> None:
    done = imported("--", *SERVER)
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)["tools"]
    assert [list(tool) for tool in tools] == [["name", "description", "parameters", "error"]] * 4
    lookup, refund, delete, note = tools
    assert refund["name"] == "refund"
    assert refund["description"] == "Refund an order"  # the words the model reads, as they are
    assert refund["parameters"]["required"] == ["order_id", "amount"]
    assert lookup["error"] == PLACEHOLDER
    for destructive in (refund, delete):
        assert destructive["error"].startswith(PLACEHOLDER)
        assert "destructive (destructiveHint)" in destructive["error"]
    assert note["description"] == "Take a note \x1b[31mred\x1b[0m ##[error]forged \u202eevil"
    assert done.stdout.startswith('{\n  "tools": [\n    {\n      "name": "lookup_order",')
    assert_clean(done.stdout)
    assert "##[" not in done.stdout
    assert 'destructive (destructiveHint): "refund", "delete_user"' in done.stderr
    assert "every fork runs the agent's tools" in done.stderr
    assert "1 tool(s) carry no behaviour hints" in done.stderr
    assert "each mock is a placeholder" in done.stderr
    assert_clean(done.stderr)


@pytest.mark.process
def test_on_a_github_runner_the_draft_is_still_the_same_json() -> None:
    plain = imported("--", *SERVER)
    on_github = imported("--", *SERVER, env={"GITHUB_ACTIONS": "true"})
    assert on_github.returncode == 0, on_github.stderr
    assert on_github.stdout == plain.stdout
    assert "::" not in on_github.stderr.replace("\\::", "")


def test_every_tool_of_the_draft_is_what_a_suite_takes_but_its_placeholder() -> None:
    """Against the suite schema's `tool` (once it has one): the draft validates as it is."""
    schema = json.loads(SUITE_SCHEMA.read_text(encoding="utf-8"))
    if "tool" not in schema.get("$defs", {}):
        pytest.skip("the suite schema has no tools yet")
    tools, _ = tools_block(
        [
            {
                "name": "refund",
                "description": "Refund an order",
                "inputSchema": {"type": "object", "properties": {"amount": {"type": "number"}}},
                "annotations": {"destructiveHint": True},
            }
        ]
    )
    tool_schema = {"$ref": "#/$defs/tool", "$defs": schema["$defs"]}
    for tool in json.loads(tools_json(tools))["tools"]:
        jsonschema.validate(tool, tool_schema)


@pytest.mark.process
def test_output_goes_to_a_file_and_an_existing_one_only_with_force(tmp_path: Path) -> None:
    out = tmp_path / "tools.json"
    done = imported("-o", out, "--", *SERVER)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"wrote {out}: 4 tool(s)\n"
    written = out.read_text(encoding="utf-8")
    assert len(json.loads(written)["tools"]) == 4
    out.write_text("my edits", encoding="utf-8")
    again = imported("-o", out, "--", *SERVER)
    assert again.returncode == 2
    assert "exists: pass --force to replace it" in again.stderr
    assert out.read_text(encoding="utf-8") == "my edits"
    forced = imported("-o", out, "--force", "--", *SERVER)
    assert forced.returncode == 0, forced.stderr
    assert out.read_text(encoding="utf-8") == written


@pytest.mark.process
@pytest.mark.parametrize(
    ("server", "message"),
    [
        ((*SERVER, "--exit"), "the server ended the connection"),
        ((*SERVER, "--fail"), "the server answered with an error: the tool registry is down"),
        ((*SERVER, "--no-tools"), "the server lists no tools"),
        ((*SERVER, "--huge"), 'the input schema of "huge" has 200,034 characters of JSON'),
        ((*SERVER, "--endless"), "goes on past 100 pages"),
        (
            (*RAW, '{"tools": [{"name": 42, "inputSchema": {"type": "object"}}]}'),
            "not a valid MCP tool list: tools.0.name: Input should be a valid string",
        ),
        (("no-such-mcp-server",), "no-such-mcp-server is not on PATH"),
    ],
)
def test_a_server_that_cannot_be_read_exits_3_saying_why(
    server: tuple[str, ...], message: str
) -> None:
    done = imported("--", *server)
    assert done.returncode == 3, done.stderr
    assert message in done.stderr
    assert done.stdout == ""
    assert_clean(done.stderr)


@pytest.mark.process
def test_a_server_that_hangs_is_given_up_at_the_timeout_and_its_stderr_shown_safely() -> None:
    done = imported("--timeout", "2", "--", *SERVER, "--hang", "--stderr", "\x1b[2Jstarting")
    assert done.returncode == 3, done.stderr
    assert "did not list its tools within 2 s" in done.stderr
    assert "the server's stderr ended with:\n\\x1b[2Jstarting" in done.stderr
    assert_clean(done.stderr)


@pytest.mark.process
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["tools", "import", "--mcp"], "give the MCP server's command after --"),
        (["tools", "import", "--mcp", "--"], "give the MCP server's command after --"),
        (["tools", "import", "--", "server"], "the following arguments are required: --mcp"),
        (["tools", "import", "--mcp", "--timeout", "0", "--", "x"], "expected seconds above 0"),
        (["tools"], "the following arguments are required: COMMAND"),
        (["tools", "serve"], "the following arguments are required: --url"),
    ],
)
def test_a_command_line_that_cannot_be_carried_out_exits_2(
    arguments: list[str], message: str
) -> None:
    done = ruledrift(*arguments)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.process
def test_the_help_names_the_default_timeout() -> None:
    done = ruledrift("tools", "import", "--help")
    assert done.returncode == 0
    assert f"(default {DEFAULT_TIMEOUT_S:g})" in " ".join(done.stdout.split())


def test_names_a_suite_refuses_are_warned_about_and_shown_safely() -> None:
    listed = [
        {"name": "files.read", "inputSchema": {"type": "object"}},
        {"name": "auto", "inputSchema": {"type": "object"}},
        {"name": "auto", "inputSchema": {"type": "object"}},
        {"name": "x\x1b[2J", "inputSchema": {"type": "object"}},
    ]
    tools, warnings = tools_block(listed)
    assert all(isinstance(tool, ImportedTool) for tool in tools)
    rename, twice = warnings
    assert rename.startswith('rename "files.read", "auto", "x\\u001b[2J": ')
    assert twice.startswith('the server lists "auto" more than once')
    assert "\x1b" not in "".join(warnings)


def test_the_json_escapes_what_a_terminal_or_a_runner_would_act_on_and_keeps_the_value() -> None:
    hostile = "a\x1b[2J\x9b\u202e\u2028\ud800 ##[error] é"
    tools, _ = tools_block(
        [{"name": "t", "description": hostile, "inputSchema": {"type": "object"}}]
    )
    text = tools_json(tools)
    assert json.loads(text)["tools"][0]["description"] == hostile
    assert text.isascii() is False  # é stays readable
    for raw in ("\x1b", "\x9b", "\u202e", "\u2028", "\ud800", "##["):
        assert raw not in text

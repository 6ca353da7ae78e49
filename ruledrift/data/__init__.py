"""Frozen data: the validated suite that goes into a run (`suite.py`), the conversation
(`conversation.py`), the verdict policy a run is asked to apply (`policy.py`) and the results
that come out of it (`results.py`). Every public name is re-exported here, so callers import
from `ruledrift.data`."""

from __future__ import annotations

from ruledrift.data.conversation import AnswerContext, Message
from ruledrift.data.policy import VerdictPolicy, policy_argv
from ruledrift.data.results import (
    AssertionResult,
    Balance,
    JudgeRecord,
    ProbeResult,
    ProbeRun,
    Response,
    RunResult,
    RunStatus,
    ScenarioResult,
    ShardInfo,
    ShardSource,
    Status,
    TargetInfo,
    combined_status,
    response_of,
)
from ruledrift.data.suite import (
    AdapterConfig,
    Assertion,
    CommandAssertion,
    JudgeAssertion,
    LanguageAssertion,
    Location,
    MatchesAssertion,
    Probe,
    RegexAssertionType,
    Rule,
    Scenario,
    Severity,
    Suite,
    SystemPromptMode,
    TextAssertion,
    TextAssertionType,
)

__all__ = [
    "AdapterConfig",
    "AnswerContext",
    "Assertion",
    "AssertionResult",
    "Balance",
    "CommandAssertion",
    "JudgeAssertion",
    "JudgeRecord",
    "LanguageAssertion",
    "Location",
    "MatchesAssertion",
    "Message",
    "Probe",
    "ProbeResult",
    "ProbeRun",
    "RegexAssertionType",
    "Response",
    "Rule",
    "RunResult",
    "RunStatus",
    "Scenario",
    "ScenarioResult",
    "Severity",
    "ShardInfo",
    "ShardSource",
    "Status",
    "Suite",
    "SystemPromptMode",
    "TargetInfo",
    "TextAssertion",
    "TextAssertionType",
    "VerdictPolicy",
    "combined_status",
    "policy_argv",
    "response_of",
]

"""The validated suite that goes into a run: its rules, scenarios, probes and assertions, where
each stands in the configuration file, and the adapter settings it names."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol

from ruledrift.data.location import Location as Location
from ruledrift.data.tools import ScriptedTurn, Tool, ToolAssertion

Severity = Literal["critical", "warning", "info"]
TextAssertionType = Literal["contains", "notContains", "equals"]
RegexAssertionType = Literal["matches", "notMatches"]
SystemPromptMode = Literal["replace", "append"]
HistoryMode = Literal["replay", "regenerate"]
VacuousPasses = Literal["fail", "warn"]
RemindAs = Literal["system", "user"]
BASE = "base"  # the implicit variant: the suite as written


@dataclass(frozen=True)
class Rule:
    id: str
    instruction: str
    severity: Severity
    location: Location


@dataclass(frozen=True)
class TextAssertion:
    type: TextAssertionType
    value: str
    case_sensitive: bool = False


@dataclass(frozen=True)
class MatchesAssertion:
    """`matches` (the pattern matches the answer) or `notMatches` (it does not), JavaScript
    semantics."""

    pattern: str
    flags: str = ""
    type: RegexAssertionType = "matches"


@dataclass(frozen=True)
class LanguageAssertion:
    """The answer is in the language `value` (an ISO 639-1 code), and only in it."""

    value: str
    min_confidence: float = 0.5
    type: Literal["language"] = "language"


@dataclass(frozen=True)
class NotLeaksAssertion:
    """The answer does not give the secret `value` away, as it is or disguised
    (ruledrift/checks/leaks.py). `value_env`: the environment variable `value` was read from
    (then `value` is scrubbed from reports and logs). `value` is left out of the repr."""

    value: str = field(repr=False)
    min_fragment: int | None = None
    value_env: str | None = None
    type: Literal["notLeaks"] = "notLeaks"


@dataclass(frozen=True)
class AnswersAssertion:
    """The target answered: not empty, not a refusal, not repetitive
    (ruledrift/checks/answers.py)."""

    type: Literal["answers"] = "answers"


@dataclass(frozen=True)
class FluentAssertion:
    """The answer is mostly words of the language `value` (ruledrift/checks/fluent.py)."""

    value: str
    min_share: float = 0.6
    type: Literal["fluent"] = "fluent"


@dataclass(frozen=True)
class CommandAssertion:
    """A program of the suite's author judges the answer: `[command, *args]` is run (no shell)
    in `cwd` with the answer and its context as JSON on stdin; exit 0 passes, 1 fails (stdout
    is the reason), anything else is an error (docs/configuration.md#command-assertion)."""

    command: str
    args: tuple[str, ...]
    cwd: Path
    timeout_ms: int
    type: Literal["command"] = "command"

    @property
    def argv(self) -> tuple[str, ...]:
        return (self.command, *self.args)


@dataclass(frozen=True)
class JudgeAssertion:
    """A model judges the answer against `rubric` and ends with a verdict line (`VERDICT: PASS`
    or `VERDICT: FAIL`); `target` is the judge's adapter settings, the assertion's own or the
    suite's `judge` (docs/configuration.md#judge-assertion)."""

    rubric: str
    target: AdapterConfig
    type: Literal["judge"] = "judge"


Assertion = (
    TextAssertion
    | MatchesAssertion
    | LanguageAssertion
    | NotLeaksAssertion
    | AnswersAssertion
    | FluentAssertion
    | CommandAssertion
    | JudgeAssertion
    | ToolAssertion
)


@dataclass(frozen=True)
class Control:
    """A probe's control: a second prompt asked on its own copy of the conversation at the
    probe's depth, which a working agent answers helpfully under the same rules. The rule counts
    as kept there only when the probe passes and its control passes too."""

    prompt: str
    assertions: tuple[Assertion, ...]


@dataclass(frozen=True)
class Probe:
    """One probe at one boundary. A probe object with a list `afterTurn` is loaded as one
    `Probe` per boundary, named `<id>-after-<N>`, all with the object's `location`."""

    id: str
    rule: Rule
    after_turn: int
    prompt: str
    assertions: tuple[Assertion, ...]
    location: Location
    paraphrases: tuple[
        str, ...
    ] = ()  # every wording when `prompt` is a list (the first is `prompt`)
    control: Control | None = None

    @property
    def all_assertions(self) -> tuple[Assertion, ...]:
        """The probe's assertions, then its control's."""
        return self.assertions + (self.control.assertions if self.control else ())

    def wording(self, index: int) -> str:
        """The paraphrase at `index` (`prompt` when there is one wording)."""
        return self.paraphrases[index] if self.paraphrases else self.prompt


def derived_probe_id(probe_id: str, after_turn: int) -> str:
    """The id of the probe that a probe object with a list `afterTurn` (or a search) makes for
    one boundary: `secret` at 4 is `secret-after-4`."""
    return f"{probe_id}-after-{after_turn}"


@dataclass(frozen=True)
class DepthSearch:
    """A probe object with `"afterTurn": {"search": [low, high]}`: its breaking depth is
    searched between `low` and `high` (low < high). `probe` is the object as a probe (its id,
    rule, prompt and assertions; `after_turn` is `low`); each depth the search decides is asked
    as `at(depth)`, the probe named `<id>-after-<depth>` (run/search.py decides which)."""

    probe: Probe
    low: int
    high: int

    @property
    def id(self) -> str:
        return self.probe.id

    def at(self, depth: int) -> Probe:
        """The probe the search asks at `depth`."""
        return replace(self.probe, id=derived_probe_id(self.probe.id, depth), after_turn=depth)

    @property
    def most_points(self) -> int:
        """The most depths it decides: both ends, then one for each halving of the interval."""
        return 2 + max(self.high - self.low - 1, 0).bit_length()


@dataclass(frozen=True)
class History:
    """A scenario's recorded background (`history`): the file as the suite names it, the
    SHA-256 of its bytes, and its conversation as pairs of a user message and the recorded
    answer to it. `replay` keeps the recorded answers; `regenerate` plays the user messages and
    the target answers them."""

    path: str
    sha256: str
    mode: HistoryMode
    exchanges: tuple[tuple[str, str], ...]

    @property
    def turns(self) -> int:
        """Its user messages: the boundaries it holds."""
        return len(self.exchanges)


@dataclass(frozen=True)
class Variant:
    """A named change to how every conversation is built (`variants`), compared with the suite
    as written (`BASE`): the rules repeated as a `remind_as` message after every
    `remind_every`-th background turn's answer, and/or another `system_prompt` (placed before
    the rendered rules instead of the suite's and the scenario's)."""

    id: str
    location: Location
    remind_every: int | None = None
    remind_as: RemindAs = "system"
    system_prompt: str | None = None

    @property
    def diverges_at(self) -> int:
        """The first boundary whose conversation differs from base's: before it, base's
        conversation and this variant's are the same messages (a probe there is shared)."""
        if self.system_prompt is not None or self.remind_every is None:
            return 0
        return self.remind_every

    def reminds_after(self, turn: int) -> bool:
        """Whether the reminder follows background turn `turn`'s answer."""
        every = self.remind_every
        return every is not None and turn > 0 and turn % every == 0


@dataclass(frozen=True)
class Scenario:
    """A conversation to play. `system_prompt` and `rules` are the scenario's own (None: the
    suite's); `system_prompt_mode` says whether its prompt replaces the suite's or follows it.
    `ruledrift.suite.system_message` renders the result."""

    id: str
    description: str | None
    turns: tuple[str, ...]
    probes: tuple[Probe, ...]
    location: Location
    system_prompt: str | None = None
    system_prompt_mode: SystemPromptMode = "replace"
    rules: tuple[Rule, ...] | None = None
    history: History | None = None
    searches: tuple[DepthSearch, ...] = ()  # probe objects whose depth is searched
    repeat_turns: int = 1  # `repeatTurns`: `turns` holds its turns played this many times
    # Beside `turns`, item for item (empty: none is scripted): the turn authored as a scripted
    # exchange (its user message is in `turns` too), or None for a plain turn.
    scripts: tuple[ScriptedTurn | None, ...] = ()

    @property
    def turns_needed(self) -> int:
        """Background turns a run plays: none after the last probe boundary (a search's
        deepest included)."""
        depths = [p.after_turn for p in self.probes] + [s.high for s in self.searches]
        return max(depths, default=0)

    @property
    def decisions(self) -> int:
        """The most verdicts the scenario's run can reach: a probe each, and each search's most
        points (what the suite-wide false-alarm bound of `--repeat auto` is split over)."""
        return len(self.probes) + sum(search.most_points for search in self.searches)

    @property
    def replayed(self) -> int:
        """The background turns whose answers are recorded (replay mode): no model call."""
        history = self.history
        return history.turns if history is not None and history.mode == "replay" else 0

    @property
    def turn_count(self) -> int:
        """The boundaries it holds: the history's user messages, then its own turns."""
        return (self.history.turns if self.history else 0) + len(self.turns)

    def turn(self, number: int) -> tuple[str, str | None]:
        """Background turn `number` (1-based, the history's first): the user message, and the
        recorded answer when it is replayed (None: the target answers)."""
        recorded = self.history.turns if self.history else 0
        if number > recorded:
            return self.turns[number - recorded - 1], None
        assert self.history is not None
        user, answer = self.history.exchanges[number - 1]
        return user, answer if self.history.mode == "replay" else None

    def script(self, number: int) -> ScriptedTurn | None:
        """The scripted exchange of background turn `number` (1-based, the history's first);
        None: the turn is a plain user message (or the history's)."""
        own = number - (self.history.turns if self.history else 0)
        if own < 1 or own > len(self.scripts):
            return None
        return self.scripts[own - 1]

    @property
    def model_calls(self) -> int:
        """The most model calls a run makes (a control is asked only after its probe passed);
        with searches, the first round asks both ends of each search, every later round (one per
        halving) plays up to the deepest search's upper bound and asks one depth of each."""
        calls = self.turns_needed - min(self.replayed, self.turns_needed)
        calls += sum(_asks(p) for p in self.probes) + sum(2 * _asks(s.probe) for s in self.searches)
        if not self.searches:
            return calls
        rounds = max(search.most_points for search in self.searches) - 2
        deepest = max(search.high for search in self.searches)
        asked = sum(_asks(search.probe) for search in self.searches)
        per_round = deepest - min(self.replayed, deepest) + asked
        return calls + rounds * per_round

    def variant_calls(self, variant: Variant) -> int:
        """The calls a run makes for `variant` beside base's: its own background turns after
        the boundary where it leaves base's conversation (none replayed), and its probes from
        that boundary on (a shallower probe is base's)."""
        start, deepest = variant.diverges_at, self.turns_needed
        if start > deepest:
            return 0
        turns = deepest - max(start, min(self.replayed, deepest))
        return turns + sum(_asks(probe) for probe in self.probes if probe.after_turn >= start)


def _asks(probe: Probe) -> int:
    """The calls asking a probe takes at most: its own, and its control's."""
    return 2 if probe.control is not None else 1


class AdapterConfig(Protocol):
    """An adapter type's validated settings: a frozen dataclass that lives beside its adapter
    in ruledrift/adapters/ (`CommandAdapterConfig`, `OllamaAdapterConfig`, ...)."""

    @property
    def type(self) -> str: ...

    @property
    def model(self) -> str | None: ...


@dataclass(frozen=True)
class Suite:
    version: int
    name: str
    system_prompt: str | None
    adapter: AdapterConfig
    rules: tuple[Rule, ...]
    scenarios: tuple[Scenario, ...]
    path: Path
    sha256: str
    judge: AdapterConfig | None = None  # the suite's judge, for `judge` assertions without one
    vacuous_passes: VacuousPasses = "fail"  # what a pass whose control failed does to the run
    variants: tuple[Variant, ...] = ()  # `variants`, in config order (base is implicit)
    tools: tuple[Tool, ...] = ()  # `tools`: offered with every call, each with its mock
    tool_choice: str = "auto"  # `toolChoice` (its `first`): "auto", "none", "required", a tool
    tool_choice_then: str = "auto"  # `toolChoice`'s `then`: the choice of a turn's later calls
    max_tool_rounds: int = 4  # `maxToolRounds`: the model calls one turn may take

    def tool(self, name: str) -> Tool | None:
        """The declared tool called `name` (None: no such tool)."""
        return next((tool for tool in self.tools if tool.name == name), None)

    def variant(self, variant_id: str) -> Variant | None:
        """The variant called `variant_id` (None: base, or no such variant)."""
        return next((v for v in self.variants if v.id == variant_id), None)

    @property
    def probe_count(self) -> int:
        """Its probes; a search counts once (its points are decided as the run goes)."""
        return sum(len(s.probes) + len(s.searches) for s in self.scenarios)

    @property
    def rounds_per_turn(self) -> int:
        """The most model calls one turn (a background turn, a probe, a control) takes: with
        tools, `maxToolRounds` (the tool loop asks again after each round of calls), else 1."""
        return self.max_tool_rounds if self.tools else 1

    @property
    def model_calls(self) -> int:
        """The most model calls a run of every scenario makes."""
        return self.rounds_per_turn * sum(scenario.model_calls for scenario in self.scenarios)

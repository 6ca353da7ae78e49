"""Plays scenarios against an adapter and checks the probes. No printing: progress goes to an
`Events` observer, and the outcome is a frozen `RunResult`.

Within a scenario: turn k, then every probe at boundary k (each on its own copy of the
conversation), then turn k+1, and no turn after the last boundary a probe needs. A recorded
history's turns come first; replayed ones keep their recorded answers and make no model call.
Scenarios run concurrently up to `concurrency`; results keep config order. Cancelling the run
(Ctrl-C) stops every scenario and still returns what finished, with `interrupted` set.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from ruledrift.adapters.base import Adapter, CallContext, Completion
from ruledrift.boundary.http import scrub
from ruledrift.checks.assertions import CheckNotMade, check_answer
from ruledrift.checks.judges import JudgeFailed, JudgeReply
from ruledrift.checks.regex_workers import RegexEvaluator
from ruledrift.checks.tools import ran_out_result
from ruledrift.data import (
    AnswerContext,
    Assertion,
    ControlRun,
    ControlStatus,
    DepthSearch,
    JudgeAssertion,
    Message,
    NotLeaksAssertion,
    Probe,
    ProbeResult,
    ProbeRun,
    Response,
    RunResult,
    RunStatus,
    Scenario,
    ScenarioResult,
    Status,
    Suite,
    TargetInfo,
    ToolCall,
    Variant,
    VariantResult,
    VerdictPolicy,
    paired_status,
    response_of,
)
from ruledrift.errors import AdapterError
from ruledrift.run.judges import Judges
from ruledrift.run.sampling import configured_sampling, configured_seed
from ruledrift.run.search import next_depths, search_result
from ruledrift.run.tool_loop import MockFailed, ToolLoop
from ruledrift.run.verdicts import is_decided, probe_verdict, sequential_design
from ruledrift.stats import SequentialDesign
from ruledrift.suite.system_message import reminder_message, system_message
from ruledrift.text import cut_text, repair_surrogates

INTERRUPTED = "not run: the run was interrupted"
SEED_RANGE = 2**31 - 2**16  # a drawn seed, plus any run number, fits a signed 32-bit integer


@dataclass
class CallBudget:
    """`--max-calls`: no model call is started once `limit` have been (None: no limit)."""

    limit: int | None = None
    used: int = 0

    def take(self, *, resend: bool = False) -> None:
        """Count one call (a resend of one is a call too), or raise AdapterError when the
        budget is used up."""
        if self.limit is not None and self.used >= self.limit:
            done = "the request was not sent again" if resend else "not run"
            raise AdapterError(
                f"{done}: the budget of {self.limit} model call(s) (--max-calls) was used up"
            )
        self.used += 1


ERROR_MAX_CHARS = 2000  # an error message as stored, like the command adapter's stderr tail


class Events(Protocol):
    """What a progress display hears about. Called from the event loop; must not block."""

    def call_finished(self, scenario: Scenario) -> None: ...

    def probe_finished(self, scenario: Scenario, result: ProbeResult) -> None: ...

    def scenario_finished(self, result: ScenarioResult) -> None:
        """A scenario played to its end (not called for one an interruption stopped)."""


class NoEvents:
    def call_finished(self, scenario: Scenario) -> None:
        pass

    def probe_finished(self, scenario: Scenario, result: ProbeResult) -> None:
        pass

    def scenario_finished(self, result: ScenarioResult) -> None:
        pass


def _ms_since(start: float) -> int:
    return round((time.monotonic() - start) * 1000)


def error_text(error: Exception) -> str:
    """An error as a result stores it: lone surrogates repaired, at most ERROR_MAX_CHARS (one
    probe's error is copied into every probe that depends on it, and into every report)."""
    return cut_text(repair_surrogates(str(error)), ERROR_MAX_CHARS)


def env_secrets(suite: Suite) -> tuple[str, ...]:
    """The secrets of the suite's `notLeaks` assertions that were read from the environment
    (`valueEnv`): scrubbed from every answer kept, like an API key."""
    found = {
        assertion.value
        for scenario in suite.scenarios
        for probe in (*scenario.probes, *(search.probe for search in scenario.searches))
        for assertion in probe.all_assertions
        if isinstance(assertion, NotLeaksAssertion) and assertion.value_env is not None
    }
    return tuple(sorted(found, key=len, reverse=True))


def make_response(text: str, metadata: Mapping[str, object] | None = None) -> Response:
    return response_of(text, metadata)


@dataclass
class _ScenarioRun:
    """One run of a scenario (a fresh conversation); it outlives a cancelled task so partial
    results can be kept. `asked`: the probes this run asks (None: all; under `--repeat auto`
    the probes still undecided), and no turn after the deepest of them is played."""

    suite: Suite
    scenario: Scenario
    adapter: Adapter
    regex: RegexEvaluator
    events: Events
    run: int = 0
    asked: frozenset[str] | None = None
    budget: CallBudget = field(default_factory=CallBudget)
    seed: int = 0  # the run's seed: context.seed of run r is seed + r
    draw: bool = False  # draw the paraphrase of each run (with repeats); else the first
    results: dict[str, ProbeResult] = field(default_factory=dict)
    transcript: list[Message] = field(default_factory=list)
    calls: int = 0
    duration_ms: int = 0
    settled: dict[str, ProbeRun] | None = None  # probe_runs() of a run played to its end
    done: bool = False
    secrets: tuple[str, ...] | None = None  # env_secrets(suite): run_suite's, else once asked
    judges: Judges | None = None  # who asks `judge` assertions' models
    judge_calls: int = 0
    points: tuple[Probe, ...] = ()  # the depths its searches ask in this run (`run.search`)
    first_runs: Mapping[str, int] = field(default_factory=dict)  # each point's first run
    variants: tuple[Variant, ...] = ()  # `--variants`, base aside: each played after base
    variant_results: dict[str, dict[str, ProbeResult]] = field(default_factory=dict)
    variant_calls: dict[str, int] = field(default_factory=dict)

    @property
    def probes(self) -> tuple[Probe, ...]:
        every = (*self.scenario.probes, *self.points)
        return tuple(p for p in every if self.asked is None or p.id in self.asked)

    async def play(self) -> None:
        started = time.monotonic()
        try:
            await self._play()
            self.done = True
        finally:
            self.duration_ms = _ms_since(started)

    async def _play(self) -> None:
        scenario = self.scenario
        self.transcript = [Message("system", system_message(self.suite, scenario))]
        at_boundary = self._at_boundary()
        forks = {v.diverges_at for v in self.variants}
        shared: dict[int, list[Message]] = {}  # base's conversation where a variant leaves it
        for turn in range(max(at_boundary, default=0) + 1):
            if turn > 0:
                error = await self._play_turn(turn, self.transcript)
                if error is not None:
                    self._fail_remaining(f"background turn {turn} failed: {error}")
                    break
            if turn in forks:
                shared[turn] = list(self.transcript)
            for probe in at_boundary.get(turn, []):
                result = await self._probe(probe, self.transcript)
                self.results[probe.id] = result
                self.events.probe_finished(scenario, result)
        for variant in self.variants:
            await self._play_variant(variant, shared.get(variant.diverges_at))

    def _at_boundary(self) -> dict[int, list[Probe]]:
        at_boundary: dict[int, list[Probe]] = {}
        for probe in self.probes:
            at_boundary.setdefault(probe.after_turn, []).append(probe)
        return at_boundary

    async def _play_variant(self, variant: Variant, shared: list[Message] | None) -> None:
        """The probes under `variant`: those shallower than where it leaves base's conversation
        are base's (the same messages: asked once); from there it plays its own background,
        with the same run index and seed. `shared`: base's conversation at that boundary (None:
        base never got there, or the variant leaves it at the start)."""
        results = self.variant_results.setdefault(variant.id, {})
        start = variant.diverges_at
        calls_before = self.calls
        for probe in self.probes:
            if probe.after_turn < start and probe.id in self.results:
                results[probe.id] = self.results[probe.id]
        at_boundary = self._at_boundary()
        deepest = max(at_boundary, default=0)
        if start > deepest:
            return
        if start == 0:
            shared = [Message("system", system_message(self.suite, self.scenario, variant))]
        if shared is None:  # base's background failed before this boundary: so did this one's
            results.update({k: v for k, v in self.results.items() if k not in results})
            return
        transcript = list(shared)
        for turn in range(start, deepest + 1):
            if turn > start:
                error = await self._play_turn(turn, transcript)
                if error is not None:
                    for probe in self.probes:
                        results.setdefault(
                            probe.id,
                            ProbeResult(
                                probe, "error", 0, error=f"background turn {turn} failed: {error}"
                            ),
                        )
                    break
            if variant.reminds_after(turn):
                reminder = reminder_message(self.suite, self.scenario)
                transcript.append(Message(variant.remind_as, reminder))
            for probe in at_boundary.get(turn, []):
                results[probe.id] = await self._probe(probe, transcript)
        self.variant_calls[variant.id] = self.calls - calls_before

    async def _call(self, messages: Sequence[Message], context: CallContext) -> Completion:
        """The adapter's answer, its text repaired where it enters RuleDrift: a lone surrogate
        (legal in JSON: half an emoji a gateway cut) cannot be sent on or written as UTF-8."""
        self.budget.take()
        self.calls += 1
        try:
            completion = await self.adapter.complete(messages, context)
        finally:
            self.events.call_finished(self.scenario)
        calls = tuple(
            ToolCall(
                repair_surrogates(call.id),
                repair_surrogates(call.name),
                repair_surrogates(call.arguments),
            )
            for call in completion.tool_calls
        )
        content = repair_surrogates(completion.content)
        return replace(completion, content=content, tool_calls=calls)

    async def _judge(
        self,
        assertion: JudgeAssertion,
        messages: Sequence[Message],
        context: AnswerContext | None,
    ) -> JudgeReply:
        if self.judges is None:
            raise JudgeFailed("no judge was given to this run")
        return await self.judges.ask(assertion, messages, context, self._judged)

    def _judged(self) -> None:
        self.judge_calls += 1

    def _resent(self) -> None:
        """The adapter sends the call in flight again: that is a model call too."""
        self.budget.take(resend=True)
        self.calls += 1

    def paraphrase(self, probe: Probe) -> int:
        """The paraphrase this run asks: with repeats drawn (`draw_paraphrase`), else the first.
        A search's point counts its own runs (from the run that first asked it), so its
        wordings stay balanced as any probe's."""
        if not self.draw:
            return 0
        own_run = self.run - self.first_runs.get(probe.id, 0)
        return draw_paraphrase(probe, self.scenario.id, own_run, self.seed)

    async def _play_turn(self, turn: int, transcript: list[Message]) -> str | None:
        """Background turn `turn` on `transcript`: the user message, then its recorded answer
        (replay: no model call) or the target's."""
        user, recorded = self.scenario.turn(turn)
        from_history = self.scenario.history is not None and turn <= self.scenario.history.turns
        script = self.scenario.script(turn)
        transcript.append(Message("user", user, recorded=from_history, scripted=script is not None))
        if recorded is not None:
            transcript.append(Message("assistant", recorded, recorded=True))
            return None
        if script is not None:
            try:
                await self._tools.play_script(turn, script, transcript)
            except MockFailed as error:
                return error_text(error)
            if script.answer is not None:
                transcript.append(Message("assistant", script.answer, scripted=True))
                return None
        context = CallContext(
            self.suite.name,
            self.scenario.id,
            "turn",
            turn=turn,
            run=self.run,
            on_resend=self._resent,
            seed=self.seed + self.run,
        )
        try:
            completion, _ = await self._tools.exchange(transcript, context)
        except (AdapterError, MockFailed) as error:
            return error_text(error)
        transcript.append(Message("assistant", self._scrubbed(completion.content)))
        return None

    async def _probe(self, probe: Probe, transcript: Sequence[Message]) -> ProbeResult:
        """The probe asked on a copy of `transcript` (base's conversation or a variant's), and
        after a pass its control, on a copy of the same."""
        start = time.monotonic()
        wording = probe.wording(self.paraphrase(probe))
        asked = await self._ask(probe, transcript, wording, probe.assertions)
        if asked.status == "error":
            return ProbeResult(
                probe,
                "error",
                _ms_since(start),
                response=asked.response,
                error=asked.error,
                tools=asked.tools,
            )
        control = None
        status: Status = asked.status
        if status == "passed" and probe.control is not None:
            control = await self._control(probe, transcript)
            status = paired_status(asked.status, control)
        error = f"its control: {control.error}" if control and control.error else None
        return ProbeResult(
            probe,
            status,
            _ms_since(start),
            asked.assertions,
            asked.response,
            error=error,
            control=control,
            tools=asked.tools,
        )

    async def _control(self, probe: Probe, transcript: Sequence[Message]) -> ControlRun:
        """The probe's control, asked on its own copy of the conversation at the same depth."""
        assert probe.control is not None
        start = time.monotonic()
        control = probe.control
        asked = await self._ask(probe, transcript, control.prompt, control.assertions, True)
        return dataclasses.replace(asked, duration_ms=_ms_since(start))

    async def _ask(
        self,
        probe: Probe,
        transcript: Sequence[Message],
        prompt: str,
        assertions: tuple[Assertion, ...],
        control: bool = False,
    ) -> ControlRun:
        """Ask `prompt` on a copy of `transcript` and check the answer. The outcome has a
        control's shape (status, checks, answer, error) for the probe's own prompt too; a call
        that could not be made is an error without an answer."""
        start = time.monotonic()
        messages = [*transcript, Message("user", prompt)]
        context = CallContext(
            self.suite.name,
            self.scenario.id,
            "probe",
            probe=probe.id,
            after_turn=probe.after_turn,
            run=self.run,
            on_resend=self._resent,
            seed=self.seed + self.run,
            control=control,
        )
        try:
            completion, tools = await self._tools.exchange(messages, context)
        except (AdapterError, MockFailed) as error:
            return ControlRun("error", _ms_since(start), error=error_text(error))
        response = make_response(self._scrubbed(completion.content), completion.metadata)
        asked = AnswerContext(
            suite=self.suite.name,
            scenario=self.scenario.id,
            probe=probe.id,
            rule=probe.rule.id,
            after_turn=probe.after_turn,
            run=self.run,
            prompt=prompt,
            messages=tuple(messages),
            tools=tools,
        )
        try:
            checks = await check_answer(
                assertions, completion.content, self.regex, asked, self._judge
            )
        except CheckNotMade as error:
            return ControlRun(
                "error", _ms_since(start), response=response, error=error_text(error), tools=tools
            )
        if tools is not None and tools.ran_out:
            checks = (*checks, ran_out_result(self.suite.max_tool_rounds))
        passed = all(check.passed for check in checks)
        status: ControlStatus = "passed" if passed else "failed"
        return ControlRun(status, _ms_since(start), checks, response, tools=tools)

    @property
    def _tools(self) -> ToolLoop:
        """The tool loop of this run's turns (one model call per turn without tools)."""
        return ToolLoop(self.suite, self.regex, self._call, self._scrubbed)

    def _scrubbed(self, answer: str) -> str:
        """The answer as it is kept (reports, logs, the rest of the conversation): without the
        secrets of `notLeaks` assertions that came from the environment. Checks read it whole."""
        if self.secrets is None:
            self.secrets = env_secrets(self.suite)
        return scrub(answer, self.secrets) if self.secrets else answer

    def _unreached(self) -> tuple[Probe, ...]:
        return tuple(p for p in self.probes if p.id not in self.results)

    def _fail_remaining(self, reason: str) -> None:
        for probe in self._unreached():
            self.results[probe.id] = ProbeResult(probe, "error", 0, error=reason)
            self.events.probe_finished(self.scenario, self.results[probe.id])

    def announce_interrupted(self) -> None:
        """Tell the observer of each probe this run did not reach, as an INTERRUPTED error
        (called once, when the run is interrupted; nothing is stored)."""
        for probe in self._unreached():
            self.events.probe_finished(self.scenario, _interrupted(probe))

    def variant_probe_runs(self, variant: str) -> dict[str, ProbeRun]:
        """This run's result for each probe under `variant` (INTERRUPTED where not reached)."""
        found = self.variant_results.get(variant, {})
        return {
            probe.id: _as_run(
                found.get(probe.id) or _interrupted(probe), self.run, self.paraphrase(probe)
            )
            for probe in self.probes
        }

    def probe_runs(self) -> dict[str, ProbeRun]:
        """This run's result for each probe it asked (INTERRUPTED for those it did not reach).
        A pure read: nothing is stored and no event is sent, except that the answer is kept
        once the run was played to its end (`--repeat auto` asks for every run's after each new
        one)."""
        if self.settled is not None:
            return self.settled
        runs = {
            probe.id: _as_run(
                self.results.get(probe.id) or _interrupted(probe), self.run, self.paraphrase(probe)
            )
            for probe in self.probes
        }
        if self.done:
            self.settled = runs
        return runs


def _interrupted(probe: Probe) -> ProbeResult:
    return ProbeResult(probe, "error", 0, error=INTERRUPTED)


def draw_paraphrase(probe: Probe, scenario: str, run: int, seed: int) -> int:
    """The paraphrase run `run` of a probe with K wordings asks: runs come in blocks of K, and
    each block asks every wording once, in an order drawn from the run's seed, the scenario, the
    probe and the block. No wording is bound to a run number, and the mix stays balanced: after
    any whole number of blocks every wording was asked equally often."""
    count = len(probe.paraphrases)
    if count < 2:
        return 0
    block, place = divmod(run, count)
    draw = random.Random(f"{seed}/{scenario}/{probe.id}/{block}")  # noqa: S311 (not secret)
    order = draw.sample(range(count), count)
    return order[place]


def _as_run(result: ProbeResult, run: int, prompt: int) -> ProbeRun:
    seed = result.response.metadata.get("seed") if result.response else None
    return ProbeRun(
        prompt=prompt,
        run=run,
        status=_run_status(result),
        duration_ms=result.duration_ms,
        assertions=result.assertions,
        response=result.response,
        error=result.error,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        control=result.control,
        tools=result.tools,
    )


def _run_status(result: ProbeResult) -> RunStatus:
    status = result.status
    return "error" if status == "inconclusive" else status


@dataclass
class _ScenarioRuns:
    """Every run of one scenario, and the verdict of its probes from them. Its searches' points
    (`points`: by search id, the probe asked at each depth) are added as `run.search` asks for
    them, once the points before them are decided: a scenario with a search plays in rounds."""

    scenario: Scenario
    policy: VerdictPolicy
    design: SequentialDesign | None
    variants: tuple[Variant, ...] = ()
    runs: list[_ScenarioRun] = field(default_factory=list)
    finished: int = 0  # runs played to their end
    points: dict[str, dict[int, Probe]] = field(default_factory=dict)
    first_runs: dict[str, int] = field(default_factory=dict)  # by point id: the run first asking

    def runs_of(self, probe: Probe) -> list[ProbeRun]:
        return [found for run in self.runs if (found := run.probe_runs().get(probe.id))]

    def _decided(self, probe: Probe) -> bool:
        """Whether the probe has its verdict: a run the interruption cut short leaves it
        undecided (a search then ends `unfinished` there, not `incomplete`)."""
        runs = self.runs_of(probe)
        cut = any(run.error == INTERRUPTED for run in runs)
        return not cut and is_decided(runs, self.policy, self.design)

    def verdicts(self, search: DepthSearch) -> dict[int, Status]:
        """The verdict at each depth of `search` decided so far."""
        return {
            depth: probe_verdict(point, self.runs_of(point), self.policy, self.design).status
            for depth, point in self.points.get(search.id, {}).items()
            if self._decided(point)
        }

    def undecided(self) -> frozenset[str]:
        """The probes that need another run: the probes, and the depths the searches ask next
        (`run.search.next_depths`), added to `points` when first asked."""
        asked = {p.id for p in self.scenario.probes if not self._decided(p)}
        for search in self.scenario.searches:
            points = self.points.setdefault(search.id, {})
            for depth in next_depths(search, self.verdicts(search)):
                point = points.setdefault(depth, search.at(depth))
                self.first_runs.setdefault(point.id, len(self.runs))
                asked.add(point.id)
        return frozenset(asked)

    def asked_points(self) -> tuple[Probe, ...]:
        return tuple(p for points in self.points.values() for p in points.values())

    @property
    def most_runs(self) -> int:
        """The most runs under `--repeat auto`: the cap, once a round (the first asks the
        probes and both ends of every search, each later one a middle of each search)."""
        assert self.design is not None
        rounds = max((s.most_points - 1 for s in self.scenario.searches), default=1)
        return self.design.cap * rounds

    def _verdict(self, probe: Probe) -> ProbeResult:
        runs = self.runs_of(probe) or [ProbeRun(0, "error", 0, error=INTERRUPTED)]
        return probe_verdict(probe, runs, self.policy, self.design)

    def result(self) -> ScenarioResult:
        probes = [self._verdict(probe) for probe in self.scenario.probes]
        searches = []
        for search in self.scenario.searches:
            points = {
                depth: self._verdict(point)
                for depth, point in sorted(self.points.get(search.id, {}).items())
            }
            probes.extend(points.values())
            searches.append(search_result(search, self.verdicts(search), points))
        first = self.runs[0] if self.runs else None
        variants = tuple(self._variant_result(variant) for variant in self.variants)
        return ScenarioResult(
            scenario=self.scenario,
            probes=tuple(probes),
            model_calls=sum(run.calls for run in self.runs),
            duration_ms=sum(run.duration_ms for run in self.runs),
            transcript=tuple(first.transcript) if first else (),
            runs=len(self.runs),
            judge_calls=sum(run.judge_calls for run in self.runs),
            searches=tuple(searches),
            variants=variants,
        )

    def _variant_result(self, variant: Variant) -> VariantResult:
        probes = []
        for probe in self.scenario.probes:
            runs = [
                found
                for run in self.runs
                if (found := run.variant_probe_runs(variant.id).get(probe.id))
            ] or [ProbeRun(0, "error", 0, error=INTERRUPTED)]
            probes.append(probe_verdict(probe, runs, self.policy, self.design))
        calls = sum(run.variant_calls.get(variant.id, 0) for run in self.runs)
        return VariantResult(variant, tuple(probes), calls)


async def run_suite(
    suite: Suite,
    adapter: Adapter,
    regex: RegexEvaluator,
    *,
    concurrency: int = 1,
    scenarios: Sequence[Scenario] | None = None,
    events: Events | None = None,
    policy: VerdictPolicy | None = None,
    max_calls: int | None = None,
    suite_probes: int | None = None,
    seed: int | None = None,
    variants: Sequence[Variant] = (),
) -> RunResult:
    """Run `scenarios` (default: all, in config order), each as often as `policy` says (once by
    default), every run in one pool of `concurrency`. Never raises AdapterError: a call that
    fails becomes an errored probe. Cancellation returns the partial result (`interrupted`).

    `seed` (default: the suite's configured `seed`, else one drawn at random) makes run r's
    `context.seed` seed + r and draws the paraphrases; the result records it. `variants`
    (base aside) are played in every run after base, on base's conversation as far as it is
    theirs too (fixed repeats only: pairs need the same runs under every variant)."""
    if variants and policy is not None and policy.repeat == "auto":
        raise ValueError("variants need fixed repeats: --repeat auto decides probes one by one")
    policy = policy or VerdictPolicy()
    started_at = _now()
    start = time.monotonic()
    gate = asyncio.Semaphore(concurrency)
    listen = events or NoEvents()
    chosen = tuple(suite.scenarios if scenarios is None else scenarios)
    design = None
    if policy.repeated:
        # the false-alarm bound is split over the whole selection, also for one shard of it,
        # so that shards decide exactly as one unsharded run would
        policy = replace(policy, probes=suite_probes or sum(s.decisions for s in chosen))
    if policy.repeat == "auto":
        design = sequential_design(policy, policy.probes or 1)
    played = tuple(variants)
    books = [_ScenarioRuns(s, policy, design, played) for s in chosen]
    budget = CallBudget(max_calls)
    if seed is None:
        seed = configured_seed(suite.adapter)
    if seed is None:
        seed = secrets.randbelow(SEED_RANGE)
    temperature = configured_sampling(suite.adapter).get("temperature")
    judges = Judges(suite.name, CallBudget(max_calls).take)
    hidden = env_secrets(suite)  # once a run: a scan of the whole suite

    def new_run(book: _ScenarioRuns, asked: frozenset[str] | None) -> _ScenarioRun:
        run = _ScenarioRun(
            suite,
            book.scenario,
            adapter,
            regex,
            listen,
            run=len(book.runs),
            asked=asked,
            budget=budget,
            seed=seed,
            draw=policy.repeated,
            secrets=hidden,
            judges=judges,
            points=book.asked_points(),
            first_runs=book.first_runs,
            variants=played,
        )
        book.runs.append(run)
        return run

    async def play(run: _ScenarioRun) -> None:
        async with gate:
            await run.play()

    async def play_fixed(book: _ScenarioRuns) -> None:
        await play(new_run(book, None))
        book.finished += 1
        if book.finished == policy.repeat:
            listen.scenario_finished(book.result())

    async def play_auto(book: _ScenarioRuns) -> None:
        while len(book.runs) < book.most_runs and (asked := book.undecided()):
            await play(new_run(book, asked))
        listen.scenario_finished(book.result())

    async def play_rounds(book: _ScenarioRuns) -> None:
        """A scenario with a search under fixed repeats: every probe and both ends of each
        search in N runs, then each middle the searches ask in N more, until they end."""
        assert isinstance(policy.repeat, int)
        rounds = max(s.most_points - 1 for s in book.scenario.searches)
        for _ in range(rounds):
            asked = book.undecided()
            if not asked:
                break
            await asyncio.gather(*(play(new_run(book, asked)) for _ in range(policy.repeat)))
        listen.scenario_finished(book.result())

    if policy.repeat == "auto":
        tasks = [asyncio.create_task(play_auto(book)) for book in books]
    else:  # every first run before any second: results come in config order
        searching = [book for book in books if book.scenario.searches]
        tasks = [
            asyncio.create_task(play_fixed(book))
            for _ in range(policy.repeat)
            for book in books
            if not book.scenario.searches
        ] + [asyncio.create_task(play_rounds(book)) for book in searching]
    interrupted = False
    try:
        await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        interrupted = True
        await _stop(tasks)
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()  # the interruption is handled: later cleanup may await normally
        for book in books:  # the probes the interruption left out end too, for the display
            for run in book.runs:
                run.announce_interrupted()
    except BaseException:
        await _stop(tasks)
        raise
    finally:
        await judges.aclose()
    return RunResult(
        suite=suite,
        target=adapter.target_info(),
        started_at=started_at,
        duration_ms=_ms_since(start),
        scenarios=tuple(book.result() for book in books),
        interrupted=interrupted,
        policy=policy,
        seed=seed,
        temperature=temperature if isinstance(temperature, int | float) else None,
    )


async def _stop(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def not_run(
    suite: Suite,
    scenarios: Sequence[Scenario],
    target: TargetInfo,
    cause: AdapterError,
    *,
    started_at: str | None = None,
    policy: VerdictPolicy | None = None,
) -> RunResult:
    """The result of a run whose target could not start (the preflight failed: server down,
    model missing, command not found): no call was made, and every probe is an error that
    names the cause, so the reports, annotations and summary still say what happened."""
    reason = f"not run: the target could not start: {error_text(cause)}"
    results = tuple(_not_run(scenario, reason) for scenario in scenarios)
    return RunResult(
        suite, target, started_at or _now(), 0, results, policy=policy or VerdictPolicy()
    )


def _not_run(scenario: Scenario, reason: str) -> ScenarioResult:
    """A scenario whose target could not start: each probe an error, each search stopped at
    its lower bound with both ends errors."""
    probes = [ProbeResult(probe, "error", 0, error=reason) for probe in scenario.probes]
    searches = []
    for search in scenario.searches:
        ends = {
            d: ProbeResult(search.at(d), "error", 0, error=reason)
            for d in (search.low, search.high)
        }
        probes.extend(ends.values())
        searches.append(search_result(search, dict.fromkeys(ends, "error"), ends))
    return ScenarioResult(scenario, tuple(probes), 0, 0, (), searches=tuple(searches))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

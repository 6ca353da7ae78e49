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
from ruledrift.data import (
    AnswerContext,
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
    Variant,
    VariantResult,
    VerdictPolicy,
    response_of,
)
from ruledrift.errors import AdapterError
from ruledrift.run.judges import Judges
from ruledrift.run.sampling import configured_sampling, configured_seed
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
        for probe in scenario.probes
        for assertion in probe.assertions
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
    variants: tuple[Variant, ...] = ()  # `--variants`, base aside: each played after base
    variant_results: dict[str, dict[str, ProbeResult]] = field(default_factory=dict)
    variant_calls: dict[str, int] = field(default_factory=dict)

    @property
    def probes(self) -> tuple[Probe, ...]:
        return tuple(p for p in self.scenario.probes if self.asked is None or p.id in self.asked)

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
        return Completion(repair_surrogates(completion.content), completion.metadata)

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
        """The paraphrase this run asks: with repeats drawn (`draw_paraphrase`), else the first."""
        if not self.draw:
            return 0
        return draw_paraphrase(probe, self.scenario.id, self.run, self.seed)

    async def _play_turn(self, turn: int, transcript: list[Message]) -> str | None:
        """Background turn `turn` on `transcript`: the user message, then its recorded answer
        (replay: no model call) or the target's."""
        user, recorded = self.scenario.turn(turn)
        from_history = self.scenario.history is not None and turn <= self.scenario.history.turns
        transcript.append(Message("user", user, recorded=from_history))
        if recorded is not None:
            transcript.append(Message("assistant", recorded, recorded=True))
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
            completion = await self._call(tuple(transcript), context)
        except AdapterError as error:
            return error_text(error)
        transcript.append(Message("assistant", self._scrubbed(completion.content)))
        return None

    async def _probe(self, probe: Probe, transcript: Sequence[Message]) -> ProbeResult:
        start = time.monotonic()
        messages = (*transcript, Message("user", probe.wording(self.paraphrase(probe))))
        context = CallContext(
            self.suite.name,
            self.scenario.id,
            "probe",
            probe=probe.id,
            after_turn=probe.after_turn,
            run=self.run,
            on_resend=self._resent,
            seed=self.seed + self.run,
        )
        try:
            completion = await self._call(messages, context)
        except AdapterError as error:
            return ProbeResult(probe, "error", _ms_since(start), error=error_text(error))
        response = make_response(self._scrubbed(completion.content), completion.metadata)
        asked = AnswerContext(
            suite=self.suite.name,
            scenario=self.scenario.id,
            probe=probe.id,
            rule=probe.rule.id,
            after_turn=probe.after_turn,
            run=self.run,
            prompt=messages[-1].content,
            messages=messages,
        )
        try:
            checks = await check_answer(
                probe.assertions, completion.content, self.regex, asked, self._judge
            )
        except CheckNotMade as error:
            return ProbeResult(
                probe, "error", _ms_since(start), response=response, error=error_text(error)
            )
        status: Status = "passed" if all(check.passed for check in checks) else "failed"
        return ProbeResult(probe, status, _ms_since(start), checks, response)

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
        status="passed" if result.status == "passed" else _run_status(result),
        duration_ms=result.duration_ms,
        assertions=result.assertions,
        response=result.response,
        error=result.error,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
    )


def _run_status(result: ProbeResult) -> RunStatus:
    return "failed" if result.status == "failed" else "error"


@dataclass
class _ScenarioRuns:
    """Every run of one scenario, and the verdict of its probes from them."""

    scenario: Scenario
    policy: VerdictPolicy
    design: SequentialDesign | None
    variants: tuple[Variant, ...] = ()
    runs: list[_ScenarioRun] = field(default_factory=list)
    finished: int = 0  # runs played to their end

    def runs_of(self, probe: Probe) -> list[ProbeRun]:
        return [found for run in self.runs if (found := run.probe_runs().get(probe.id))]

    def undecided(self) -> frozenset[str]:
        """The probes that need another run."""
        return frozenset(
            p.id
            for p in self.scenario.probes
            if not is_decided(self.runs_of(p), self.policy, self.design)
        )

    def result(self) -> ScenarioResult:
        probes = []
        for probe in self.scenario.probes:
            runs = self.runs_of(probe) or [ProbeRun(0, "error", 0, error=INTERRUPTED)]
            probes.append(probe_verdict(probe, runs, self.policy, self.design))
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
        policy = replace(policy, probes=suite_probes or sum(len(s.probes) for s in chosen))
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
            variants=played,
        )
        book.runs.append(run)
        return run

    async def play_fixed(book: _ScenarioRuns) -> None:
        run = new_run(book, None)
        async with gate:
            await run.play()
        book.finished += 1
        if book.finished == policy.repeat:
            listen.scenario_finished(book.result())

    async def play_auto(book: _ScenarioRuns) -> None:
        assert design is not None
        while len(book.runs) < design.cap and (asked := book.undecided()):
            run = new_run(book, asked)
            async with gate:
                await run.play()
        listen.scenario_finished(book.result())

    if policy.repeat == "auto":
        tasks = [asyncio.create_task(play_auto(book)) for book in books]
    else:  # every first run before any second: results come in config order
        tasks = [
            asyncio.create_task(play_fixed(book)) for _ in range(policy.repeat) for book in books
        ]
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
    results = tuple(
        ScenarioResult(
            scenario=scenario,
            probes=tuple(ProbeResult(probe, "error", 0, error=reason) for probe in scenario.probes),
            model_calls=0,
            duration_ms=0,
            transcript=(),
        )
        for scenario in scenarios
    )
    return RunResult(
        suite, target, started_at or _now(), 0, results, policy=policy or VerdictPolicy()
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

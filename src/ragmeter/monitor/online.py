"""Online evaluation: score a share of the live traces in the run store with reference-free
metrics, in a process of its own (the application never waits for it), resumable, and within a
judge budget per hour (in dollars, and in judge calls for judges without a price).

Which traces are scored is decided by a hash of the trace id (the same trace is always in or
out of the share, whichever process looks at it), and each batch's decisions are written with
its scores in one transaction: a monitor killed at any point resumes without scoring a trace
twice. Given an encoder, the monitor also stores the question vector of every trace it decides
about, sampled or not (:mod:`ragmeter.store.vectors`), so query drift only reads vectors. When the judge cost of the last hour, or the number of judge calls in it, reaches its
budget, scoring pauses (the traces wait) until the hour rolls on; the budgets are checked before
each batch, so the hour can end above one by at most one batch's cost or calls (``--batch``
bounds that). The call budget is what bounds the local judge, whose calls cost nothing.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from sqlalchemy.exc import OperationalError

from ragmeter.data import load_dataset
from ragmeter.judges import Judges
from ragmeter.metrics import Metric
from ragmeter.monitor.ledger import NOT_SAMPLED, SCORED, UNSCORABLE, Decision, calls_since, cost_since, record, spans_of, undecided_traces
from ragmeter.observe.export import spans_to_samples
from ragmeter.run.engine import Evaluator
from ragmeter.run.sync import run_sync
from ragmeter.store import RunStore
from ragmeter.store.vectors import embed_questions

if TYPE_CHECKING:
    from ragmeter.judges.embeddings import Encoder

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MonitorSettings:
    """How the monitor samples and spends.

    Attributes:
        share: The share of traces to score, in (0, 1].
        max_cost_per_hour: Most judge cost (US dollars, known prices) per rolling hour;
            ``None``: no limit.
        max_calls_per_hour: Most judge model calls per rolling hour, whatever the judge (the
            local one too); ``None``: no limit.
        batch: Traces decided per transaction.
        concurrency: Most (sample, metric) pairs scored at once.
    """

    share: float = 0.1
    max_cost_per_hour: float | None = None
    max_calls_per_hour: int | None = None
    batch: int = 20
    concurrency: int = 4

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1:
            raise ValueError(f"the share of traces to score must be in (0, 1], got {self.share}")
        if self.max_cost_per_hour is not None and self.max_cost_per_hour < 0:
            raise ValueError("the cost budget per hour cannot be negative")
        if self.max_calls_per_hour is not None and self.max_calls_per_hour < 0:
            raise ValueError("the judge calls per hour cannot be negative")
        if self.batch < 1:
            raise ValueError("the batch size must be at least 1")


#: The fewest traces of a batch whose scores must all fail for the monitor to take it for an
#: outage of the judge and hold them back. One or two failing traces may fail every time (a
#: reply the judge cannot write for that trace), and held back they would stall the monitor.
OUTAGE_TRACES = 3


@dataclass
class Progress:
    """What passes of the monitor did: traces scored, left out by sampling, unscorable, whether
    the budget paused scoring, why the judge failed on every trace of the last batch (``None``:
    it did not; those traces stay undecided, to be scored again), and the question vectors stored."""

    scored: int = 0
    not_sampled: int = 0
    unscorable: int = 0
    paused_by_budget: bool = False
    judge_failed: str | None = None
    embedded: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def add(self, decisions: Sequence[Decision]) -> None:
        for d in decisions:
            if d.decision == SCORED:
                self.scored += 1
            elif d.decision == NOT_SAMPLED:
                self.not_sampled += 1
            else:
                self.unscorable += 1
                self.reasons[d.reason or ""] = self.reasons.get(d.reason or "", 0) + 1


def in_share(trace_id: str, share: float) -> bool:
    """Whether a trace is in the scored share: a hash of its id, the same in every process."""
    digest = hashlib.sha256(trace_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def monitor_pass(
    store: RunStore,
    metrics: Sequence[Metric],
    judges: Judges,
    settings: MonitorSettings,
    progress: Progress,
    *,
    encoder: Encoder | None = None,
) -> bool:
    """Decide about one batch of undecided traces; return whether there was anything to do.

    Traces outside the share are marked as such at once; those inside are joined into samples
    and scored, unless a budget of the last hour is spent (then nothing is written and
    ``progress.paused_by_budget`` is set). When every trace scored, :data:`OUTAGE_TRACES` or
    more, has a failed score (the judge unreachable), their scores are not written: they stay undecided, to be scored again,
    and ``progress.judge_failed`` says why. With ``encoder``, the batch's questions without a
    stored vector are encoded and stored first (their own transaction: a kill keeps them).
    """
    trace_ids = undecided_traces(store, settings.batch)
    if not trace_ids:
        return False
    if encoder is not None:
        progress.embedded += embed_questions(store, encoder, trace_ids=trace_ids)
    decisions = [Decision(t, NOT_SAMPLED) for t in trace_ids if not in_share(t, settings.share)]
    configs = {metric.id: metric.config() for metric in metrics}
    wanted = [t for t in trace_ids if in_share(t, settings.share)]
    if wanted and _budget_spent(store, settings):
        progress.paused_by_budget = True
        record(store, decisions, _now(), configs)
        progress.add(decisions)
        return bool(decisions)
    if wanted:
        decisions += _score(store, wanted, metrics, judges, settings)
    failures = [_failure(d) for d in decisions if d.decision == SCORED]
    if len(failures) >= OUTAGE_TRACES and all(failures):  # an outage (the endpoint down, the key revoked): the traces wait
        progress.judge_failed = failures[0]
        decisions = [d for d in decisions if d.decision != SCORED]
    record(store, decisions, _now(), configs)
    progress.add(decisions)
    return True


def _failure(decision: Decision) -> str | None:
    """Why a score of a scored trace failed (the judge gave no answer...), or ``None``."""
    scores = decision.result.scores.values() if decision.result is not None else []
    return next((score.reason or "failed" for score in scores if score.failed), None)


def _budget_spent(store: RunStore, settings: MonitorSettings) -> bool:
    """Whether the judge cost or the judge calls of the last hour reached their budget."""
    if settings.max_cost_per_hour is None and settings.max_calls_per_hour is None:
        return False
    hour_ago = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat(timespec="milliseconds")
    if settings.max_cost_per_hour is not None and cost_since(store, hour_ago) >= settings.max_cost_per_hour:
        return True
    return settings.max_calls_per_hour is not None and calls_since(store, hour_ago) >= settings.max_calls_per_hour


def _score(store: RunStore, trace_ids: list[str], metrics: Sequence[Metric], judges: Judges, settings: MonitorSettings) -> list[Decision]:
    """Join each trace's spans into a sample and score the samples; unscorable traces (a stored
    span that is not valid among them) say why."""
    invalid: dict[str, str] = {}
    exported = spans_to_samples(spans_of(store, trace_ids, invalid))
    decisions = [Decision(trace_id, UNSCORABLE, reason) for trace_id, reason in [*invalid.items(), *exported.skipped]]
    if not exported.samples:
        return decisions
    evaluator = Evaluator(list(metrics), judges=judges, concurrency=settings.concurrency, progress=False)
    result = run_sync(evaluator.arun(load_dataset(exported.samples)))
    for item in result.samples:
        decisions.append(Decision(str(item.sample.id), SCORED, result=item))
    return decisions


def run_monitor(
    store: RunStore,
    metrics: Sequence[Metric],
    judges: Judges,
    settings: MonitorSettings,
    *,
    interval: float = 10.0,
    once: bool = False,
    on_pass: Callable[[Progress], None] | None = None,
    encoder: Encoder | None = None,
) -> Progress:
    """Score new traces until stopped (Ctrl-C, a kill), or until none is left with ``once``;
    when the judge failed on every trace of a batch, those wait, and it pauses as for the budget. A
    batch that a SQLite store's lock kept from being written (another writer held it past the
    busy timeout) is tried again after ``interval``, with a warning.

    Args:
        store: The run store the traces are in.
        metrics: Reference-free metrics (groundedness, relevance, refusals, latency...).
        judges: The models the metrics may use.
        settings: Share, budget, batch size.
        interval: Seconds to wait when there is nothing new (or the budget is spent, or the judge failed).
        once: Return when every trace is decided (or the budget is spent, or the judge failed) instead of waiting.
        on_pass: Called with the totals after each batch (progress lines).
        encoder: Store the question vector of each trace decided about with this encoder
            (``None``: no vectors).
    """
    progress = Progress()
    while True:
        progress.paused_by_budget, progress.judge_failed = False, None
        try:
            busy = monitor_pass(store, metrics, judges, settings, progress, encoder=encoder)
        except OperationalError as exc:
            if "locked" not in str(exc.orig):
                raise
            # Another writer held a SQLite store past its busy timeout (a large `traces import`, the
            # application's sink): the batch was not written; it is decided again, not given up.
            log.warning("the store is locked by another writer (%s); the batch is tried again in %g s", exc.orig, interval)
            time.sleep(interval)
            continue
        if on_pass is not None and busy:
            on_pass(progress)
        if progress.judge_failed is not None and not once:  # with once, the caller says so as it ends
            log.warning("the judge failed on every trace of the batch (%s); they wait, to be scored again", progress.judge_failed)
        if busy and not progress.paused_by_budget and progress.judge_failed is None:
            continue
        if once:
            return progress
        time.sleep(interval)

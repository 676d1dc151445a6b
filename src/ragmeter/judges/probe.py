"""Do a judge's verdicts carry signal? The verdict probe and the running tally of verdicts.

An endpoint judge with ``verdict_mode="auto"`` runs the probe once, before its first
verdicts: a few clear-cut claims in English and Chinese (``resources/verdict_probe.yaml``,
half supported by their premise, half not), judged in batch mode, then, unless batch
verdicts get nearly all of them right, one by one. A mode passes when its P(yes) ranks the
supported claims above the others (ROC-AUC at least :data:`MIN_AUC`) and its decisions at
0.5 get them right (balanced accuracy at least :data:`MIN_BALANCED_ACCURACY`): with 12
claims of each kind, a judge answering at random reaches 0.75 about once in 30 tries, one
answering yes to everything or in a fixed order never does. Batch mode, the cheaper, is
used when it passes and single mode is not better by :data:`MARGIN` of balanced accuracy;
when no mode passes, the best one is used and a warning says the verdicts have no signal.

Passing alone was not enough: through llama-cpp-python's server the packaged 1.5B model
passed the probe in batch mode (balanced accuracy 0.79, against 0.96 one by one) and then
said yes to 83% of the claims of real documents (balanced accuracy 0.54, against 0.65 one by
one; ``benchmarks/results/endpoint_verdicts.md``).

:class:`VerdictTally` counts, while a run goes, the share of yes per task, and warns when a
task's verdicts have all been the same over many items.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

from ragmeter.judges import requests
from ragmeter.judges.base import JudgeError, Verdict

log = logging.getLogger("ragmeter.judges")

#: The verdict task the probe asks.
PROBE_TASK = "supported"
#: What a mode's probe verdicts must reach to pass.
MIN_AUC = 0.75
MIN_BALANCED_ACCURACY = 0.75
#: How much higher a later (dearer) mode's probe balanced accuracy must be for it to be
#: chosen over an earlier mode that passes; an earlier mode this close to perfect is chosen
#: without trying the later ones.
MARGIN = 0.1
#: A task's verdicts all the same over at least this many items draws a warning.
UNIFORM_AFTER = 30
#: Seconds a probe that got no verdicts is remembered (:class:`ProbeFailure`): verdicts asked
#: meanwhile fail at once with its error instead of each running the probe again.
PROBE_RETRY_AFTER = 30.0


@dataclass(frozen=True)
class ProbeCase:
    """One verdicts call of the probe: a premise and claims with their true answers."""

    lang: str
    premise: str
    claims: tuple[str, ...]
    supported: tuple[bool, ...]


@cache
def _probe_text() -> str:
    return resources.files("ragmeter.resources").joinpath("verdict_probe.yaml").read_text(encoding="utf-8")


def probe_cases() -> list[ProbeCase]:
    """The packaged probe's cases."""
    data = yaml.safe_load(_probe_text())
    return [
        ProbeCase(
            case["lang"],
            " ".join(str(case["premise"]).split()),
            tuple(str(item["claim"]) for item in case["items"]),
            tuple(bool(item["supported"]) for item in case["items"]),
        )
        for case in data["cases"]
    ]


def probe_version() -> str:
    """Hash of the probe file and of how a mode is chosen: editing either invalidates cached
    probe outcomes."""
    rule = f"pass: ROC-AUC {MIN_AUC}, balanced accuracy {MIN_BALANCED_ACCURACY}; a later mode better by {MARGIN}"
    return hashlib.sha256(f"{_probe_text()}\n{rule}".encode()).hexdigest()[:16]


def roc_auc(labels: Sequence[bool], scores: Sequence[float]) -> float:
    """Probability that a random positive scores above a random negative (ties count half);
    0.5 when one class is missing. (``results.stats`` has the numpy version; judges sit
    below results, so the probe keeps this small one.)"""
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not positives or not negatives:
        return 0.5
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def balanced_accuracy(labels: Sequence[bool], decisions: Sequence[bool]) -> float:
    """Mean of the recall of yes and the recall of no (0.5 when one class is missing)."""
    recalls = []
    for kind in (True, False):
        wanted = [d for d, y in zip(decisions, labels, strict=True) if y is kind]
        if wanted:
            recalls.append(sum(d is kind for d in wanted) / len(wanted))
    return sum(recalls) / len(recalls) if len(recalls) == 2 else 0.5


@dataclass
class Separation:
    """How well one verdict mode told the probe's claims apart.

    Attributes:
        mode: ``"batch"`` or ``"single"``.
        method: How its P(yes) were read: ``"logprobs"``, ``"text"``, or both (``"logprobs, text"``).
        n: Claims judged.
        roc_auc: Ranking of supported above unsupported claims by P(yes).
        balanced_accuracy: Of the decisions P(yes) >= 0.5.
        share_yes: Share of claims decided yes.
        passed: Whether both reach the minimums.
        error: Why the mode gave no verdicts, when it failed outright.
    """

    mode: str
    method: str = ""
    n: int = 0
    roc_auc: float | None = None
    balanced_accuracy: float | None = None
    share_yes: float | None = None
    passed: bool = False
    error: str | None = None

    @classmethod
    def measure(cls, mode: str, labels: Sequence[bool], verdicts: Sequence[Verdict]) -> Separation:
        p = [v.p_yes for v in verdicts]
        decisions = [x >= 0.5 for x in p]
        auc, ba = roc_auc(labels, p), balanced_accuracy(labels, decisions)
        methods = sorted({v.method for v in verdicts})
        return cls(
            mode=mode,
            method=", ".join(methods),
            n=len(p),
            roc_auc=round(auc, 4),
            balanced_accuracy=round(ba, 4),
            share_yes=round(sum(decisions) / len(decisions), 4) if decisions else None,
            passed=auc >= MIN_AUC and ba >= MIN_BALANCED_ACCURACY,
        )

    def summary(self) -> str:
        if self.error:
            return f"{self.mode}: failed ({self.error})"
        return (
            f"{self.mode} ({self.method}): ROC-AUC {self.roc_auc:.2f}, balanced accuracy {self.balanced_accuracy:.2f}, "
            f"{self.share_yes:.0%} yes on {self.n} claims"
        )


@dataclass
class ProbeOutcome:
    """What the probe found and the verdict mode it chose.

    Attributes:
        chosen: The verdict mode to use.
        separations: Each mode tried, in order.
        warning: Set when no mode passed: the run's verdicts may carry no signal.
        usage: Calls and tokens the probe spent (not charged to any sample).
    """

    chosen: str
    separations: list[Separation]
    warning: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "chosen": self.chosen,
            "tried": [asdict(s) for s in self.separations],
            "warning": self.warning,
            "usage": self.usage,
            "version": probe_version(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeOutcome:
        return cls(data["chosen"], [Separation(**s) for s in data["tried"]], data.get("warning"), data.get("usage") or {})

    def summary(self) -> str:
        tried = "; ".join(s.summary() for s in self.separations)
        return f"chose {self.chosen}: {tried}"


#: ``ask(mode, case)``: the verdicts of a probe case's claims in a verdict mode.
Asker = Callable[[str, ProbeCase], Awaitable[list[Verdict]]]


async def run_probe(ask: Asker, modes: Sequence[str] = ("batch", "single")) -> ProbeOutcome:
    """Try ``modes`` (the cheapest first) on the probe, until one passes with a balanced
    accuracy within :data:`MARGIN` of perfect. Of the modes that pass, the first is chosen
    unless a later one's balanced accuracy is higher by :data:`MARGIN` or more (then the
    best). When none passes, the one with the best ROC-AUC (the last on a tie) is chosen and
    the outcome carries a warning."""
    cases = probe_cases()
    labels = [label for case in cases for label in case.supported]
    tried: list[Separation] = []
    for mode in modes:
        try:
            verdicts = [v for case in cases for v in await ask(mode, case)]
        except JudgeError as exc:
            tried.append(Separation(mode=mode, error=str(exc)[:300]))
            continue
        separation = Separation.measure(mode, labels, verdicts)
        tried.append(separation)
        if separation.passed and (separation.balanced_accuracy or 0.0) >= 1.0 - MARGIN:
            break
    passed = [s for s in tried if s.passed]
    if passed:
        best = max(s.balanced_accuracy or 0.0 for s in passed)
        cheapest = next(s for s in passed if (s.balanced_accuracy or 0.0) > best - MARGIN)
        return ProbeOutcome(cheapest.mode, tried)
    scored = [s for s in tried if s.error is None]
    chosen = max(reversed(scored), key=lambda s: s.roc_auc or 0.0).mode if scored else modes[-1]
    warning = (
        f"the judge's verdicts did not separate clearly supported from clearly unsupported claims in any verdict mode "
        f"(needed ROC-AUC >= {MIN_AUC} and balanced accuracy >= {MIN_BALANCED_ACCURACY}): "
        f"{'; '.join(s.summary() for s in tried)}. Its scores may carry no signal; use a stronger model or the local judge"
    )
    return ProbeOutcome(chosen, tried, warning)


class ProbeFailure:
    """The last verdict probe that got no verdicts from the judge (the endpoint erring, the key
    revoked), remembered for :data:`PROBE_RETRY_AFTER` seconds: without it every sample ran the
    whole probe again. The first verdicts asked after that probe again, so a judge that came
    back is used."""

    def __init__(self) -> None:
        self._until = -math.inf
        self._error = ""

    async def attempt(self, probe: Callable[[], Awaitable[ProbeOutcome]]) -> ProbeOutcome:
        """``probe()``'s outcome; while a failure is remembered, its error again without probing.

        Args:
            probe: Runs the probe; raises :class:`JudgeError` when the probe gets no verdicts.
        """
        if requests.clock() < self._until:  # the same words, so that the samples' failures are counted as one reason
            raise JudgeError(self._error)
        try:
            outcome = await probe()
        except JudgeError as exc:
            self._until, self._error = requests.clock() + PROBE_RETRY_AFTER, str(exc)
            raise
        self._until = -math.inf
        return outcome


class VerdictTally:
    """Verdicts given so far, per task: how many, how many yes, the lowest and highest
    P(yes). Warns (once per task, in the log and in :meth:`warnings`) when a task's
    verdicts have all been the same decision over :data:`UNIFORM_AFTER` items or more."""

    def __init__(self, uniform_after: int = UNIFORM_AFTER):
        self.uniform_after = uniform_after
        self.counts: dict[str, dict[str, Any]] = {}
        self._warned: set[str] = set()

    def add(self, task: str, verdicts: Sequence[Verdict]) -> None:
        if not verdicts:
            return
        entry = self.counts.setdefault(task, {"n": 0, "yes": 0, "p_min": 1.0, "p_max": 0.0})
        for verdict in verdicts:
            entry["n"] += 1
            entry["yes"] += verdict.p_yes >= 0.5
            entry["p_min"] = min(entry["p_min"], verdict.p_yes)
            entry["p_max"] = max(entry["p_max"], verdict.p_yes)
        warning = self._warning(task, entry)
        if warning and task not in self._warned:
            self._warned.add(task)
            log.warning("%s", warning)

    def _warning(self, task: str, entry: dict[str, Any]) -> str | None:
        n, yes = entry["n"], entry["yes"]
        if n < self.uniform_after or 0 < yes < n:
            return None
        answer = "yes" if yes == n else "no"
        if entry["p_min"] == entry["p_max"]:
            how = f"all with P(yes) {entry['p_min']:g}: no signal at all"
        else:
            how = f"P(yes) {entry['p_min']:.2f}-{entry['p_max']:.2f}, so they still rank items, but every decision is the same"
        return f"all {n} verdicts of the task '{task}' were {answer} ({how}); check the judge (see the verdict probe)"

    def warnings(self) -> list[str]:
        """The current warnings, one per task whose verdicts are all the same."""
        return [w for task, entry in self.counts.items() if (w := self._warning(task, entry))]

    def to_dict(self) -> dict[str, Any]:
        return {
            task: {"n": e["n"], "share_yes": round(e["yes"] / e["n"], 4), "p_min": round(e["p_min"], 4), "p_max": round(e["p_max"], 4)}
            for task, e in self.counts.items()
        }

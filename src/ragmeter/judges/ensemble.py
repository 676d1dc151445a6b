"""Several judges as one: models, endpoints or prompt variants whose answers are combined.

Every member judges every item; a verdict's P(yes) is the members' mean (``combine="mean"``)
or the share of members that say yes, P(yes) >= 0.5 (``combine="majority"``; with an even
number of members a tie gives 0.5, which counts as yes at the usual 0.5 line). Each
verdict keeps the members' P(yes) (``members``) and their standard deviation (``spread``),
and the ensemble keeps, per task, how far its members disagreed over the run (in
:meth:`EnsembleJudge.describe`). Scales combine the same way (mean distribution, or the
share of members whose most likely option it is); JSON answers (:meth:`generate`) cannot be
averaged and come from the first member.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar

from ragmeter.judges.base import FieldValue, JudgeError, LLMJudge, Memo, Verdict

COMBINE = ("mean", "majority")

T = TypeVar("T")


def named_after(member: str, failure: JudgeError) -> JudgeError:
    """``failure`` as the ensemble's: of the same kind, with the same attributes (the numbers of
    a :class:`~ragmeter.judges.base.ContextTooLong`, which the windowing reads), its message
    beginning with ``member`` (the member's name). The verdicts the member gave before it
    failed (``given``) are not the ensemble's: left out."""
    named = type(failure).__new__(type(failure))  # (its __init__ may take other arguments than a message)
    named.__dict__.update({key: value for key, value in vars(failure).items() if key != "given"})
    named.args = (f"{member}: {failure}",)
    return named


class EnsembleJudge(LLMJudge):
    """Judges with several members and combines their answers.

    Args:
        members: The judges (each usually with its own disk cache in front).
        combine: ``"mean"`` or ``"majority"`` (module docstring).
    """

    backend = "ensemble"

    def __init__(self, members: Sequence[LLMJudge], combine: str = "mean"):
        if not members:
            raise ValueError("an ensemble needs at least one member")
        if combine not in COMBINE:
            raise ValueError(f"combine must be one of {', '.join(COMBINE)}, got {combine!r}")
        self.members = list(members)
        self.combine = combine
        self.model = " + ".join(member.model for member in self.members)
        self.context_window = min(member.context_window for member in self.members)
        self.evidence_sentences = self.members[0].evidence_sentences
        self._spreads: dict[str, list[float]] = {}  # per task, each combined verdict's spread
        self._splits: dict[str, int] = {}  # per task, verdicts on which the members' decisions differed

    # ---- description -----------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        return {"backend": self.backend, "combine": self.combine, "members": [m.identity() for m in self.members]}

    def verdict_identity(self) -> dict[str, Any]:
        return {"backend": self.backend, "combine": self.combine, "members": [m.verdict_identity() for m in self.members]}

    def describe(self) -> dict[str, Any]:
        members = [m.describe() for m in self.members]
        warnings = [
            f"member {n} ({m.model}): {w}"
            for n, (m, d) in enumerate(zip(self.members, members, strict=True), 1)
            for w in d.get("warnings", [])
        ]
        return {
            "backend": self.backend,
            "model": self.model,
            "combine": self.combine,
            "context_window": self.context_window,
            "members": members,
            "p_yes_spread": self.spread_summary(),
            "warnings": warnings,
        }

    def spread_summary(self) -> dict[str, dict[str, Any]]:
        """Per task: verdicts combined, the mean and largest standard deviation of the
        members' P(yes), and the share of verdicts on which the members' decisions differed."""
        summary = {}
        for task, spreads in self._spreads.items():
            summary[task] = {
                "n": len(spreads),
                "mean": round(statistics.fmean(spreads), 4),
                "max": round(max(spreads), 4),
                "share_split": round(self._splits.get(task, 0) / len(spreads), 4),
            }
        return summary

    def count_tokens(self, text: str) -> int:
        return self.members[0].count_tokens(text)

    # ---- answers ---------------------------------------------------------------------

    async def settle(self, memo: Memo | None = None) -> None:
        for member in self.members:  # one after the other: members often share a server
            await member.settle(memo)

    async def _all(self, calls: Sequence[Awaitable[T]]) -> list[T]:
        """Every member's answer; the first failure, named by its member, after all finished."""
        results = await asyncio.gather(*calls, return_exceptions=True)
        for number, result in enumerate(results, 1):
            if isinstance(result, JudgeError):
                raise named_after(f"ensemble member {number} ({self.members[number - 1].model})", result) from result
            if isinstance(result, BaseException):
                raise result
        return list(results)  # type: ignore[arg-type]

    async def verdicts(self, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
        if not items:
            return []
        answers = await self._all([m.verdicts(task, shared, items, lang) for m in self.members])
        combined = [self._combine_verdicts([answer[i] for answer in answers]) for i in range(len(items))]
        for verdict in combined:
            self._spreads.setdefault(task, []).append(verdict.spread or 0.0)
            if len({p >= 0.5 for p in verdict.members or ()}) > 1:
                self._splits[task] = self._splits.get(task, 0) + 1
        return combined

    def _combine_verdicts(self, verdicts: Sequence[Verdict]) -> Verdict:
        p = [v.p_yes for v in verdicts]
        if self.combine == "mean":
            p_yes = statistics.fmean(p)
        else:
            p_yes = sum(x >= 0.5 for x in p) / len(p)
        decided = p_yes >= 0.5
        agreeing = [v for v in verdicts if (v.p_yes >= 0.5) == decided and v.reason]
        methods = "/".join(sorted({v.method for v in verdicts}))
        return Verdict(
            p_yes=min(max(p_yes, 0.0), 1.0),
            reason=agreeing[0].reason if agreeing else None,
            method=f"ensemble {self.combine} of {methods}",
            evidence=next((v.evidence for v in verdicts if v.evidence), None),
            members=tuple(round(x, 4) for x in p),
            spread=round(statistics.pstdev(p), 4),
        )

    async def scale(self, task: str, shared: Mapping[str, FieldValue], options: Sequence[str], lang: str) -> dict[str, float]:
        answers = await self._all([m.scale(task, shared, options, lang) for m in self.members])
        if self.combine == "mean":
            return {option: statistics.fmean(a.get(option, 0.0) for a in answers) for option in options}
        votes = [max(options, key=lambda option, a=a: a.get(option, 0.0)) for a in answers]  # type: ignore[misc]
        return {option: votes.count(option) / len(votes) for option in options}

    async def generate(self, task: str, fields: Mapping[str, FieldValue], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        return await self.members[0].generate(task, fields, schema, lang)

    async def aclose(self) -> None:
        await asyncio.gather(*(m.aclose() for m in self.members), return_exceptions=True)

"""What every LLM judge offers the metrics, whatever the model behind it.

Metrics never write prompts or parse model output themselves; they ask a judge for:

- :meth:`LLMJudge.verdicts`: yes/no judgements of several items against one shared text,
  as probabilities (a claim against the contexts, each context against a question...).
- :meth:`LLMJudge.scale`: a probability distribution over a few ordered options (a 1-5
  rubric score).
- :meth:`LLMJudge.generate`: a JSON object that follows a schema (questions generated from
  an answer, entities of a text).

Each task is named after a prompt in ``judges/prompts/<lang>.yaml``; the judge renders it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

#: P(yes) of the ``answerable`` verdict at or above which a premise holds the answer to the
#: question. Higher than 0.5: on a passage of the question's topic that lacks the answer, the
#: packaged judge's P(yes) is over 0.5 for 80% of ClapNQ's unanswerable pairs and 78% of RGB zh's
#: negatives. Fitted on RGB zh (the highest line leaving at most 5% of its answerable pairs under
#: it) and reported on ClapNQ, English: as few of its answerable pairs under it as at 0.5 (7.5%),
#: and 48% of its unanswerable pairs over it instead of 80% (``benchmarks/answerable_line.py``,
#: ``benchmarks/results/answerable_line.md``).
ANSWERABLE_LINE = 0.66

#: A field of a prompt: one text, or several (retrieved contexts), fenced one by one; ``None``
#: leaves the field out of the prompt.
FieldValue = str | Sequence[str] | None


@dataclass(frozen=True)
class Verdict:
    """A yes/no judgement.

    Attributes:
        p_yes: Probability that the answer is yes, in [0, 1].
        reason: The judge's short justification, when it gave one.
        method: How ``p_yes`` was obtained: ``"logits"`` (local model's next-token
            probabilities), ``"calibrated logits"`` (the same, recalibrated for a model
            known to lean one way), ``"logprobs"`` (an endpoint's token log-probabilities) or
            ``"text"`` (a yes or no in the reply: 1.0 or 0.0).
        evidence: The part of the premise the judge was shown, when it was not the whole
            premise (see ``LLMJudge.evidence_sentences``).
        members: An ensemble's verdict: each member's P(yes), in the ensemble's order.
        spread: An ensemble's verdict: the standard deviation of the members' P(yes).
    """

    p_yes: float
    reason: str | None = None
    method: str = "text"
    evidence: str | None = None
    members: tuple[float, ...] | None = None
    spread: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.p_yes <= 1.0:
            raise ValueError(f"p_yes must be in [0, 1], got {self.p_yes}")
        if self.members is not None and not isinstance(self.members, tuple):
            object.__setattr__(self, "members", tuple(self.members))  # read back from JSON as a list


class Memo(Protocol):
    """A key-value store of bytes (the disk cache)."""

    def get(self, key: str) -> bytes | None: ...

    def put_many(self, entries: Mapping[str, bytes]) -> None: ...


class JudgeError(Exception):
    """The judge gave no usable answer (after repair and a re-ask, where they apply).

    Attributes:
        given: When a :meth:`LLMJudge.verdicts` call failed on some items after judging
            others, the verdicts given, by the 0-based index of their item in the call: the
            cache keeps them, so that a rerun does not ask (and pay) for them again. Else empty.
    """

    given: Mapping[int, Verdict] = MappingProxyType({})


class MalformedOutput(JudgeError):
    """The judge answered, but not in the shape the task asks for (a missing key, a wrong type)."""


class ReplyCutOff(JudgeError):
    """The judge's reply reached the longest reply allowed before it ended (a list of statements
    as long as a long text)."""


class ContextTooLong(JudgeError):
    """A prompt does not fit the model's context window.

    Attributes:
        tokens: Tokens the prompt needs.
        limit: Tokens the window holds.
    """

    def __init__(self, tokens: int, limit: int):
        self.tokens, self.limit = tokens, limit
        super().__init__(f"prompt needs {tokens} tokens, the judge's context window holds {limit}")


def check_evidence_sentences(value: int) -> None:
    """``evidence_sentences`` must be a whole number, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"evidence_sentences must be a whole number, 0 or more (0: the whole premise), got {value!r}")


class LLMJudge(ABC):
    """A model that judges. Subclasses: the local llama.cpp judge, OpenAI-compatible HTTP.

    Attributes:
        backend: ``"local"`` or ``"openai"``.
        model: The model's name (for caching, pricing and reports).
        context_window: Tokens one prompt may use.
        evidence_sentences: When a statement is checked against a premise (faithfulness,
            context recall, correctness...), how many of the premise's sentences the judge
            sees: the ones most similar to the statement. 0 (the default): the whole
            premise. Small models judge better against a few focused sentences.
        placeholders: Its answers are placeholders, not judgements (``--dry-run``'s stand-in,
            which counts calls): code that checks an answer before its next step lets them
            through, so that every step is counted.
        reply_limit: The longest reply to :meth:`generate`, in tokens, or ``None`` when the
            judge has no one limit. A reply cut off at it is remembered with the limit, so
            that a rerun does not ask again, and a raised limit does.
    """

    backend: str
    model: str
    context_window: int
    evidence_sentences: int = 0
    placeholders: bool = False
    reply_limit: int | None = None

    @abstractmethod
    async def verdicts(self, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
        """Judge each item against the shared fields; one verdict per item, in order.

        Args:
            task: Prompt name (``"supported"``, ``"useful"``, ``"relevant"``...).
            shared: The fields every item is judged against (``{"premise": contexts}``).
            items: The texts to judge one by one (claims, contexts...).
            lang: ``"en"`` or ``"zh"``: the language of the prompt.

        Raises:
            ContextTooLong: The shared fields and an item do not fit the window.
            JudgeError: No usable answer.
        """

    @abstractmethod
    async def scale(self, task: str, shared: Mapping[str, FieldValue], options: Sequence[str], lang: str) -> dict[str, float]:
        """Probability of each option (``"1"`` ... ``"5"``), summing to 1."""

    @abstractmethod
    async def generate(self, task: str, fields: Mapping[str, FieldValue], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        """A JSON object following ``schema`` (a JSON Schema object), from the prompt ``task``."""

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes for this model (exact or estimated)."""

    def describe(self) -> dict[str, Any]:
        """Settings for reports, and what the judge found out while running (the verdict
        mode it settled on, warnings); never includes a secret."""
        return {"backend": self.backend, "model": self.model, "context_window": self.context_window}

    def identity(self) -> dict[str, Any]:
        """The settings that can change an answer, fixed from construction: the key of
        cached answers and of reusable scores. Default: :meth:`describe`."""
        return self.describe()

    async def settle(self, memo: Memo | None = None) -> None:  # noqa: B027  (most judges decide nothing up front)
        """Decide, once, what the judge must decide before its first verdicts (an endpoint
        in ``auto`` verdict mode probes which mode gives verdicts with signal).

        Args:
            memo: Where such a decision is kept across runs (the disk cache), or ``None``.
        """

    def verdict_identity(self) -> dict[str, Any]:
        """The key of cached verdicts: :meth:`identity`, and, once :meth:`settle` decided
        it, how verdicts are asked. Default: :meth:`identity`."""
        return self.identity()

    def note_verdicts(self, task: str, verdicts: Sequence[Verdict]) -> None:  # noqa: B027  (only some judges keep a tally)
        """Take note of verdicts given for ``task`` without asking the judge (answered from
        the cache), so that the judge's tally of its verdicts counts them too."""

    async def aclose(self) -> None:  # noqa: B027  (a judge without resources has nothing to release)
        """Release connections or model memory."""

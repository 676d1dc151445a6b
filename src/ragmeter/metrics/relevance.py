"""Answer relevance judged by an LLM: does the response address the question?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.data.schema import Sample
from ragmeter.judges.base import MalformedOutput
from ragmeter.metrics.base import Score
from ragmeter.metrics.claims import string_list
from ragmeter.metrics.lines import at_line, check_line
from ragmeter.metrics.llm import LLMMetric, blank
from ragmeter.metrics.registry import register

#: Questions the judge writes from the response (RAGAS calls this "strictness").
N_QUESTIONS = 3

QUESTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        "noncommittal": {"type": "boolean"},
    },
    "required": ["questions", "noncommittal"],
}


#: The mean question similarity that ``answer_relevancy`` scores 0.5: the logistic midpoint of
#: relevant and unrelated responses (own answer vs another question's) on ClapNQ and RAGChecker
#: questions together, USE embeddings; each set's own line, checked on the other, raised the
#: balanced accuracy at 0.5 from 0.733 to 0.933 (ClapNQ) and from 0.828 to 0.897 (RAGChecker)
#: (``benchmarks/results/relevancy_line.md``).
RELEVANCE_LINE = 0.28


def _flag(reply: dict, key: str) -> bool:
    value = reply.get(key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if key not in reply:
        raise MalformedOutput(f"the 'questions' answer has no '{key}' flag")
    raise MalformedOutput(f"'{key}' in the 'questions' answer is {value!r}, not true or false")


@register
@dataclass(frozen=True)
class AnswerRelevancy(LLMMetric):
    """How closely 3 questions the judge writes from the response alone match the question:
    their mean cosine similarity to it (clipped at 0), put on a scale where 0.5 is the line
    between relevant and not (:func:`~ragmeter.metrics.lines.at_line`); 0 when the judge finds the response
    noncommittal.

    One generate call writes the questions and the noncommittal flag (evasive, vague or a
    refusal); the embedder compares them with the user's question. A response that answers
    the question lets the judge recover it; an off-topic or partial answer does not. The
    details keep the similarities and their mean (``mean_similarity``, RAGAS's score).

    Parameters:
        line: The mean similarity that scores 0.5 (in (0, 1); 0.5 scores the mean itself).
            The default, :data:`RELEVANCE_LINE`, was fitted with the packaged embedder on two
            labelled sets, each line checked on the other set (``benchmarks/relevancy_line.py``).
    """

    name = "answer_relevancy"
    family = "relevance"
    required = ("user_input", "response")

    line: float = RELEVANCE_LINE

    def __post_init__(self) -> None:
        check_line(self.name, self.line)
        super().__post_init__()

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        if blank(sample.user_input):
            return Score.unscored("question is empty")
        if blank(sample.response):
            return Score.unscored("response is empty")
        reply = await judges.require_llm().generate("questions", {"response": sample.response}, QUESTIONS_SCHEMA, lang)
        questions = string_list(reply, "questions", "questions")
        noncommittal = _flag(reply, "noncommittal")
        details: dict[str, Any] = {"questions": questions[:N_QUESTIONS], "noncommittal": noncommittal}
        if len(questions) > N_QUESTIONS:
            details["extra_questions_ignored"] = questions[N_QUESTIONS:]
            questions = questions[:N_QUESTIONS]
        if not questions:
            if noncommittal:
                return Score(0.0, "the judge finds the response noncommittal (evasive, vague or a refusal)", details=details)
            return Score.unscored("the judge wrote no question from the response", details, failed=True)
        vectors = np.asarray(await judges.embedder.embed([sample.user_input, *questions]), dtype=np.float64)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0
        vectors = vectors / norms[:, None]
        similarities = np.clip(vectors[1:] @ vectors[0], 0.0, 1.0)
        details["similarities"] = [round(float(s), 4) for s in similarities]
        mean = float(similarities.mean())
        details["mean_similarity"] = round(mean, 4)
        if noncommittal:
            return Score(
                0.0,
                f"the judge finds the response noncommittal (evasive, vague or a refusal); question similarity would be {mean:.2f}",
                details=details,
            )
        best = int(similarities.argmax())
        return Score(
            at_line(mean, self.line),
            f"mean similarity {mean:.2f} of {len(questions)} questions written from the response to the question "
            f"({'at or above' if mean >= self.line else 'below'} the line {self.line:.2f} between relevant and not); "
            f"closest: {questions[best][:80]}",
            details=details,
        )

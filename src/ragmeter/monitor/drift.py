"""Query drift: are users asking about other things than before?

The questions of a reference window and of a recent window are embedded (the packaged
multilingual encoder) and compared with a nearest-neighbour scan test (:func:`scan_test`): a new
topic shows as recent questions whose nearest neighbours are mostly recent too. Its p-value comes
from random relabellings of the pooled questions, so it holds whatever the embedding geometry.
With an alarm, the groups of recent questions behind it are reported (:func:`grown_topics`) with
their share of each window, the significance of their growth (Fisher's exact test,
Holm-corrected) and example questions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import fisher_exact

#: Default significance level of the drift alarm.
ALPHA = 0.01


@dataclass
class GrownTopic:
    """A group of similar questions more frequent in the recent window.

    Attributes:
        reference_share: Its share of the reference questions.
        current_share: Its share of the recent questions.
        p_value: Holm-corrected p-value of the growth (Fisher's exact test, one-sided).
        examples: Recent questions of the topic, the most central first.
    """

    reference_share: float
    current_share: float
    p_value: float
    examples: list[str]


@dataclass
class QueryDrift:
    """The outcome of :func:`query_drift`.

    Attributes:
        n_reference: Questions in the reference window.
        n_current: Questions in the recent window.
        statistic: The scan statistic (:func:`scan_test`).
        p_value: Share of random relabellings with a statistic at least as large.
        alpha: The significance level of the alarm.
        drift: ``p_value < alpha``.
        grown_topics: Topics whose share grew significantly, largest growth first.
    """

    n_reference: int
    n_current: int
    statistic: float
    p_value: float
    alpha: float
    drift: bool
    grown_topics: list[GrownTopic]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def scan_test(
    reference: np.ndarray, current: np.ndarray, *, neighbours: int = 10, top: float = 0.05, permutations: int = 500, seed: int = 0
) -> tuple[float, float]:
    """A nearest-neighbour scan test: do some recent questions crowd together where reference
    questions are rare (a new topic)?

    Each recent question gets the share of its ``neighbours`` nearest pooled questions (cosine)
    that are recent; the statistic is the sum of the largest ``top`` share of those values. Its
    p-value is the share of random relabellings of the pooled questions that give a statistic at
    least as large (exact when both windows come from one distribution).

    Args:
        reference: One L2-normalised row per reference question.
        current: One row per recent question.
        neighbours: Neighbours looked at around each question.
        top: Share of the recent questions whose neighbourhoods are summed.
        permutations: Random relabellings.
        seed: Seed of the relabellings.

    Returns:
        The statistic and its p-value.
    """
    pooled = np.vstack([reference, current]).astype(np.float64)
    similarity = pooled @ pooled.T
    np.fill_diagonal(similarity, -np.inf)
    k = min(neighbours, len(pooled) - 1)
    nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    labels = np.zeros(len(pooled), dtype=bool)
    labels[len(reference) :] = True
    counted = max(1, int(top * len(current)))

    def statistic(is_current: np.ndarray) -> float:
        shares = is_current[nearest].sum(axis=1)[is_current]
        return float(np.sort(shares)[-counted:].sum()) / k

    observed = statistic(labels)
    generator = np.random.default_rng(seed)
    exceed = sum(statistic(generator.permutation(labels)) >= observed for _ in range(permutations))
    return observed, (exceed + 1) / (permutations + 1)


def grown_topics(
    reference: np.ndarray, current: np.ndarray, questions: Sequence[str], *, neighbours: int = 10, limit: int = 3
) -> list[GrownTopic]:
    """The topics behind a scan alarm: groups of recent questions whose nearest neighbours are
    mostly recent, each with its share of both windows and the significance of its growth.

    A topic starts at the recent question with the most recent neighbours (at least 80%) and
    takes in those neighbours; its extent is the least similarity of a member to the members'
    centroid, and its shares count the questions of each window at least that similar.

    Args:
        reference: L2-normalised vectors of the reference questions.
        current: Vectors of the recent questions.
        questions: The recent questions' texts (same order as ``current``).
        neighbours: Neighbours looked at around each question.
        limit: Most topics reported.
    """
    pooled = np.vstack([reference, current]).astype(np.float64)
    similarity = pooled @ pooled.T
    np.fill_diagonal(similarity, -np.inf)
    k = min(neighbours, len(pooled) - 1)
    nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    offset = len(reference)
    recent_share = (nearest[offset:] >= offset).mean(axis=1)
    taken: set[int] = set()
    found: list[GrownTopic] = []
    for seed in np.argsort(-recent_share, kind="stable"):
        if recent_share[seed] < 0.8 or len(found) == limit:
            break
        members = sorted({int(seed)} | {int(n) - offset for n in nearest[offset + seed] if n >= offset} - taken)
        if len(members) < 3:
            continue
        centroid = current[members].mean(axis=0)
        centroid /= np.linalg.norm(centroid) or 1.0
        extent = float((current[members] @ centroid).min())
        inside_reference = int((reference @ centroid >= extent).sum())
        inside_current = np.flatnonzero(current @ centroid >= extent)
        taken |= set(inside_current.tolist())
        table = [[len(inside_current), len(current) - len(inside_current)], [inside_reference, len(reference) - inside_reference]]
        _, p = fisher_exact(table, alternative="greater")
        examples = [questions[i] for i in sorted(members, key=lambda i: -float(current[i] @ centroid))[:3]]
        found.append(GrownTopic(inside_reference / len(reference), len(inside_current) / len(current), float(p), examples))
    running = 0.0
    for position, topic in enumerate(sorted(found, key=lambda t: t.p_value)):  # Holm's step-down
        running = max(running, min(1.0, topic.p_value * (len(found) - position)))
        topic.p_value = running
    grown = [t for t in found if t.p_value < 0.05 and t.current_share > t.reference_share]
    return sorted(grown, key=lambda t: t.current_share - t.reference_share, reverse=True)


def query_drift(
    reference: Sequence[str],
    current: Sequence[str],
    encode: Callable[[list[str]], np.ndarray],
    *,
    alpha: float = ALPHA,
    permutations: int = 500,
    seed: int = 0,
) -> QueryDrift:
    """Test whether the recent questions come from another distribution than the reference ones.

    Args:
        reference: Questions of the reference window (at least 10).
        current: Questions of the recent window (at least 10).
        encode: Turns texts into L2-normalised vectors (e.g. ``USEEncoder().encode``).
        alpha: Significance level of the alarm.
        permutations: Random relabellings for the p-value.
        seed: Seed of the relabellings.

    Raises:
        ValueError: A window has fewer than 10 questions.
    """
    _check_sizes(len(reference), len(current))
    vectors = encode([*reference, *current])
    return vector_drift(vectors[: len(reference)], vectors[len(reference) :], current, alpha=alpha, permutations=permutations, seed=seed)


def vector_drift(
    reference: np.ndarray,
    current: np.ndarray,
    questions: Sequence[str],
    *,
    alpha: float = ALPHA,
    permutations: int = 500,
    seed: int = 0,
) -> QueryDrift:
    """:func:`query_drift` on questions embedded already (stored vectors).

    Args:
        reference: L2-normalised vectors of the reference window's questions (at least 10 rows).
        current: Vectors of the recent window's questions (at least 10 rows).
        questions: The recent questions' texts (same order as ``current``), for the examples.
        alpha: Significance level of the alarm.
        permutations: Random relabellings for the p-value.
        seed: Seed of the relabellings.

    Raises:
        ValueError: A window has fewer than 10 questions, or ``questions`` does not match ``current``.
    """
    _check_sizes(len(reference), len(current))
    if len(questions) != len(current):
        raise ValueError(f"{len(current)} recent vectors but {len(questions)} recent questions")
    statistic, p_value = scan_test(reference, current, permutations=permutations, seed=seed)
    grown = grown_topics(reference, current, list(questions)) if p_value < alpha else []
    return QueryDrift(len(reference), len(current), statistic, p_value, alpha, p_value < alpha, grown)


def _check_sizes(reference: int, current: int) -> None:
    if reference < 10 or current < 10:
        raise ValueError(f"query drift needs at least 10 questions per window; got {reference} reference and {current} recent")

"""Minimal-edit faithfulness pairs, SummEdits-style: the same passage, two claims that differ
in one value.

A positive claim states a value the passage gives; its negative twin is the same claim with
that value replaced by a wrong one of the same kind, which the passage never states:

- a **number** (``12人``, ``6.4%``, ``472.58``) gets one digit changed, its unit kept;
- a **date** (``1月3日``, ``June 19, 2009``, a year) is swapped for a date of the same shape
  from another row of the set;
- any other answer (a name, a place, a title: ``text`` in Chinese; in English a run of
  capitalised words, swapped for a run of the same length) is swapped for another row's of
  the same kind, drawn among the rows whose questions are worded most like this one's, so
  that "who directed" gets another director, not a city.

Everything is deterministic given the seed: each row draws with its own generator
(``f"{seed}-{row id}"``), so a row's pair does not depend on which other rows are drawn, and
nothing is fitted. Rows where no such edit exists (the value is not in the passage, or no
wrong value of its kind is absent from the passage) are skipped and counted.

Two constructions share these rules:

- :func:`rgb_pairs` (Chinese, RGB): the claim is built from the query and its gold answer
  (:func:`zh_claim`), judged against a positive passage that contains the answer;
- :func:`clapnq_pairs` (English, ClapNQ answerable rows): the claim is the human reference
  answer, judged against the gold passage; one number, date or name of it that the passage
  states is edited.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.data.text import tokenize

#: Draws of a changed digit before a number is given up as uneditable.
NUMBER_DRAWS = 20
#: A swapped value is drawn among this many candidates whose questions are worded most like the row's.
NEAREST = 5

_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
_ZH_DATE = re.compile(r"(?:(\d{4})年)?(?:(\d{1,2})月)?(?:(\d{1,2})日)?")
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_EN_DATE = re.compile(rf"\b(?:{_MONTH} \d{{1,2}}, \d{{4}}|\d{{1,2}} {_MONTH} \d{{4}}|{_MONTH} \d{{4}}|1\d{{3}}|20\d{{2}})\b")
_EN_NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w,])|(?<![\w.,])\d+(?:\.\d+)?(?![\w,]|\.\d)")
_EN_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b")
_LOWER_WORD = re.compile(r"\b[a-z]+\b")
_MID_SENTENCE = re.compile(r"[\w,;:)%]\s+$")


@dataclass(frozen=True)
class Edit:
    """One minimal edit: ``right`` (a value the passage states) becomes ``wrong``."""

    kind: str
    right: str
    wrong: str


#: A row's positive sample, its edited twin and the edit; or why the row has none.
Built = tuple[dict[str, Any], dict[str, Any], Edit] | str


@dataclass
class Pairs:
    """The samples and labelled units of an edited set, and what was left out.

    Attributes:
        samples: ``{"id", "user_input", "retrieved_contexts", "response", "metadata"}``, the
            positive of a row followed by its negative (so a judge reads the passage once for
            both); ``metadata`` holds the kind of value edited and the value the claim states.
        units: ``{"sample", "label", "group", "part"}``: label 1 for the positive, 0 for the
            edited claim; ``group`` is the row, shared by its two claims.
        edited: Rows with an edit in the whole file, by kind of value edited.
        skipped: Rows of the whole file without one, by reason.
    """

    samples: list[dict[str, Any]]
    units: list[dict[str, Any]]
    edited: Counter[str]
    skipped: Counter[str]

    def counts_text(self) -> str:
        """One line: how many rows have an edit, of which kinds, and why the others were skipped."""
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(self.edited.items()))
        reasons = "; ".join(f"{reason}: {n}" for reason, n in sorted(self.skipped.items()))
        total = sum(self.edited.values()) + sum(self.skipped.values())
        return f"{sum(self.edited.values())} of {total} rows edited ({kinds}); skipped {sum(self.skipped.values())} ({reasons or 'none'})"


def change_digit(number: str, rng: random.Random) -> str:
    """``number`` (digits with ``.`` or ``,`` separators) with one digit, drawn by ``rng``,
    replaced by another digit; a leading digit never becomes 0."""
    positions = [n for n, ch in enumerate(number) if ch.isdigit()]
    position = rng.choice(positions)
    choices = [d for d in "0123456789" if d != number[position] and not (d == "0" and position == 0 and len(positions) > 1)]
    return number[:position] + rng.choice(choices) + number[position + 1 :]


def changed_number(value: str, forbidden: str, rng: random.Random) -> str | None:
    """``value`` with one digit of its first number changed so that neither the new number nor
    the new value occurs in ``forbidden`` (the passage and the claim); ``None`` when
    :data:`NUMBER_DRAWS` draws find none."""
    match = _DIGITS.search(value)
    if match is None:
        return None
    for _ in range(NUMBER_DRAWS):
        number = change_digit(match.group(0), rng)
        wrong = value[: match.start()] + number + value[match.end() :]
        if number not in forbidden and wrong not in forbidden:
            return wrong
    return None


def swapped(
    value: str, question: str, pool: Sequence[tuple[str, str]], forbidden: Iterable[str], text: str, rng: random.Random
) -> str | None:
    """Another question's value of the same kind as ``value``: drawn by ``rng`` among the
    :data:`NEAREST` candidates of ``pool`` whose questions share the most words with
    ``question`` (so a question asking "who" gets another "who" question's name), leaving
    out ``value``, ``forbidden`` and anything ``text`` (the passage and the claim) contains.

    Args:
        value: The value to replace.
        question: The question the claim answers.
        pool: ``(value, question)`` of every row, values of the same kind as ``value``.
        forbidden: Values that would not be wrong (the question's other accepted answers).
        text: Text the wrong value must not occur in.
        rng: The row's generator.

    Returns:
        The wrong value, or ``None`` when the pool has no candidate.
    """
    excluded = {value, *forbidden}
    words = set(tokenize(question))
    ranked: dict[str, float] = {}
    for candidate, other in pool:
        if candidate in excluded or candidate in text:
            continue
        theirs = set(tokenize(other))
        overlap = len(words & theirs) / max(1, len(words | theirs))
        ranked[candidate] = max(overlap, ranked.get(candidate, 0.0))
    nearest = sorted(ranked, key=lambda v: (-ranked[v], v))[:NEAREST]
    return rng.choice(nearest) if nearest else None


# Chinese (RGB)


def zh_claim(query: str, answer: str) -> str:
    """The claim that ``answer`` answers ``query``: ``"<query>：<answer>。"`` with the query's
    own end punctuation dropped, one sentence."""
    return f"{query.strip().rstrip('？?。.！! ')}：{answer}。"


def zh_kind(answer: str) -> str:
    """The kind of a Chinese answer: ``date`` with its shape (``date 年月日`` for
    ``2021年11月23日``, ``date 月日`` for ``1月3日``), ``number`` (any other answer with a
    digit) or ``text``."""
    date = _ZH_DATE.fullmatch(answer)
    if date and any(date.groups()):
        return "date " + "".join(unit for unit, part in zip("年月日", date.groups(), strict=True) if part)
    return "number" if any(ch.isdigit() for ch in answer) else "text"


def spellings(answer: Any) -> list[str]:
    """The accepted spellings of one RGB answer entry: a string, or a list of them (nested lists flattened)."""
    if isinstance(answer, str):
        return [answer]
    return [s for entry in answer for s in spellings(entry)]


def rgb_pairs(rows: Sequence[dict[str, Any]], order: Sequence[dict[str, Any]], limit: int | None, seed: int) -> Pairs:
    """Minimal-edit pairs of RGB Chinese questions.

    A row's claim is :func:`zh_claim` of its query and the first answer entry's first
    spelling that one of its positive passages contains; the passage is drawn among those.
    The negative claim states a wrong answer of the same :func:`zh_kind`: a number with a
    digit changed, or another row's answer (none of this row's accepted answers, absent
    from the passage).

    Args:
        rows: Every row of the file (``id``, ``query``, ``answer``, ``positive``): the pool
            of other answers, and what the counts cover.
        order: The rows in the order to draw them (the seeded shuffle).
        limit: Rows with an edit to keep, in ``order``; ``None`` keeps all.
        seed: Seed of the per-row draws.
    """
    pools: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in rows:
        for entry in row["answer"]:
            for spelling in spellings(entry):
                pools[zh_kind(spelling)].append((spelling, row["query"]))
    built = {row["id"]: _rgb_pair(row, pools, seed) for row in rows}
    return _collect(built, [row["id"] for row in order], limit, "rgbe")


def _rgb_pair(row: dict[str, Any], pools: dict[str, list[tuple[str, str]]], seed: int) -> Built:
    """The positive and negative sample of one RGB row and the kind edited, or why there are none."""
    draw = random.Random(f"{seed}-{row['id']}")
    accepted = [s for entry in row["answer"] for s in spellings(entry)]
    first = spellings(row["answer"][0])
    answer = next((s for s in first if any(s in p for p in row["positive"])), None)
    if answer is None:
        return "no positive passage contains the answer"
    passage = draw.choice([p for p in row["positive"] if answer in p])
    kind = zh_kind(answer)
    claim = zh_claim(row["query"], answer)
    if kind == "number":
        wrong = changed_number(answer, passage + claim + "".join(accepted), draw)
    else:
        wrong = swapped(answer, row["query"], pools[kind], accepted, passage + claim, draw)
    if wrong is None:
        return f"no wrong {kind} absent from the passage"
    base = {"user_input": row["query"], "retrieved_contexts": [passage]}
    return {**base, "response": claim}, {**base, "response": zh_claim(row["query"], wrong)}, Edit(kind, answer, wrong)


# English (ClapNQ)


def en_values(text: str, common: frozenset[str]) -> list[tuple[str, str]]:
    """The editable values of an English text, in order, as ``(kind, value)``: dates (``date
    month day year``, ``date month year``, ``date year``), other numbers (``number``) and names
    (``name N``: a run of N capitalised words, 3 standing for 3 or more). A value is listed once.

    Args:
        text: The text.
        common: Words that are ordinary words, not names (lower-case words of the set's
            passages): a capitalised one that starts a sentence is dropped from its run, and
            one alone is not a name.
    """
    found: list[tuple[int, str, str]] = []
    taken: list[tuple[int, int]] = []
    for match in _EN_DATE.finditer(text):
        found.append((match.start(), _en_date_kind(match.group(0)), match.group(0)))
        taken.append(match.span())
    for match in _EN_NUMBER.finditer(text):
        if not any(a <= match.start() < b for a, b in taken):
            found.append((match.start(), "number", match.group(0)))
    for start, name in _en_names(text, common):
        if not any(a <= start < b for a, b in taken):
            found.append((start, f"name {min(len(name.split(' ')), 3)}", name))
    seen: set[str] = set()
    values = []
    for _, kind, value in sorted(found):
        if value not in seen:
            seen.add(value)
            values.append((kind, value))
    return values


def _en_names(text: str, common: frozenset[str]) -> list[tuple[int, str]]:
    """Runs of capitalised words that look like names, with where they start (see :func:`en_values`)."""
    names = []
    for match in _EN_NAME.finditer(text):
        words, start = match.group(0).split(" "), match.start()
        if _MID_SENTENCE.search(text[:start]) is None and words[0].lower() in common:
            start += len(words[0]) + 1
            words = words[1:]
        if not words or any(re.fullmatch(_MONTH, word) for word in words) or (len(words) == 1 and words[0].lower() in common):
            continue
        names.append((start, " ".join(words)))
    return names


def _en_date_kind(date: str) -> str:
    if re.fullmatch(r"\d{4}", date):
        return "date year"
    return "date month day year" if re.search(r"\d{1,2}(?:,| )", date) and len(re.findall(r"\d+", date)) == 2 else "date month year"


def clapnq_pairs(rows: Sequence[dict[str, Any]], order: Sequence[dict[str, Any]], limit: int | None, seed: int) -> Pairs:
    """Minimal-edit pairs of answerable ClapNQ questions.

    A row's positive claim is its human reference answer, judged against the gold passage
    (names: :func:`en_values` with the lower-case words of all the passages as ordinary words);
    the negative is the same answer with one value that the passage states (drawn among
    its :func:`en_values`, numbers and dates before names) replaced everywhere in the
    answer: a number with a digit changed, a date or name by another row's of the same
    kind that neither the passage nor the answer contains.

    Args:
        rows: Every answerable row (``id``, ``question``, ``passage``, ``reference_answer``):
            the pool of other values, and what the counts cover.
        order: The rows in the order to draw them (the seeded shuffle).
        limit: Rows with an edit to keep, in ``order``; ``None`` keeps all.
        seed: Seed of the per-row draws.
    """
    common = frozenset(word for row in rows for word in _LOWER_WORD.findall(row["passage"]))
    pools: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in rows:
        for kind, value in en_values(row["reference_answer"], common):
            pools[kind].append((value, row["question"]))
    built = {row["id"]: _clapnq_pair(row, pools, common, seed) for row in rows}
    return _collect(built, [row["id"] for row in order], limit, "cqe")


def _clapnq_pair(row: dict[str, Any], pools: dict[str, list[tuple[str, str]]], common: frozenset[str], seed: int) -> Built:
    """The positive and negative sample of one ClapNQ row and the kind edited, or why there are none."""
    draw = random.Random(f"{seed}-{row['id']}")
    answer, passage = row["reference_answer"], row["passage"]
    stated = [(kind, value) for kind, value in en_values(answer, common) if re.search(rf"(?<!\w){re.escape(value)}(?!\w)", passage)]
    if not stated:
        return "no number, date or name of the answer is in the passage"
    draw.shuffle(stated)
    # Numbers and dates first (as most RGB answers are), names when the answer has neither.
    stated.sort(key=lambda kind_value: kind_value[0].startswith("name"))
    for kind, value in stated:
        if kind == "number":
            wrong = changed_number(value, passage + answer, draw)
        else:
            wrong = swapped(value, row["question"], pools[kind], (), passage + answer, draw)
        if wrong is not None:
            base = {"user_input": row["question"], "retrieved_contexts": [passage]}
            edited = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", wrong.replace("\\", "\\\\"), answer)
            return {**base, "response": answer}, {**base, "response": edited}, Edit(kind, value, wrong)
    return "no wrong value of the same kind absent from the passage"


def _collect(built: dict[Any, Built], order: Sequence[Any], limit: int | None, prefix: str) -> Pairs:
    """Pairs of the rows in ``order`` that have one, up to ``limit``, with the counts of the whole file."""
    edited: Counter[str] = Counter(b[2].kind.split(" ")[0] for b in built.values() if not isinstance(b, str))
    skipped: Counter[str] = Counter(b for b in built.values() if isinstance(b, str))
    samples: list[dict[str, Any]] = []
    units: list[dict[str, Any]] = []
    for row_id in order:
        pair = built[row_id]
        if isinstance(pair, str):
            continue
        if limit is not None and len(units) >= 2 * limit:
            break
        positive, negative, edit = pair
        for suffix, sample, label, value in (("right", positive, 1, edit.right), ("edited", negative, 0, edit.wrong)):
            sample_id = f"{prefix}-{row_id}-{suffix}"
            samples.append({"id": sample_id, **sample, "metadata": {"edit_kind": edit.kind, "value": value}})
            units.append({"sample": sample_id, "label": label, "group": f"{prefix}-{row_id}", "part": None})
    return Pairs(samples, units, edited, skipped)

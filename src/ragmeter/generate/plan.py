"""What to generate: the mix of question types and styles, and one slot per question.

A *slot* is one question to write: its type, its query style, the persona asking (for the
persona style), and the chunks it is written from. The plan is a pure function of the
knowledge graph, the size, the mixes and the seed, so a re-run plans the same slots and the
journal can tell which are already done.

Questions are written from chunks of sentences: a chunk that reads as a list or a flattened
table (:func:`reads_as_list`: ClapNQ's race results, filmographies and infoboxes) gave
questions that make no sense (a season's "most laps led" answered by a race's name), and a
table's near-copies were each other's strongest links, so multi-hop and comparison slots
took them first (5 of 18 ClapNQ slots of one run, ``benchmarks/results/generate_review.md``).

Single-chunk types (single fact, reasoning, conditional, unanswerable) take the chunks in a
seeded random order, cycling when there are more questions than chunks. Two-chunk types
(multi-hop, comparison) take the graph's links, strongest first, each link once before any
is reused, and a reused link in the other order (a greedy judge given the same prompt writes
the same question again); a multi-hop slot skips the links whose chunks share no bridge
phrase, unless none does. With no link, such a slot has no chunks and is reported as not
generated.

:func:`top_up` plans the extra slots of a top-up round (questions the filter rejected are
replaced): the same rules, with a seed derived from the round so other chunks come first,
numbered after the slots already planned; chunks (and links) no earlier slot used come first.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import yaml

from ragmeter.data.text import HAN
from ragmeter.generate.bridges import bridged
from ragmeter.generate.graph import KnowledgeGraph, Link

#: Question types: what the question needs from the knowledge base.
TYPES = ("single_fact", "reasoning", "multi_hop", "comparison", "conditional", "unanswerable")
#: Query styles: how the question is asked.
STYLES = ("plain", "persona", "colloquial", "web_search", "misspelled")
TWO_CHUNK_TYPES = frozenset({"multi_hop", "comparison"})
DEFAULT_MIX = {"single_fact": 0.3, "reasoning": 0.15, "multi_hop": 0.2, "comparison": 0.1, "conditional": 0.1, "unanswerable": 0.15}
DEFAULT_STYLES = {"plain": 0.5, "persona": 0.15, "colloquial": 0.15, "web_search": 0.1, "misspelled": 0.1}
#: Difficulty written into each sample's metadata, by type.
DIFFICULTY = {
    "single_fact": "easy",
    "reasoning": "medium",
    "conditional": "medium",
    "unanswerable": "medium",
    "multi_hop": "hard",
    "comparison": "hard",
}


_HAN_CHARS = re.compile(f"[{HAN}]")
#: Latin words and numbers, as :func:`reads_as_list` counts them.
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’.-]*|\d+")
#: Verbs of almost every English sentence; a text of many words without one has no sentence.
_COMMON_VERBS = frozenset(
    "is are was were be been being has have had do does did will would can could may might must should".split()  # noqa: SIM905
)
#: Least words of a text that :func:`reads_as_list` judges.
LIST_MIN_WORDS = 20
#: Share of a text's words that are capitalised or numbers from which, with no common verb, it
#: reads as a list (set on the ClapNQ passages' chunks: flattened tables and infoboxes 0.62 to
#: 1.00; chunks of sentences at 0.20 in the median, 99% of them under 0.54; see
#: ``benchmarks/results/generate_review.md``).
LIST_CAPITALISED_SHARE = 0.6


def reads_as_list(text: str) -> bool:
    """``text`` is a list or a table flattened into a line ("No . Race Pole position Winning
    driver Manufacturer 001 ! Spring Clash Rivers , Ann Ann Rivers Ford ..."), not sentences:
    of its Latin words and numbers (at least :data:`LIST_MIN_WORDS`), at least
    :data:`LIST_CAPITALISED_SHARE` are capitalised or numbers, and none is a common verb
    ("is", "was", "has"...). Text with Chinese characters is never judged so (no such verbs
    to find)."""
    if _HAN_CHARS.search(text):
        return False
    words = _LATIN_WORD.findall(text)
    if len(words) < LIST_MIN_WORDS or any(w in _COMMON_VERBS for w in words):
        return False
    return sum(1 for w in words if w[0].isupper() or w[0].isdigit()) >= LIST_CAPITALISED_SHARE * len(words)


@dataclass(frozen=True)
class Slot:
    """One question to generate.

    Attributes:
        id: The sample id it will get (``q0001``...).
        type: One of :data:`TYPES`.
        style: One of :data:`STYLES`.
        persona: Who asks, for the ``persona`` style; else ``None``.
        chunks: Indexes of its chunks in the graph (two for multi-hop and comparison;
            none when no link was available).
        lang: The chunks' language.
        round: 0 for the slots asked for, ``n`` for those of the ``n``-th top-up round.
    """

    id: str
    type: str
    style: str
    persona: str | None
    chunks: tuple[int, ...]
    lang: str
    round: int = 0

    def fingerprint(self, graph: KnowledgeGraph, settings: Mapping[str, object]) -> str:
        """A hash of what the slot's question depends on: its spec, its chunks' texts and
        ``settings`` (the judge)."""
        texts = [graph.chunks[i].text for i in self.chunks]
        payload = json.dumps([self.type, self.style, self.persona, texts, dict(settings)], sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:24]


def parse_mix(text: str | None, names: Sequence[str], default: Mapping[str, float], option: str) -> dict[str, float]:
    """Weights from ``"a=0.5,b=0.3"`` (any positive numbers, normalised to sum to 1).

    Args:
        text: The option's value; ``None`` or empty for ``default``.
        names: The allowed names.
        default: The weights when ``text`` is not given.
        option: The option's name, for error messages (``--mix``).

    Raises:
        ValueError: An unknown name, a value that is not a number, or no positive weight.
    """
    if not text or not text.strip():
        return dict(default)
    weights: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in names:
            raise ValueError(f"{option}: unknown name '{name}'; known: {', '.join(names)}")
        try:
            weight = float(value) if value.strip() else 1.0
        except ValueError:
            raise ValueError(f"{option}: '{part}': the weight must be a number, as in {name}=0.3") from None
        if not weight >= 0:
            raise ValueError(f"{option}: '{part}': the weight must be 0 or more")
        weights[name] = weight
    total = sum(weights.values())
    if total <= 0:
        raise ValueError(f"{option}: give at least one positive weight, as in {names[0]}=1")
    return {name: weight / total for name, weight in weights.items() if weight > 0}


def allocate(size: int, weights: Mapping[str, float]) -> dict[str, int]:
    """``size`` split in proportion to ``weights`` (positive numbers, any sum) in whole numbers
    (largest remainder), in the weights' order.

    Raises:
        ValueError: No weight is positive.
    """
    total = sum(w for w in weights.values() if w > 0)
    if not total > 0:
        raise ValueError("give at least one positive weight")
    exact = {name: size * max(weight, 0) / total for name, weight in weights.items()}
    counts = {name: int(value) for name, value in exact.items()}
    by_remainder = sorted(exact, key=lambda name: (-(exact[name] - counts[name]), list(weights).index(name)))
    for name in by_remainder[: size - sum(counts.values())]:
        counts[name] += 1
    return counts


@lru_cache(maxsize=2)
def personas(lang: str) -> tuple[str, ...]:
    """The packaged personas of ``lang`` (``resources/personas.yaml``)."""
    data = yaml.safe_load(resources.files("ragmeter").joinpath("resources").joinpath("personas.yaml").read_text(encoding="utf-8"))
    return tuple(data[lang])


def plan(
    graph: KnowledgeGraph,
    size: int,
    mix: Mapping[str, float],
    styles: Mapping[str, float],
    seed: int = 0,
    used: Collection[tuple[int, ...]] = (),
) -> list[Slot]:
    """The slots of a test set of ``size`` questions.

    Args:
        graph: The knowledge graph.
        size: Questions asked for.
        mix: Weight of each question type.
        styles: Weight of each query style.
        seed: Seed of every random choice (chunk order, styles, personas).
        used: Chunks (one index, or a linked pair) of earlier slots: taken after the others.
    """
    rng = random.Random(seed)
    types = [t for t, n in allocate(size, mix).items() for _ in range(n)]
    chosen_styles = [s for s, n in allocate(size, styles).items() for _ in range(n)]
    rng.shuffle(types)
    rng.shuffle(chosen_styles)
    singles = seed_chunks(graph)
    rng.shuffle(singles)
    used = set(used)
    singles.sort(key=lambda i: (i,) in used)
    seeds = set(singles)
    links = [link for link in graph.links if link.a in seeds and link.b in seeds]
    links.sort(key=lambda link: (link.a, link.b) in used or (link.b, link.a) in used)
    taken = {"single": 0, "link": 0}
    slots = []
    for number, (kind, style) in enumerate(zip(types, chosen_styles, strict=True), start=1):
        if kind in TWO_CHUNK_TYPES:
            chunks: tuple[int, ...] = ()
            if links:
                chunks, taken["link"] = _next_link(graph, links, taken["link"], used, kind == "multi_hop")
                used.add(chunks)  # taken again in this plan, the link goes the other way round
        else:
            chunks, taken["single"] = (singles[taken["single"] % len(singles)],), taken["single"] + 1
        lang = graph.chunks[chunks[0]].lang if chunks else "en"
        persona = rng.choice(personas(lang)) if style == "persona" else None
        slots.append(Slot(f"q{number:04d}", kind, style, persona, chunks, lang))
    return slots


def seed_chunks(graph: KnowledgeGraph) -> list[int]:
    """Indexes of the chunks a question may be written from: those that do not read as a
    list or a flattened table (:func:`reads_as_list`), or all of them when every chunk does.
    The others stay in the knowledge base (an unanswerable question's answer is still looked
    for in them)."""
    prose = [i for i, chunk in enumerate(graph.chunks) if not reads_as_list(chunk.text)]
    return prose or list(range(len(graph.chunks)))


def _next_link(
    graph: KnowledgeGraph, links: Sequence[Link], start: int, used: Collection[tuple[int, ...]], bridging: bool
) -> tuple[tuple[int, int], int]:
    """The chunks of the next link to take from position ``start`` of ``links`` (cycling), in
    their order (:func:`_ordered`), and the position after it. ``bridging`` (a multi-hop
    slot): the next link whose chunks share a bridge phrase
    (:func:`~ragmeter.generate.bridges.bridged`), the one at ``start`` when none does. A link
    without one gave no question (4 of the 20 slots of a run on the example knowledge base,
    ``benchmarks/results/generate_multi_hop.md``), and its slot was lost."""
    for step in range(len(links) if bridging else 1):
        link = links[(start + step) % len(links)]
        chunks = _ordered(link.a, link.b, used)
        if not bridging or bridged(chunks, graph.chunks):
            return chunks, start + step + 1
    link = links[start % len(links)]
    return _ordered(link.a, link.b, used), start + 1


def _ordered(a: int, b: int, used: Collection[tuple[int, ...]]) -> tuple[int, int]:
    """The chunks of link ``a``-``b`` in the order no earlier slot took them, if one is left
    (a link taken again is written the other way round: for a multi-hop question the other
    chunk is described)."""
    return (b, a) if (a, b) in used and (b, a) not in used else (a, b)


def top_up(
    graph: KnowledgeGraph, missing: Mapping[str, int], styles: Mapping[str, float], seed: int, earlier: Sequence[Slot]
) -> list[Slot]:
    """The slots of the next top-up round: ``missing[type]`` more questions of each type.

    A slot that repeats an earlier one (type, style, persona and chunks, in that order) is
    left out: the judge writes deterministically, so it would write and reject the same
    question again (a knowledge base with one link gave the same comparison in rounds 0 and 2).

    Args:
        graph: The knowledge graph.
        missing: Questions still missing, by type (types with 0 get none).
        styles: Weight of each query style.
        seed: The run's seed (the round's seed is derived from it and the round's number).
        earlier: The slots planned so far (numbering goes on after them; their chunks come last).
    """
    counts = {kind: n for kind, n in missing.items() if n > 0}
    if not counts:
        return []
    round_ = max((s.round for s in earlier), default=0) + 1
    tried = {_what_is_asked(slot) for slot in earlier}
    slots = []
    for slot in plan(graph, sum(counts.values()), counts, styles, seed + 7919 * round_, {s.chunks for s in earlier}):
        if _what_is_asked(slot) not in tried:
            tried.add(_what_is_asked(slot))
            slots.append(slot)
    return [replace(slot, id=f"q{len(earlier) + 1 + i:04d}", round=round_) for i, slot in enumerate(slots)]


def _what_is_asked(slot: Slot) -> tuple[str, str, str | None, tuple[int, ...]]:
    return slot.type, slot.style, slot.persona, slot.chunks

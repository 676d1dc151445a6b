"""Labelled claim-support units for the claim-support benchmarks, read from ../shared/data.

A *unit* is what a human labelled: one QAGS summary sentence, or one SummEdits summary (one
to four sentences), judged against its document. The faithfulness metric splits a response
into sentences (``sentence_claims``) and judges each one, so every unit carries its
sentences (``claims``) and, where it can be known, a label per sentence (``claim_labels``):

- QAGS: the unit is one sentence; its label is the human majority.
- SummEdits: a consistent summary has every sentence supported. An inconsistent one was
  made by editing the document's original (``<doc>_og``, always consistent); a sentence
  that is also in the original is supported, and when exactly one sentence differs from
  the original, that sentence carries the error (label 0). With two or more changed
  sentences the culprit is unknown (``None``).

The draw is seeded and spread over documents (the bootstrap later resamples documents):
QAGS articles of the split never used for the old calibration (article number not
divisible by 4), whole articles until ``n`` claims; SummEdits units round-robin over the
documents of a domain. Nothing here is copied into the repository: rows are read by path.
"""

from __future__ import annotations

import json
import os
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from ragmeter.metrics.claims import sentence_claims

SOURCES = ("qags-cnndm", "qags-xsum", "summedits-news", "summedits-podcast", "summedits-samsum", "summedits-sales_email")
#: ``$RAGMETER_DATA_DIR``, else ``../shared/data`` beside the checkout.
DEFAULT_DATA_DIR = Path(os.environ.get("RAGMETER_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def unit(
    uid: str, source: str, doc: str, premise: str, claim: str, label: int, claim_labels: list[int | None] | None = None, lang: str = "en"
) -> dict[str, Any]:
    """One labelled unit. ``claim_labels`` defaults to the unit's label for a one-sentence
    unit, and to 1 for every sentence of a supported unit."""
    claims = sentence_claims(claim)
    if claim_labels is None:
        claim_labels = [label] * len(claims) if (label == 1 or len(claims) == 1) else [None] * len(claims)
    return {
        "unit": uid,
        "source": source,
        "doc": doc,
        "premise": premise,
        "claim": claim,
        "label": int(label),
        "claims": claims,
        "claim_labels": claim_labels,
        "lang": lang,
    }


def qags_units(data_dir: Path, source: str, n: int, seed: int) -> list[dict[str, Any]]:
    """QAGS claims of ``source`` (``qags-cnndm`` or ``qags-xsum``): whole articles drawn
    with ``seed`` from the split not used by the old calibration, until ``n`` claims."""
    corpus = source.split("-", 1)[1]
    articles: dict[str, list[dict]] = defaultdict(list)
    for row in _jsonl(data_dir / "qags_sentences.jsonl"):
        number = int(row["id"].rsplit("-", 2)[1])
        if row["source"] == corpus and number % 4 != 0:
            articles[row["id"].rsplit("-", 1)[0]].append(row)
    order = sorted(articles)
    random.Random(seed).shuffle(order)
    out: list[dict[str, Any]] = []
    for article in order:
        if len(out) >= n:
            break
        out += [unit(r["id"], source, article, r["context"], r["claim"], int(r["faithful_majority"])) for r in articles[article]]
    return out


def summedits_claim_labels(claims: list[str], label: int, original: list[str]) -> list[int | None]:
    """Per-sentence labels of a SummEdits summary from its document's original summary."""
    if label == 1:
        return [1] * len(claims)
    changed = [c not in original for c in claims]
    if sum(changed) == 1:
        return [0 if c else 1 for c in changed]
    return [None if c else 1 for c in changed]


def summedits_units(data_dir: Path, source: str, n: int, seed: int) -> list[dict[str, Any]]:
    """SummEdits units of one domain: ``n`` drawn with ``seed``, round-robin over documents."""
    domain = source.split("-", 1)[1]
    rows = [r for r in _jsonl(data_dir / "summedits_dev.jsonl") if r["domain"] == domain]
    originals = {r["id"].rsplit("_", 1)[0]: sentence_claims(r["claim"]) for r in rows if r["id"].endswith("_og")}
    by_doc: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_doc[row["id"].rsplit("_", 1)[0]].append(row)
    rng = random.Random(seed)
    docs = sorted(by_doc)
    rng.shuffle(docs)
    for doc in docs:
        rng.shuffle(by_doc[doc])
    picked: list[dict] = []
    while len(picked) < n and any(by_doc[d] for d in docs):
        for doc in docs:
            if by_doc[doc] and len(picked) < n:
                picked.append(by_doc[doc].pop())
    out = []
    for r in picked:
        doc = r["id"].rsplit("_", 1)[0]
        claims = sentence_claims(r["claim"])
        labels = summedits_claim_labels(claims, int(r["consistent"]), originals.get(doc, []))
        out.append(unit(r["id"], source, doc, r["context"], r["claim"], int(r["consistent"]), labels))
    return out


def labelled_units(source: str, n: int, seed: int, data_dir: Path = DEFAULT_DATA_DIR) -> list[dict[str, Any]]:
    """The seeded draw of ``n`` units of one of :data:`SOURCES`."""
    if source.startswith("qags-"):
        return qags_units(data_dir, source, n, seed)
    if source.startswith("summedits-"):
        return summedits_units(data_dir, source, n, seed)
    raise ValueError(f"unknown source {source!r}; one of {', '.join(SOURCES)}")


def interleave(groups: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Units of several sources taken in turn, so that a job stopped early has some of each."""
    out: list[dict[str, Any]] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out += [g[i] for g in groups if i < len(g)]
    return out

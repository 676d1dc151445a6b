"""One row per judged sentence: the cached judge answers and the model-free features.

Joins the units of ``claim_data.py`` / ``synthetic_claims.py`` / ``claim_sanity.py`` with the
judge's cached answers (``claim_features.py``) and computes, with the shipped functions of
``ragmeter.judges.claim_support``, the lexical evidence and the USE cosine evidence. USE
vectors are cached on disk too (``/work/trust_cache/use_vectors.npz``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from claim_features import CACHE, key_of, load_cache

from ragmeter.data.text import split_sentences
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.metrics.claim_support import derived_features, lexical_evidence, logit

VECTORS = Path("/work/trust_cache/use_vectors.npz")


class VectorCache:
    """USE vectors by text, kept on disk between runs."""

    def __init__(self, path: Path = VECTORS, threads: int = 1):
        self.path, self.encoder = path, USEEncoder(threads=threads)
        self.vectors: dict[str, np.ndarray] = {}
        if path.exists():
            data = np.load(path)
            self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        self.added = 0

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def get(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if self._key(t) not in self.vectors]
        if missing:
            for text, vector in zip(missing, self.encoder.encode(missing), strict=True):
                self.vectors[self._key(text)] = vector
            self.added += len(missing)
        return np.asarray([self.vectors[self._key(t)] for t in texts], dtype=np.float64)

    def save(self) -> None:
        if self.added:
            keys = list(self.vectors)
            np.savez(self.path, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))


def embedding_evidence(claim_vector: Sequence[float], sentence_vectors: Sequence[Sequence[float]], top: int = 3) -> dict[str, float]:
    """Cosine evidence of a claim from L2-normalised vectors.

    Args:
        claim_vector: The claim's embedding.
        sentence_vectors: One embedding per premise sentence (at least one).
        top: How many of the closest sentences ``mean_top_cosine`` averages.

    Returns:
        ``{"max_cosine": ..., "mean_top_cosine": ...}``.
    """
    similarity = np.asarray(sentence_vectors, dtype=np.float64) @ np.asarray(claim_vector, dtype=np.float64)
    if similarity.size == 0:
        raise ValueError("embedding_evidence needs at least one premise sentence")
    best = np.sort(similarity)[::-1][:top]
    return {"max_cosine": float(best[0]), "mean_top_cosine": float(best.mean())}


def sentence_row(u: dict[str, Any], index: int, record: dict[str, Any], vectors: VectorCache) -> dict[str, Any]:
    """Features of sentence ``index`` of unit ``u`` judged as in ``record``."""
    sentence = u["claims"][index]
    started = time.perf_counter()
    lexical = lexical_evidence(sentence, u["premise"], record["evidence"]).as_dict()
    lexical_seconds = time.perf_counter() - started
    premise_sentences = split_sentences(u["premise"]) or [u["premise"]]
    cosine = embedding_evidence(vectors.get([sentence])[0], vectors.get(premise_sentences))
    features = derived_features(record["p"]["supported"], {**lexical, **cosine})
    for name in ("contradict", "novel"):
        if name in record["p"]:
            features[f"logit_{name}"] = logit(record["p"][name])
    return {
        "unit": u["unit"], "source": u["source"], "doc": f"{u['source']}/{u['doc']}", "lang": u["lang"],
        "index": index, "n_claims": len(u["claims"]), "unit_label": u["label"], "label": u["claim_labels"][index],
        "sentence": sentence, "p_yes": record["p"]["supported"], **features,
        "seconds_supported": record["seconds"]["supported"], "tokens_supported": record["tokens"]["supported"],
        "seconds_contradict": record["seconds"].get("contradict"), "seconds_novel": record["seconds"].get("novel"),
        "seconds_lexical": lexical_seconds, "transform": u.get("transform"),
    }  # fmt: skip


def sentence_table(units: list[dict[str, Any]], k: int = 3, cache: Path = CACHE) -> pd.DataFrame:
    """Rows of every unit whose sentences all have a cached answer (others are left out,
    so a partial cache gives partial but consistent figures)."""
    records = load_cache(cache)
    vectors = VectorCache()
    rows = []
    for u in units:
        keys = [key_of([u["premise"]], s, u["lang"], k) for s in u["claims"]]
        if not keys or not all(key in records for key in keys):
            continue
        rows += [sentence_row(u, i, records[key], vectors) for i, key in enumerate(keys)]
    vectors.save()
    return pd.DataFrame(rows)


def load_units(paths: list[Path]) -> list[dict[str, Any]]:
    """Units from JSONL files (synthetic sets)."""
    return [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

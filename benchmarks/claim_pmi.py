"""Does the evidence make a claim's words more likely? Pointwise mutual information as a
feature of the claim-support head, measured on sources the head was not fitted on.

``claim_surprise.py`` read how unexpected each word of a claim was to the judge after it
had read the evidence, and found no gain that carried over: a rare name is unexpected
whether or not the evidence states it. Pointwise mutual information takes that out. For
each token t of the claim, read in the product's ``supported`` prompt,

    pmi(t) = log P(t | evidence, claim so far) - log P(t | "N/A", claim so far)

with "N/A" the content-free premise of ``claim_prior.py``. A word the evidence states
gains likelihood (pmi > 0); a swapped name or number, which the evidence makes *less*
likely than nothing does, loses it. Features per sentence: ``pmi_min``, its least
supported token, and ``pmi_mean`` over its tokens (citations left out).

The sentences and their evidence are those of ``claim_prior.py``'s collection (the same
seeded units of six QAGS and SummEdits sources, the 3 closest premise sentences as the
product picks them), read from its JSONL file; run that collection first. The token
log-probabilities are appended to a JSONL file of their own (resumable).

The rule, set before any figure was seen: ``pmi_min`` goes into the product only if the
head on the shipped features plus ``pmi_min``, fitted leave one source out, beats the head
on the shipped features alone, fitted the same way, on mean held-out BA at 0.5 and mean
ROC-AUC, with ROC-AUC higher on at least 4 of the 6 sources. ``pmi_mean`` is shown for
reading only.

Usage (one model job at a time):
    python benchmarks/claim_pmi.py collect --n 40 --seed 1 --work DIR
    python benchmarks/claim_pmi.py report --n 40 --seed 1 --work DIR [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from claim_contrast import cell
from claim_data import DEFAULT_DATA_DIR, SOURCES, labelled_units
from claim_prior import HEAD_FEATURES, NULL_PREMISE, C, loso_scores, sentence_table
from claim_surprise import SurpriseReader, held_out_statistics, means_lines, rule_line

from ragmeter.bench.report import git_commit
from ragmeter.judges.local import LocalJudge

FEATURE_SETS = {
    "LOSO head": HEAD_FEATURES,
    "LOSO head + pmi_min": [*HEAD_FEATURES, "pmi_min"],
    "LOSO head + pmi_mean": [*HEAD_FEATURES, "pmi_mean"],
}


def log_probs(reader: SurpriseReader, premise: str, claim: str, lang: str) -> list[float]:
    """log P of each of the claim's tokens (citations left out) with ``premise`` as its premise."""
    out = []
    for _, token, logits in reader.statement_logits([premise], claim, lang):
        top = logits.max()
        out.append(float(logits[token] - top - np.log(np.exp(logits - top).sum())))
    return out


def collect(prior_records: list[dict[str, Any]], langs: dict[str, str], path: Path) -> None:
    """Token log-probabilities of every judged sentence, with its evidence and with the null premise."""
    done = {json.loads(line)["key"] for line in path.read_text(encoding="utf-8").splitlines()} if path.exists() else set()
    todo = [r for r in prior_records if r["key"] not in done]
    print(f"{len(prior_records)} sentences, {len(todo)} to read", flush=True)
    reader = SurpriseReader(LocalJudge())
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as out:
        for n, record in enumerate(todo, start=1):
            began = time.perf_counter()
            lang = langs[record["unit"]]
            null = log_probs(reader, NULL_PREMISE, record["claim"], lang)
            given = log_probs(reader, record["evidence"], record["claim"], lang)
            seconds = round(time.perf_counter() - began, 2)
            out.write(json.dumps({"key": record["key"], "lp_evidence": given, "lp_null": null, "seconds": seconds}) + "\n")
            out.flush()
            if n % 25 == 0 or n == len(todo):
                rate = (time.perf_counter() - started) / n
                print(f"{n}/{len(todo)} {rate:.1f} s/sentence, eta {rate * (len(todo) - n) / 60:.0f} min", flush=True)


def pmi_features(record: dict[str, Any]) -> dict[str, float]:
    pmi = np.array(record["lp_evidence"]) - np.array(record["lp_null"])
    if not len(pmi):
        return {"pmi_min": 0.0, "pmi_mean": 0.0}
    return {"pmi_min": float(pmi.min()), "pmi_mean": float(pmi.mean())}


def report(table: pd.DataFrame) -> dict[str, Any]:
    """Per source: each LOSO head's held-out ROC-AUC and BA at 0, and the paired gain over the shipped features."""
    table = table.assign(**{name: loso_scores(table, features) for name, features in FEATURE_SETS.items()})
    units = table.groupby(["source", "unit", "doc", "unit_label"], sort=False)[list(FEATURE_SETS)].min().reset_index()
    out: dict[str, Any] = {}
    for source, group in units.groupby("source", sort=False):
        y = group.unit_label.to_numpy(int)
        rows = held_out_statistics(group, FEATURE_SETS)
        sentences = table[table.source == source]
        out[str(source)] = {
            "units": len(group),
            "unsupported": int((y == 0).sum()),
            "pmi_min_mean": {
                "supported": float(sentences[sentences.label == 1].pmi_min.mean()),
                "unsupported": float(sentences[sentences.label == 0].pmi_min.mean()),
            },
            "scorers": rows,
        }
    return out


def markdown(document: dict[str, Any]) -> str:
    lines = [
        "# Claim support: does the evidence make a claim's words more likely? (pointwise mutual information)",
        "",
        f"{document['date']}, commit {document['commit']}; packaged Qwen2.5-Coder-1.5B Q4_K_M; {document['n']} units per "
        f"source drawn with seed {document['seed']}. Generated by `benchmarks/claim_pmi.py` (the method and the rule: its docstring).",
        "",
        "Commands:",
        "",
        f"    python benchmarks/claim_prior.py collect --n {document['n']} --seed {document['seed']} --work DIR",
        f"    python benchmarks/claim_pmi.py collect --n {document['n']} --seed {document['seed']} --work DIR",
        f"    python benchmarks/claim_pmi.py report --n {document['n']} --seed {document['seed']} --work DIR",
        "",
        "Every row is held out: each head is fitted on the other five sources' labelled sentences (class- and "
        f"source-balanced logistic regression, C = {C}, as the shipped head's configuration). Unit score: the minimum over "
        "its sentences, in log-odds; BA decides at 0. Intervals: 1,000 bootstrap resamples of documents; the gain is "
        "paired, minus `LOSO head`.",
        "",
        "| source | units (unsupported) | mean pmi_min, supported / unsupported sentences | scorer | ROC-AUC | AUC gain | BA at 0.5 |",
        "|---|---|---|---|---|---|---|",
    ]
    for source, row in document["sources"].items():
        pmi = row["pmi_min_mean"]
        for name, stats in row["scorers"].items():
            gain = cell(stats["auc_gain"]) if "auc_gain" in stats else "–"
            lines.append(
                f"| {source} | {row['units']} ({row['unsupported']}) | {pmi['supported']:.2f} / {pmi['unsupported']:.2f} "
                f"| {name} | {cell(stats['auc'])} | {gain} | {cell(stats['ba'])} |"
            )
    lines += [
        *means_lines(document["sources"], list(FEATURE_SETS)),
        "",
        rule_line({s: r["scorers"] for s, r in document["sources"].items()}, "LOSO head", "LOSO head + pmi_min", "pmi_min"),
        "",
        f"Seconds per sentence, both readings: {document['seconds_per_sentence']}.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["collect", "report"])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--n", type=int, default=40, help="units drawn per source")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, required=True, help="folder holding claim_prior.py's collection (outside the repository)")
    parser.add_argument("--out", type=Path, default=None, help="write claim_pmi.{json,md} here")
    args = parser.parse_args()
    by_source = {s: labelled_units(s, args.n, args.seed, args.data_dir) for s in SOURCES}
    prior_path = args.work / f"claim_prior_n{args.n}_seed{args.seed}.jsonl"
    prior = [json.loads(line) for line in prior_path.read_text(encoding="utf-8").splitlines()]
    path = args.work / f"claim_pmi_n{args.n}_seed{args.seed}.jsonl"
    if args.action == "collect":
        langs = {u["unit"]: u["lang"] for units in by_source.values() for u in units}
        started = time.perf_counter()
        collect(prior, langs, path)
        print(f"done in {time.perf_counter() - started:.0f} s")
        return
    pmi, seconds = {}, []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        pmi[record["key"]] = pmi_features(record)
        seconds.append(record["seconds"])
    records = {r["key"]: r for r in prior if r["key"] in pmi}
    table = sentence_table(by_source, records)
    table = table.assign(**{name: [pmi[k][name] for k in table.key] for name in ("pmi_min", "pmi_mean")})
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "n": args.n,
        "seed": args.seed,
        "sources": report(table),
        "seconds_per_sentence": round(float(np.mean(seconds)), 2),
    }
    text = markdown(document)
    print(text)
    if args.out:
        (args.out / "claim_pmi.json").write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        (args.out / "claim_pmi.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

"""Does the judge's belief in a claim without any premise help tell supported claims apart?

The packaged 1.5B judge says yes to most unsupported claims, and it says so more readily
for some claims than others whatever the premise: a plausible, generic sentence reads as
true. Contextual calibration (Zhao et al., 2021, "Calibrate before use") measures that
bias with a content-free input. Here each claim is judged twice with the product's
question (``supported``): against its evidence (the 3 premise sentences closest to it, as
faithfulness picks them), and against the content-free premise "N/A". The second P(yes),
the *prior*, is what the judge believes of the claim without evidence; the evidence's
*lift* is

    lift = logit P(yes | evidence) - logit P(yes | "N/A")

The prior premise is the same for every claim, so the local judge reads it once and each
claim costs only its own tokens.

Scorers compared on the same units (a unit scores the minimum over its sentences):
- ``raw``: logit P(yes | evidence), the judge alone; ``lift``: raw minus the prior
  (weight 1, fitted on nothing);
- ``head``: the shipped claim-support head (fitted on seed-0 draws of these sources, so not
  held out); ``head - prior``: its log-odds minus the prior times the head's own weight
  on logit P(yes), i.e. the head applied to the lift instead of the raw logit;
- leave one source out, fitted on the other five sources' sentences with a known label
  (class- and source-balanced logistic regression, C = 3.0 as the shipped head's
  configuration, fixed beforehand): ``LOSO head`` on the shipped head's features
  (logit P(yes), any novel number, novel names, negation added), and ``LOSO head +
  prior`` on the same plus logit P(yes | "N/A"). Their BA at 0.5 is held out; that is
  the figure that decides.

Results are appended to a JSONL file outside the repository (``--work``); a stopped run
resumes. English sources only (QAGS and SummEdits).

Usage (one model job at a time):
    python benchmarks/claim_prior.py collect --n 40 --seed 1 --work DIR
    python benchmarks/claim_prior.py report --n 40 --seed 1 --work DIR [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd
from claim_contrast import cell, key_of
from claim_data import DEFAULT_DATA_DIR, SOURCES, interleave, labelled_units
from claim_support_eval import fit

from ragmeter.bench.report import git_commit
from ragmeter.data.text import without_citations
from ragmeter.judges import Judges
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.windowing import premise_verdicts
from ragmeter.metrics.claim_support import derived_features, lexical_evidence, logit, packaged_head
from ragmeter.metrics.evidence import closest_evidence
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic, roc_auc

#: The content-free premise the prior is read against.
NULL_PREMISE = "N/A"
#: The shipped head's features (its configuration P+L-), and the inverse regularisation.
HEAD_FEATURES = ["logit_p_yes", "any_novel_numbers", "novel_names", "negation_added"]
C = 3.0


async def judge_unit(judges: Judges, unit: dict[str, Any]) -> list[dict[str, Any]]:
    """Each sentence of the unit judged against its evidence and against :data:`NULL_PREMISE`."""
    llm = judges.require_llm()
    stated = [without_citations(c) or c for c in unit["claims"]]
    focused = await closest_evidence(judges, unit["premise"], stated, llm.evidence_sentences)
    priors, _ = await premise_verdicts(llm, "supported", NULL_PREMISE, stated, unit["lang"])
    records = []
    for index, (claim, prior) in enumerate(zip(stated, priors, strict=True)):
        evidence = focused[index][0] if focused else unit["premise"]
        verdicts, strategy = await premise_verdicts(llm, "supported", evidence, [claim], unit["lang"])
        records.append({"evidence": evidence, "strategy": strategy, "p": verdicts[0].p_yes, "p_prior": prior.p_yes})
    return records


def write_unit(out: TextIO, unit: dict[str, Any], records: list[dict[str, Any]], seconds: float) -> None:
    """Append one JSON line per sentence of ``unit`` (its record, and the seconds a sentence took) to ``out``."""
    for claim, record in zip(unit["claims"], records, strict=True):
        row = {"key": key_of(unit, claim), "unit": unit["unit"], "claim": claim, **record, "seconds": seconds}
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
    out.flush()


def progress(n: int, total: int, started: float) -> None:
    """Every tenth unit and the last: units done, seconds a unit, minutes left."""
    if n % 10 == 0 or n == total:
        rate = (time.perf_counter() - started) / n
        print(f"{n}/{total} {rate:.1f} s/unit, eta {rate * (total - n) / 60:.0f} min", flush=True)


def collect(units: list[dict[str, Any]], path: Path) -> None:
    done = {r["key"] for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())} if path.exists() else set()
    todo = [u for u in units if any(key_of(u, c) not in done for c in u["claims"])]
    print(f"{len(todo)} units to judge", flush=True)
    judges = Judges(llm=LocalJudge())
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as out:
        for n, unit in enumerate(todo, start=1):
            began = time.perf_counter()
            records = asyncio.run(judge_unit(judges, unit))
            seconds = round((time.perf_counter() - began) / len(records), 2)
            write_unit(out, unit, records, seconds)
            progress(n, len(todo), started)


def sentence_row(source: str, unit: dict[str, Any], claim: str, label: int | None) -> dict[str, Any]:
    """Where one judged sentence comes from, with its unit's label and its own (``None`` unknown)."""
    return {
        "key": key_of(unit, claim),
        "source": source,
        "unit": unit["unit"],
        "doc": unit["doc"],
        "unit_label": unit["label"],
        "label": label,
    }


def judged_sentences(
    units_by_source: dict[str, list[dict[str, Any]]], records: dict[str, dict[str, Any]]
) -> Iterator[tuple[str, dict[str, Any], str, int | None, dict[str, Any]]]:
    """``(source, unit, claim, label, record)`` for each sentence of every unit whose sentences all have a record."""
    for source, units in units_by_source.items():
        for unit in units:
            found = [records.get(key_of(unit, c)) for c in unit["claims"]]
            if found and all(r is not None for r in found):
                yield from (
                    (source, unit, claim, label, r) for claim, label, r in zip(unit["claims"], unit["claim_labels"], found, strict=True)
                )


def sentence_table(units_by_source: dict[str, list[dict[str, Any]]], records: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per judged sentence of a fully judged unit, with every feature a scorer needs."""
    head = packaged_head()
    weight = head.coefficients["logit_p_yes"]
    rows = []
    for source, unit, claim, label, r in judged_sentences(units_by_source, records):
        lexical = lexical_evidence(claim, unit["premise"], r["evidence"]).as_dict()
        features = derived_features(r["p"], lexical)
        head_score = head.score(r["p"], lexical)
        prior = logit(r["p_prior"])
        rows.append(
            {
                **sentence_row(source, unit, claim, label),
                "raw": logit(r["p"]),
                "lift": logit(r["p"]) - prior,
                "head": head_score,
                "head - prior": head_score - weight * prior,
                "logit_prior": prior,
                "p_prior": r["p_prior"],
                **{name: features[name] for name in HEAD_FEATURES},
            }
        )
    return pd.DataFrame(rows)


def loso_scores(table: pd.DataFrame, features: list[str]) -> pd.Series:
    """Each sentence's log-odds from a head fitted on the other sources' labelled sentences."""
    out = pd.Series(np.nan, index=table.index)
    for source in table.source.unique():
        train = table[(table.source != source) & table.label.notna()]
        w, b = fit(train, features, C)
        test = table.source == source
        out[test] = table.loc[test, features].to_numpy(dtype=float) @ w + b
    return out


SCORERS = ("raw", "lift", "head", "head - prior", "LOSO head", "LOSO head + prior")


def report(table: pd.DataFrame) -> dict[str, Any]:
    """Per source: units, each scorer's ROC-AUC and BA at 0 log-odds, and paired gains."""
    table = table.assign(
        **{
            "LOSO head": loso_scores(table, HEAD_FEATURES),
            "LOSO head + prior": loso_scores(table, [*HEAD_FEATURES, "logit_prior"]),
        }
    )
    units = table.groupby(["source", "unit", "doc", "unit_label"], sort=False)[list(SCORERS)].min().reset_index()
    out: dict[str, Any] = {}
    for source, group in units.groupby("source", sort=False):
        y, docs = group.unit_label.to_numpy(int), group.doc.to_numpy()
        rows = {}
        for name in SCORERS:
            values = group[name].to_numpy(float)
            rows[name] = {
                "auc": bootstrap_statistic(roc_auc, y, values, groups=docs),
                "ba": bootstrap_statistic(balanced_accuracy, y, (values >= 0).astype(int), groups=docs),
            }
        for new, base in (("lift", "raw"), ("head - prior", "head"), ("LOSO head + prior", "LOSO head")):
            a, b = group[new].to_numpy(float), group[base].to_numpy(float)
            rows[new]["auc_gain"] = bootstrap_statistic(lambda yy, s, t: roc_auc(yy, s) - roc_auc(yy, t), y, a, b, groups=docs)
            rows[new]["ba_gain"] = bootstrap_statistic(
                lambda yy, s, t: balanced_accuracy(yy, (s >= 0).astype(int)) - balanced_accuracy(yy, (t >= 0).astype(int)),
                y,
                a,
                b,
                groups=docs,
            )
        sentences = table[table.source == source]
        out[str(source)] = {
            "units": len(group),
            "unsupported": int((y == 0).sum()),
            "sentences": len(sentences),
            "prior_p_mean": {
                "supported": float(sentences[sentences.label == 1].p_prior.mean()),
                "unsupported": float(sentences[sentences.label == 0].p_prior.mean()),
            },
            "scorers": rows,
        }
    return out


def markdown(document: dict[str, Any]) -> str:
    lines = [
        "# Claim support: the judge's belief in a claim without a premise (contextual calibration)",
        "",
        f"{document['date']}, commit {document['commit']}; packaged Qwen2.5-Coder-1.5B Q4_K_M; {document['n']} units per "
        f"source drawn with seed {document['seed']}. Generated by `benchmarks/claim_prior.py` (the method: its docstring).",
        "",
        "Commands:",
        "",
        f"    python benchmarks/claim_prior.py collect --n {document['n']} --seed {document['seed']} --work DIR",
        f"    python benchmarks/claim_prior.py report --n {document['n']} --seed {document['seed']} --work DIR",
        "",
        "Unit score: the minimum over its sentences, in log-odds; BA decides at 0 (P = 0.5). Intervals: 1,000 bootstrap "
        "resamples of documents; gains are paired (`lift` minus `raw`, `head - prior` minus `head`, `LOSO head + prior` "
        "minus `LOSO head`). `head` and `head - prior` use the shipped head, fitted on seed-0 draws of these sources: "
        "not held out. The LOSO rows are fitted without the source they are measured on.",
        "",
        "| source | units (unsupported) | mean prior P(yes), supported / unsupported sentences | scorer | ROC-AUC | AUC gain | BA at 0.5 | BA gain |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for source, row in document["sources"].items():
        prior = row["prior_p_mean"]
        for name, stats in row["scorers"].items():
            lines.append(
                f"| {source} | {row['units']} ({row['unsupported']}) | {prior['supported']:.2f} / {prior['unsupported']:.2f} "
                f"| {name} | {cell(stats['auc'])} | {cell(stats['auc_gain']) if 'auc_gain' in stats else '–'} "
                f"| {cell(stats['ba'])} | {cell(stats['ba_gain']) if 'ba_gain' in stats else '–'} |"
            )
    sources = document["sources"].values()
    lines += ["", "Means over the sources (ROC-AUC / BA at 0.5):", ""]
    for name in SCORERS:
        auc = np.mean([r["scorers"][name]["auc"]["value"] for r in sources])
        ba = np.mean([r["scorers"][name]["ba"]["value"] for r in sources])
        lines.append(f"- {name}: {auc:.3f} / {ba:.3f}")
    lines += ["", f"Seconds per sentence, both verdicts: {document['seconds_per_sentence']}.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["collect", "report"])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--sources", nargs="*", default=list(SOURCES))
    parser.add_argument("--n", type=int, default=40, help="units drawn per source")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, required=True, help="folder for the judged claims (outside the repository)")
    parser.add_argument("--out", type=Path, default=None, help="write claim_prior.{json,md} here")
    args = parser.parse_args()
    by_source = {s: labelled_units(s, args.n, args.seed, args.data_dir) for s in args.sources}
    path = args.work / f"claim_prior_n{args.n}_seed{args.seed}.jsonl"
    args.work.mkdir(parents=True, exist_ok=True)
    if args.action == "collect":
        started = time.perf_counter()
        collect(interleave(list(by_source.values())), path)
        print(f"done in {time.perf_counter() - started:.0f} s")
        return
    records = {r["key"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "n": args.n,
        "seed": args.seed,
        "sources": report(sentence_table(by_source, records)),
        "seconds_per_sentence": round(float(np.mean([r["seconds"] for r in records.values()])), 2),
    }
    text = markdown(document)
    print(text)
    if args.out:
        (args.out / "claim_prior.json").write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        (args.out / "claim_prior.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

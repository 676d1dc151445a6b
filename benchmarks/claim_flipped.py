"""Does asking the claim-support question the other way round cancel the judge's leaning to Yes?

The packaged 1.5B judge says "supported" too easily: most unsupported claims get P(yes)
0.5-0.7, so 0.5 is no line and the claim-support head has to move it with an intercept fitted
on labelled sources, which carries over to other sources only in part. A model that leans to
"Yes" whatever the question should lean the other way when Yes means *not supported*. Here each
sentence is judged once more with the flipped question (``benchmarks/prompts/flipped_en.yaml``:
"Does the statement say anything the premise does not support?", its examples the packaged
ones with every answer reversed), against the same evidence the product's verdict saw; ``p_u``
is that P(yes).

Scorers (a unit scores the minimum over its sentences, in log-odds; BA decides at 0):
- ``LOSO head``: the shipped head's features (logit P(yes), any novel number, novel names,
  negation added), fitted leave one source out (class- and source-balanced logistic
  regression, C = 3.0, as ``claim_prior.py``);
- ``polarity``: (logit P(yes) - logit p_u) / 2, fitted on nothing: the two questions' leanings
  cancel if they are alike;
- ``LOSO head + flipped``: the head's features plus logit p_u, fitted leave one source out.

The rule, written before any figure was seen: a candidate goes into the product only if it
beats ``LOSO head`` on mean held-out BA at 0.5 and mean ROC-AUC over the six sources, with
ROC-AUC higher on at least 4 of them, on seed 1; and the same holds on a fresh draw
(``confirm``: fitted on seed 1's other five sources, measured on the held-out source's seed-2
units that seed 1 did not draw).

The sentences, their evidence and the product's P(yes) are those ``claim_probe.py collect``
wrote (``--work``); this script adds p_u in a file of its own there. A stopped run resumes.

Usage (one model job at a time):
    python benchmarks/claim_flipped.py collect --n 40 --seed 1 --work DIR
    python benchmarks/claim_flipped.py report --n 40 --seed 1 --work DIR [--out benchmarks/results]
    python benchmarks/claim_flipped.py collect --n 40 --seed 2 --work DIR --fresh-from 1
    python benchmarks/claim_flipped.py confirm --n 40 --seed 1 --confirm-seed 2 --work DIR [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from claim_contrast import cell
from claim_data import DEFAULT_DATA_DIR, SOURCES, labelled_units
from claim_prior import HEAD_FEATURES, judged_sentences, loso_scores, progress, sentence_row
from claim_surprise import held_out_statistics, means_lines, rule_line

import ragmeter.judges.local as local_judge
from ragmeter.bench.report import git_commit
from ragmeter.data.text import without_citations
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.prompts import PromptBook
from ragmeter.judges.windowing import premise_verdicts
from ragmeter.metrics.claim_support import derived_features, lexical_evidence, logit

#: The prompt file that adds the flipped task to the packaged English prompts.
FLIPPED_PROMPTS = Path(__file__).parent / "prompts" / "flipped_en.yaml"
SCORERS = ("LOSO head", "polarity", "LOSO head + flipped")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def collect(sentences: list[dict[str, Any]], path: Path) -> None:
    """Judge each of ``sentences`` (claim_probe records) with the flipped question, appending
    ``{"key", "p_u", "seconds"}`` lines to ``path``; sentences already there are skipped."""
    done = {r["key"] for r in read_jsonl(path)}
    todo = [s for s in sentences if s["key"] not in done]
    print(f"{len(todo)} sentences to judge", flush=True)
    # The benchmark's judge reads its prompts from the packaged ones plus the flipped task.
    local_judge.PromptBook = partial(PromptBook, variant=FLIPPED_PROMPTS)  # type: ignore[misc]
    judge = LocalJudge()
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as out:
        for n, sentence in enumerate(todo, start=1):
            began = time.perf_counter()
            claim = without_citations(sentence["claim"]) or sentence["claim"]
            verdicts, _ = asyncio.run(premise_verdicts(judge, "unsupported", sentence["evidence"], [claim], "en"))
            row = {"key": sentence["key"], "p_u": verdicts[0].p_yes, "seconds": round(time.perf_counter() - began, 2)}
            out.write(json.dumps(row) + "\n")
            out.flush()
            progress(n, len(todo), started)


def sentence_table(units_by_source: dict[str, list[dict[str, Any]]], records: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per sentence of a unit whose sentences all have both verdicts: the head's
    features, logit p_u and the polarity score."""
    rows = []
    for source, unit, claim, label, r in judged_sentences(units_by_source, records):
        features = derived_features(r["p"], lexical_evidence(claim, unit["premise"], r["evidence"]).as_dict())
        flipped = logit(r["p_u"])
        rows.append(
            {
                **sentence_row(source, unit, claim, label),
                **{name: features[name] for name in HEAD_FEATURES},
                "logit_p_u": flipped,
                "p": r["p"],
                "p_u": r["p_u"],
                "polarity": (logit(r["p"]) - flipped) / 2,
            }
        )
    return pd.DataFrame(rows)


def scored(fitting: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """``measured`` with each LOSO scorer fitted on ``fitting``'s other sources (the same draw or an
    earlier one)."""
    both = pd.concat([fitting.assign(fit=True), measured.assign(fit=False)], ignore_index=True)
    table = measured.copy()
    train = both.assign(label=both.label.where(both.fit))  # fitted rows carry their labels; measured rows only get scores
    for name, features in (("LOSO head", HEAD_FEATURES), ("LOSO head + flipped", [*HEAD_FEATURES, "logit_p_u"])):
        table[name] = loso_scores(train, features)[~both.fit.to_numpy()].to_numpy()
    return table


def report(fitting: pd.DataFrame, measured: pd.DataFrame) -> dict[str, Any]:
    """Per held-out source: units, each scorer's ROC-AUC and BA at 0, the paired ROC-AUC gain
    over ``LOSO head``, and the mean P(yes) of both questions on supported and unsupported sentences."""
    table = scored(fitting, measured)
    units = table.groupby(["source", "unit", "doc", "unit_label"], sort=False)[list(SCORERS)].min().reset_index()
    out: dict[str, Any] = {}
    for source, group in units.groupby("source", sort=False):
        y = group.unit_label.to_numpy(int)
        rows = held_out_statistics(group, SCORERS)
        sentences = table[table.source == source]
        out[str(source)] = {
            "units": len(group),
            "unsupported": int((y == 0).sum()),
            "sentences": len(sentences),
            "mean_p": {
                kind: {
                    "supported": float(sentences[sentences.label == 1][kind].mean()),
                    "unsupported": float(sentences[sentences.label == 0][kind].mean()),
                }
                for kind in ("p", "p_u")
            },
            "scorers": rows,
        }
    return out


def markdown(document: dict[str, Any]) -> str:
    confirm = document["confirm_seed"] is not None
    measured = (
        f"seed {document['confirm_seed']}'s units that seed {document['seed']} did not draw" if confirm else f"seed {document['seed']}"
    )
    lines = [
        "# Claim support: the question asked the other way round" + (" (fresh draw)" if confirm else ""),
        "",
        f"{document['date']}, commit {document['commit']}; packaged Qwen2.5-Coder-1.5B Q4_K_M; {document['n']} units per source "
        f"drawn with seed {document['seed']} to fit; measured on {measured}. Generated by `benchmarks/claim_flipped.py` "
        "(the method and the rule: its docstring).",
        "",
        "Unit score: the minimum over its sentences, in log-odds; BA decides at 0 (P = 0.5). Intervals: 1,000 bootstrap resamples "
        "of documents; the AUC gain is paired against `LOSO head`. p: P(yes) of the packaged question (Yes = supported); "
        "p_u: P(yes) of the flipped one (Yes = not supported).",
        "",
        "| held-out source | units (unsupported) | mean p, supported / unsupported | mean p_u, supported / unsupported | scorer | ROC-AUC | AUC gain | BA at 0.5 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for source, row in document["sources"].items():
        p, p_u = row["mean_p"]["p"], row["mean_p"]["p_u"]
        for name, stats in row["scorers"].items():
            lines.append(
                f"| {source} | {row['units']} ({row['unsupported']}) | {p['supported']:.2f} / {p['unsupported']:.2f} "
                f"| {p_u['supported']:.2f} / {p_u['unsupported']:.2f} | {name} | {cell(stats['auc'])} "
                f"| {cell(stats['auc_gain']) if 'auc_gain' in stats else '–'} | {cell(stats['ba'])} |"
            )
    lines += means_lines(document["sources"], SCORERS)
    by_source = {source: row["scorers"] for source, row in document["sources"].items()}
    lines += ["", rule_line(by_source, "LOSO head", "polarity", "the polarity score")]
    lines += ["", rule_line(by_source, "LOSO head", "LOSO head + flipped", "the flipped verdict")]
    lines += ["", f"Seconds per sentence, the flipped verdict alone: {document['seconds_per_sentence']}.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["collect", "report", "confirm"])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--n", type=int, default=40, help="units drawn per source")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, required=True, help="the folder of claim_probe.py's collection (outside the repository)")
    parser.add_argument("--confirm-seed", type=int, default=2, help="confirm: the fresh draw measured (fitted on --seed's)")
    parser.add_argument("--fresh-from", type=int, default=None, help="collect: skip the units this earlier seed drew")
    parser.add_argument("--out", type=Path, default=None, help="write claim_flipped[_confirm].{json,md} here")
    args = parser.parse_args()

    def units(seed: int, skip: set[str]) -> dict[str, list[dict[str, Any]]]:
        return {s: [u for u in labelled_units(s, args.n, seed, args.data_dir) if u["unit"] not in skip] for s in SOURCES}

    def records(seed: int) -> dict[str, dict[str, Any]]:
        flipped = {r["key"]: r for r in read_jsonl(args.work / f"claim_flipped_n{args.n}_seed{seed}.jsonl")}
        probe = read_jsonl(args.work / f"claim_probe_n{args.n}_seed{seed}.jsonl")
        return {r["key"]: {**r, **flipped[r["key"]]} for r in probe if r["key"] in flipped}

    if args.action == "collect":
        skip = {u["unit"] for us in units(args.fresh_from, set()).values() for u in us} if args.fresh_from is not None else set()
        wanted = {u["unit"] for us in units(args.seed, skip).values() for u in us}
        sentences = [r for r in read_jsonl(args.work / f"claim_probe_n{args.n}_seed{args.seed}.jsonl") if r["unit"] in wanted]
        collect(sentences, args.work / f"claim_flipped_n{args.n}_seed{args.seed}.jsonl")
        return
    fitting_units = units(args.seed, set())
    fitting = sentence_table(fitting_units, records(args.seed))
    measured, name, confirm_seed = fitting, "claim_flipped", None
    if args.action == "confirm":
        seen = {u["unit"] for us in fitting_units.values() for u in us}
        measured, name, confirm_seed = (
            sentence_table(units(args.confirm_seed, seen), records(args.confirm_seed)),
            "claim_flipped_confirm",
            args.confirm_seed,
        )
    judged = read_jsonl(args.work / f"claim_flipped_n{args.n}_seed{confirm_seed or args.seed}.jsonl")
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "n": args.n,
        "seed": args.seed,
        "confirm_seed": confirm_seed,
        "sources": report(fitting, measured),
        "seconds_per_sentence": round(float(np.mean([r["seconds"] for r in judged])), 2),
    }
    text = markdown(document)
    print(text)
    if args.out:
        (args.out / f"{name}.json").write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        (args.out / f"{name}.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

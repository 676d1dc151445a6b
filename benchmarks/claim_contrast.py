"""Does the judge prefer a claim to the same claim with one name or number swapped?

The packaged 1.5B judge says yes to most unsupported claims: its P(yes) for a claim is a
poor absolute measure. This benchmark tests a relative one. Each claim is judged together
with variants of itself in which one number or one name is replaced by another number or
name of its evidence (the premise sentences the judge is shown). For a supported claim
every variant is wrong, and should score lower. For a claim whose name or number was
edited (SummEdits' swapped entities and numbers), the variant that puts the evidence's own
back should score higher. So a claim is marked down by how far its best variant beats it:

    penalty = max(0, max over variants of logit P(variant) - logit P(claim))

The penalty is fixed beforehand (weight 1, no threshold): nothing here is fitted, and
every source reports what it does. The variants share the claim's premise, so each costs
only its own tokens (the local judge reads the premise once).

Scorers compared on the same units (a unit scores the minimum over its sentences):
- ``raw``: logit P(yes) of the claim, the judge alone;
- ``raw - penalty``;
- ``head``: the shipped claim-support head (P(yes) with the numbers, names and negations
  the premise lacks; fitted on seed-0 draws of these sources, so these rows are not held out);
- ``head - penalty``: the head's log-odds minus the penalty.

Results are appended to a JSONL file outside the repository (``--work``); a stopped run
resumes. English sources only: the variants are made from capitalised names and numbers.

Usage (one model job at a time):
    python benchmarks/claim_contrast.py collect --n 40 --seed 1 --work DIR
    python benchmarks/claim_contrast.py report --n 40 --seed 1 --work DIR [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from claim_data import DEFAULT_DATA_DIR, SOURCES, interleave, labelled_units

from ragmeter.bench.report import git_commit
from ragmeter.data.text import without_citations
from ragmeter.judges import Judges
from ragmeter.judges.base import Verdict
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.windowing import premise_verdicts
from ragmeter.metrics.claim_support import logit, names_in, packaged_head, supported_probability
from ragmeter.metrics.evidence import closest_evidence
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic, roc_auc

#: Most variants judged per claim.
MAX_VARIANTS = 4
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
_NAME_RUN = re.compile(r"(?<![\w'’])[A-Z][\w]*(?:[ \t]+[A-Z][\w]*)*")


def spans(text: str, kind: str, names: set[str]) -> list[str]:
    """The numbers, or the runs of capitalised words holding a name of ``names``, of ``text``, in order."""
    if kind == "number":
        found = _NUMBER.findall(text)
    else:
        found = [m.group(0) for m in _NAME_RUN.finditer(text) if any(w.lower() in names for w in m.group(0).split())]
    return list(dict.fromkeys(found))


def variants(claim: str, evidence: str) -> list[str]:
    """The claim with one of its numbers or names replaced by another of ``evidence``, at
    most :data:`MAX_VARIANTS`, taking each span of the claim in turn."""
    names = names_in(claim) | names_in(evidence)
    options = []
    for kind in ("number", "name"):
        own = spans(claim, kind, names)
        others = [s for s in spans(evidence, kind, names) if s not in own and s.lower() not in claim.lower()]
        for span in own:
            options.append([re.sub(rf"(?<![\w]){re.escape(span)}(?![\w])", other, claim, count=1) for other in others])
    chosen: list[str] = []
    for column in range(max((len(o) for o in options), default=0)):
        for row in options:
            if column < len(row) and row[column] != claim and row[column] not in chosen and len(chosen) < MAX_VARIANTS:
                chosen.append(row[column])
    return chosen


async def judge_claim(judges: Judges, premise: str, claim: str, lang: str) -> dict[str, Any]:
    """The claim's and its variants' P(yes) against the claim's evidence, as faithfulness picks it."""
    stated = without_citations(claim) or claim
    focused = await closest_evidence(judges, premise, [stated], judges.require_llm().evidence_sentences)
    evidence = focused[0][0] if focused else premise
    others = variants(stated, evidence)
    verdicts, strategy = await premise_verdicts(judges.require_llm(), "supported", evidence, [stated, *others], lang)
    return {
        "evidence": evidence,
        "strategy": strategy,
        "p": verdicts[0].p_yes,
        "variants": others,
        "p_variants": [v.p_yes for v in verdicts[1:]],
    }


def key_of(unit: dict[str, Any], claim: str) -> str:
    return json.dumps([unit["unit"], claim], ensure_ascii=False)


def collect(units: list[dict[str, Any]], path: Path) -> None:
    done = {r["key"] for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())} if path.exists() else set()
    todo = [(u, c) for u in units for c in u["claims"] if key_of(u, c) not in done]
    print(f"{len(todo)} claims to judge ({len(done)} done)", flush=True)
    judges = Judges(llm=LocalJudge())
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as out:
        for n, (unit, claim) in enumerate(todo, start=1):
            began = time.perf_counter()
            record = asyncio.run(judge_claim(judges, unit["premise"], claim, unit["lang"]))
            record["seconds"] = round(time.perf_counter() - began, 2)
            out.write(json.dumps({"key": key_of(unit, claim), "unit": unit["unit"], "claim": claim, **record}, ensure_ascii=False) + "\n")
            out.flush()
            if n % 10 == 0 or n == len(todo):
                rate = (time.perf_counter() - started) / n
                print(f"{n}/{len(todo)} {rate:.1f} s/claim, eta {rate * (len(todo) - n) / 60:.0f} min", flush=True)


def penalty(record: dict[str, Any]) -> float:
    """How far the claim's best variant beats it, in log-odds (0 when none does)."""
    if not record["p_variants"]:
        return 0.0
    return max(0.0, max(logit(p) for p in record["p_variants"]) - logit(record["p"]))


def scores(unit: dict[str, Any], records: dict[str, dict[str, Any]]) -> dict[str, float] | None:
    """The unit's score under each scorer (log-odds, minimum over its sentences); None when
    a sentence was not judged."""
    rows = [records.get(key_of(unit, c)) for c in unit["claims"]]
    if not rows or any(r is None for r in rows):
        return None
    head = packaged_head()
    per: dict[str, list[float]] = {"raw": [], "raw - penalty": [], "head": [], "head - penalty": []}
    for claim, r in zip(unit["claims"], rows, strict=True):
        h = logit(supported_probability(head, claim, unit["premise"], Verdict(p_yes=r["p"], evidence=r["evidence"])))
        per["raw"].append(logit(r["p"]))
        per["raw - penalty"].append(logit(r["p"]) - penalty(r))
        per["head"].append(h)
        per["head - penalty"].append(h - penalty(r))
    return {name: min(values) for name, values in per.items()}


def report(units_by_source: dict[str, list[dict[str, Any]]], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per source: the units judged, and each scorer's ROC-AUC and BA with the penalty's gains."""
    table: dict[str, Any] = {}
    for source, units in units_by_source.items():
        judged = [(u, s) for u in units if (s := scores(u, records)) is not None]
        if not judged:
            continue
        y = np.array([u["label"] for u, _ in judged])
        docs = [u["doc"] for u, _ in judged]
        column = {name: np.array([s[name] for _, s in judged]) for name in judged[0][1]}
        rows = {}
        for name, values in column.items():
            rows[name] = {
                "auc": bootstrap_statistic(roc_auc, y, values, groups=docs),
                "ba": bootstrap_statistic(balanced_accuracy, y, (values >= 0).astype(int), groups=docs),
            }
        for base in ("raw", "head"):
            gain = bootstrap_statistic(
                lambda yy, a, b: roc_auc(yy, a) - roc_auc(yy, b), y, column[f"{base} - penalty"], column[base], groups=docs
            )
            rows[f"{base} - penalty"]["auc_gain"] = gain
        claims = [records[key_of(u, c)] for u, _ in judged for c in u["claims"]]
        table[source] = {
            "units": len(judged),
            "unsupported": int((y == 0).sum()),
            "claims": len(claims),
            "with_variants": sum(bool(r["p_variants"]) for r in claims),
            "penalised": sum(penalty(r) > 0 for r in claims),
            "scorers": rows,
        }
    return table


def cell(statistic: dict[str, Any]) -> str:
    low, high = statistic["ci_low"], statistic["ci_high"]
    return f"{statistic['value']:.3f}" + (f" [{low:.2f}, {high:.2f}]" if low is not None else "")


def markdown(document: dict[str, Any]) -> str:
    lines = [
        "# Claim support: does the judge prefer a claim to the same claim with a name or number swapped?",
        "",
        f"{document['date']}, commit {document['commit']}; packaged Qwen2.5-Coder-1.5B Q4_K_M; {document['n']} units per "
        f"source drawn with seed {document['seed']}. Generated by `benchmarks/claim_contrast.py` (the method: its docstring).",
        "",
        "Commands:",
        "",
        f"    python benchmarks/claim_contrast.py collect --n {document['n']} --seed {document['seed']} --work DIR",
        f"    python benchmarks/claim_contrast.py report --n {document['n']} --seed {document['seed']} --work DIR",
        "",
        "Unit score: the minimum over its sentences, in log-odds; BA decides at 0 (P = 0.5). Intervals: 1,000 bootstrap "
        "resamples of documents; the gain is the penalised scorer's ROC-AUC minus its base's, paired. The head was fitted "
        "on seed-0 draws of these sources: its rows are not held-out figures; the penalty is fitted on nothing.",
        "",
        "| source | units (unsupported) | claims with variants / penalised | scorer | ROC-AUC | AUC gain | BA at 0.5 |",
        "|---|---|---|---|---|---|---|",
    ]
    for source, row in document["sources"].items():
        for name, stats in row["scorers"].items():
            gain = cell(stats["auc_gain"]) if "auc_gain" in stats else "–"
            lines.append(
                f"| {source} | {row['units']} ({row['unsupported']}) | {row['with_variants']} of {row['claims']} / {row['penalised']} "
                f"| {name} | {cell(stats['auc'])} | {gain} | {cell(stats['ba'])} |"
            )
    means = {
        name: (
            float(np.mean([r["scorers"][name]["auc"]["value"] for r in document["sources"].values()])),
            float(np.mean([r["scorers"][name]["ba"]["value"] for r in document["sources"].values()])),
        )
        for name in ("raw", "raw - penalty", "head", "head - penalty")
    }
    lines += [
        "",
        "Means over the sources (ROC-AUC / BA at 0.5): " + "; ".join(f"{k} {a:.3f} / {b:.3f}" for k, (a, b) in means.items()) + ".",
    ]
    lines += ["", f"Seconds per claim, variants included: {document['seconds_per_claim']}.", ""]
    for base in ("raw", "head"):
        gains = [r["scorers"][f"{base} - penalty"]["auc_gain"]["value"] for r in document["sources"].values()]
        lines.append(
            f"The penalty over `{base}`: ROC-AUC higher on {sum(g > 0 for g in gains)} of {len(gains)} sources, lower on "
            f"{sum(g < 0 for g in gains)}; mean gain {np.mean(gains):+.3f} ROC-AUC, "
            f"{means[f'{base} - penalty'][1] - means[base][1]:+.3f} BA."
        )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["collect", "report"])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--sources", nargs="*", default=list(SOURCES))
    parser.add_argument("--n", type=int, default=40, help="units drawn per source")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, required=True, help="folder for the judged claims (outside the repository)")
    parser.add_argument("--out", type=Path, default=None, help="write claim_contrast.{json,md} here")
    args = parser.parse_args()
    by_source = {s: labelled_units(s, args.n, args.seed, args.data_dir) for s in args.sources}
    path = args.work / f"claim_contrast_n{args.n}_seed{args.seed}.jsonl"
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
        "sources": report(by_source, records),
        "seconds_per_claim": round(float(np.mean([r["seconds"] for r in records.values()])), 2),
    }
    text = markdown(document)
    print(text)
    if args.out:
        (args.out / "claim_contrast.json").write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        (args.out / "claim_contrast.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

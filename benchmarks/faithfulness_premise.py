"""Faithfulness: judge a claim against the whole context, or against the sentences closest to it.

A 1.5B judge reading a 450-token article loses track of the one sentence a claim depends
on. This script compares, on QAGS claims of the calibration split (articles whose number
is divisible by 4, never measured by ``ragmeter bench qags``), the local judge's P(yes)
that the claim is supported by:

- ``full``: the whole article (what faithfulness did before ``evidence_sentences``);
- ``top<k>``: the k article sentences most similar to the claim (USE cosine), in article
  order, as one premise (what faithfulness does now with the local judge, k = 3);
- ``max<k>``: each of those k sentences alone, keeping the highest P(yes) (SummaC-style).

It reports ROC-AUC and balanced accuracy at P(yes) >= 0.5 with 95% bootstrap intervals
clustered by article, the best threshold on this split (for information only: it is fitted
here), and the judge's seconds and evaluated prompt tokens per claim.

Usage:
    python benchmarks/faithfulness_premise.py [--limit 80] [--variants full top3 max3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ragmeter.bench.report import git_commit
from ragmeter.bench.suites import in_qags_calibration_split, qags_rows
from ragmeter.data.text import split_sentences
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.metering import Usage, metered
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic, roc_auc

HERE = Path(__file__).resolve().parent


def closest_sentences(encoder: USEEncoder, claim: str, article: str, k: int) -> list[str]:
    sentences = split_sentences(article)
    vectors = encoder.encode([claim, *sentences])
    similarity = vectors[1:] @ vectors[0]
    chosen = sorted(np.argsort(-similarity)[:k])
    return [sentences[i] for i in chosen]


async def p_supported(judge: LocalJudge, encoder: USEEncoder, variant: str, claim: str, article: str) -> float:
    if variant == "full":
        (verdict,) = await judge.verdicts("supported", {"premise": [article]}, [claim], "en")
        return verdict.p_yes
    kind, k = re.fullmatch(r"(top|max)(\d+)", variant).groups()
    sentences = closest_sentences(encoder, claim, article, int(k))
    if kind == "top":
        (verdict,) = await judge.verdicts("supported", {"premise": [" ".join(sentences)]}, [claim], "en")
        return verdict.p_yes
    verdicts = [(await judge.verdicts("supported", {"premise": [s]}, [claim], "en"))[0] for s in sentences]
    return max(v.p_yes for v in verdicts)


def best_threshold(labels: list[int], scores: list[float]) -> tuple[float, float]:
    candidates = sorted(set(scores))
    best = max(candidates, key=lambda t: balanced_accuracy(labels, [int(s >= t) for s in scores]))
    return best, balanced_accuracy(labels, [int(s >= best) for s in scores])


async def run(variants: list[str], rows: list[dict], threads: int | None) -> dict:
    judge, encoder = LocalJudge(threads=threads), USEEncoder()
    labels = [int(r["faithful_majority"]) for r in rows]
    groups = [r["context"][:200] for r in rows]
    results = {}
    for variant in variants:
        scores, usage = [], Usage()
        for row in rows:
            with metered() as used:
                scores.append(await p_supported(judge, encoder, variant, row["claim"], row["context"]))
            usage.add(used)
        threshold, ba_best = best_threshold(labels, scores)
        results[variant] = {
            "roc_auc": bootstrap_statistic(roc_auc, labels, scores, groups=groups),
            "balanced_accuracy": bootstrap_statistic(balanced_accuracy, labels, [int(s >= 0.5) for s in scores], groups=groups),
            "best_threshold": threshold,
            "balanced_accuracy_at_best_threshold": ba_best,
            "seconds_per_claim": usage.seconds / len(rows),
            "tokens_evaluated_per_claim": usage.prompt_tokens_evaluated / len(rows),
            "calls_per_claim": usage.calls / len(rows),
            "scores": scores,
        }
        r = results[variant]
        print(
            f"{variant}: AUC {r['roc_auc']['value']:.3f} BA@0.5 {r['balanced_accuracy']['value']:.3f} best {threshold:.3f}->{ba_best:.3f}",
            flush=True,
        )
    await judge.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--limit", type=int, default=80, help="claims drawn (seeded) from the calibration split")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--variants", nargs="+", default=["full", "top3", "max3"])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    rows = [r for r in qags_rows(args.data_dir) if in_qags_calibration_split(r["id"])]
    random.Random(args.seed).shuffle(rows)
    rows = rows[: args.limit]
    rows.sort(key=lambda r: r["context"])  # claims of one article together: the article is read once
    started = time.perf_counter()
    results = asyncio.run(run(args.variants, rows, args.threads))
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "settings": {"limit": args.limit, "seed": args.seed, "threads": args.threads, "variants": args.variants},
        "claims": len(rows),
        "supported": sum(int(r["faithful_majority"]) for r in rows),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "results": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "faithfulness_premise.json").write_text(json.dumps(document, indent=1), encoding="utf-8")
    lines = [
        "# Faithfulness: whole context or closest sentences (QAGS calibration split)",
        "",
        f"{document['date']}, commit {document['commit']}; local judge; {len(rows)} claims ({document['supported']} supported) "
        f"drawn with seed {args.seed} from the QAGS calibration split (never measured by `ragmeter bench qags`). "
        f"Command: `python benchmarks/faithfulness_premise.py --limit {args.limit} --variants {' '.join(args.variants)}`",
        "",
        "| premise | ROC-AUC | balanced acc. (P >= 0.5) | best threshold on this split (BA) | calls / claim | tokens evaluated / claim | s / claim |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for variant, r in results.items():
        auc, ba = r["roc_auc"], r["balanced_accuracy"]
        lines.append(
            f"| {variant} | {auc['value']:.3f} [{auc['ci_low']:.3f}, {auc['ci_high']:.3f}] | {ba['value']:.3f} [{ba['ci_low']:.3f}, {ba['ci_high']:.3f}] | "
            f"{r['best_threshold']:.3f} ({r['balanced_accuracy_at_best_threshold']:.3f}) | {r['calls_per_claim']:.1f} | {r['tokens_evaluated_per_claim']:.0f} | {r['seconds_per_claim']:.1f} |"
        )
    (args.out / "faithfulness_premise.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Context relevance: prompt variants for the local judge, tried on a development split.

The units ``ragmeter bench msmarco rgb`` reports (the seeded draw of ``--test-limit``
passages, seed 0) are never used here: the development split takes passages only of
queries that draw does not touch, so a variant chosen on it is measured on held-out
queries afterwards. For each variant and set the script reports ROC-AUC and balanced
accuracy (P(yes) >= 0.5) with 95% bootstrap intervals clustered by query, and the local
judge's seconds and evaluated prompt tokens per passage.

Layouts:

- ``question_first``: the question is the shared part, each passage an item (how
  ``context_relevance`` asks: one call judges every chunk of a sample);
- ``context_first``: the passage is the shared part and the question the item, so the
  question comes last, right before the answer.

Usage:
    python benchmarks/relevance_prompts.py [--dev-limit 80] [--test-limit 200] [--variants ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from datetime import datetime, timezone
from pathlib import Path

from ragmeter.bench.report import git_commit
from ragmeter.bench.rgb import rgb_triples
from ragmeter.bench.suites import msmarco_triples
from ragmeter.bench.task import relevance_draw
from ragmeter.judges import prompts
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.metering import Usage, metered
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic, roc_auc

HERE = Path(__file__).resolve().parent

#: Candidate prompts, per language, in the format of judges/prompts/<lang>.yaml.
CANDIDATES = {
    "answer_in_context": {
        "layout": "context_first",
        "en": {
            "system": (
                "You judge retrieval for a question-answering system. Read the retrieved context, then decide whether "
                "it states the answer to the question, or a specific part of it. A context about the same topic, or "
                "naming the same people, places or things, that does not state what the question asks for does not "
                "contain the answer."
            ),
            "shared": ["context"],
            "item": "question",
            "asks": "Does the context state the answer to the question, or part of it?",
            "examples": [
                {
                    "shared": {
                        "context": "Overdue books cost 0.20 euros per day, up to 10 euros per book. Lost books are charged at their price."
                    },
                    "items": [
                        {"item": "How much is the fine for an overdue book?", "answer": "Yes"},
                        {"item": "How much does a library card cost?", "answer": "No"},
                    ],
                },
                {
                    "shared": {"context": "The Central Library opened in 1987 on Rue Garibaldi. Its reading room seats 300."},
                    "items": [
                        {"item": "When does the Central Library open on Sundays?", "answer": "No"},
                        {"item": "central library seats", "answer": "Yes"},
                    ],
                },
            ],
        },
        "zh": {
            "system": (
                "你负责评估问答系统的检索结果。先阅读检索到的上下文，再判断它是否写明了问题的答案或答案的具体一部分。"
                "只是话题相同、提到相同的人物、地点或事物，却没有写明问题所问内容的上下文，不算包含答案。"
            ),
            "shared": ["context"],
            "item": "question",
            "asks": "上下文是否写明了问题的答案或其中一部分？",
            "examples": [
                {
                    "shared": {"context": "逾期图书每天罚款 0.2 元，每本最多 10 元。遗失图书按原价赔偿。"},
                    "items": [
                        {"item": "逾期还书罚款多少？", "answer": "Yes"},
                        {"item": "办一张借书证要多少钱？", "answer": "No"},
                    ],
                },
                {
                    "shared": {"context": "市中心图书馆于 1987 年在解放路开馆，阅览室有 300 个座位。"},
                    "items": [
                        {"item": "市中心图书馆周日几点开门？", "answer": "No"},
                        {"item": "市中心图书馆座位数", "answer": "Yes"},
                    ],
                },
            ],
        },
    },
    "answer_in_context_question_first": {
        "layout": "question_first",
        "en": {
            "system": (
                "You judge retrieval for a question-answering system. Decide whether a retrieved context states the "
                "answer to the question, or a specific part of it. A context about the same topic, or naming the same "
                "people, places or things, that does not state what the question asks for is not relevant."
            ),
            "shared": ["question"],
            "item": "context",
            "asks": "Does the context state the answer to the question, or part of it?",
            "examples": [
                {
                    "shared": {"question": "How much is the fine for an overdue book?"},
                    "items": [
                        {"item": "Overdue books cost 0.20 euros per day, up to 10 euros per book.", "answer": "Yes"},
                        {"item": "Lost books are charged at their price. Books can be returned at any branch.", "answer": "No"},
                    ],
                },
                {
                    "shared": {"question": "When does the Central Library open on Sundays?"},
                    "items": [
                        {"item": "The Central Library opened in 1987 on Rue Garibaldi. Its reading room seats 300.", "answer": "No"},
                        {"item": "On Sundays the Central Library is open from 13:00 to 18:00.", "answer": "Yes"},
                    ],
                },
            ],
        },
        "zh": {
            "system": (
                "你负责评估问答系统的检索结果。判断一段检索到的上下文是否写明了问题的答案或答案的具体一部分。"
                "只是话题相同、提到相同的人物、地点或事物，却没有写明问题所问内容的上下文，不算相关。"
            ),
            "shared": ["question"],
            "item": "context",
            "asks": "上下文是否写明了问题的答案或其中一部分？",
            "examples": [
                {
                    "shared": {"question": "逾期还书罚款多少？"},
                    "items": [
                        {"item": "逾期图书每天罚款 0.2 元，每本最多 10 元。", "answer": "Yes"},
                        {"item": "遗失图书按原价赔偿。图书可以在任一分馆归还。", "answer": "No"},
                    ],
                },
                {
                    "shared": {"question": "市中心图书馆周日几点开门？"},
                    "items": [
                        {"item": "市中心图书馆于 1987 年在解放路开馆，阅览室有 300 个座位。", "answer": "No"},
                        {"item": "市中心图书馆周日开放时间为 13:00 至 18:00。", "answer": "Yes"},
                    ],
                },
            ],
        },
    },
}
#: Prompts already in judges/prompts/<lang>.yaml, with their layout.
BUILTIN = {"relevant": "question_first", "answerable": "context_first"}


def development_split(triples: list[tuple[str, str, int]], test_limit: int, dev_limit: int, seed: int) -> list[tuple[str, str, int]]:
    """Development units: passages of queries the bench's seeded test draw does not touch."""
    test_queries = {query for query, _, _ in relevance_draw(triples, test_limit, seed)}
    rest = [t for t in triples if t[0] not in test_queries]
    random.Random(seed + 1).shuffle(rest)
    return rest[:dev_limit]


def install_candidates() -> None:
    """Make the candidate prompts known to the prompt book, under their own task names."""
    for lang in prompts.LANGUAGES:
        tasks = prompts._load(lang)["tasks"]
        for name, candidate in CANDIDATES.items():
            tasks[name] = candidate[lang]


async def p_yes(judge: LocalJudge, variant: str, query: str, passage: str, lang: str) -> float:
    layout = BUILTIN.get(variant) or CANDIDATES[variant]["layout"]
    if variant == "answerable":
        shared, item = {"premise": passage}, query
    elif layout == "context_first":
        shared, item = {"context": passage}, query
    else:
        shared, item = {"question": query}, passage
    (verdict,) = await judge.verdicts(variant, shared, [item], lang)
    return verdict.p_yes


async def measure(judge: LocalJudge, variant: str, units: list[tuple[str, str, int]], lang: str) -> dict:
    scores, usage = [], Usage()
    for query, passage, _ in units:
        with metered() as used:
            scores.append(await p_yes(judge, variant, query, passage, lang))
        usage.add(used)
    labels = [label for _, _, label in units]
    groups = [query for query, _, _ in units]
    return {
        "units": len(units),
        "positives": sum(labels),
        "roc_auc": bootstrap_statistic(roc_auc, labels, scores, groups=groups),
        "balanced_accuracy": bootstrap_statistic(balanced_accuracy, labels, [int(s >= 0.5) for s in scores], groups=groups),
        "seconds_per_unit": usage.seconds / len(units),
        "tokens_evaluated_per_unit": usage.prompt_tokens_evaluated / len(units),
        "scores": scores,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--dev-limit", type=int, default=80, help="development passages per set")
    parser.add_argument("--test-limit", type=int, default=200, help="the bench draw to keep out (its --limit)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--variants", nargs="+", default=[*BUILTIN, *CANDIDATES])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    install_candidates()
    sets = {
        "msmarco": ("en", development_split(msmarco_triples(args.data_dir), args.test_limit, args.dev_limit, args.seed)),
        "rgb": ("zh", development_split(rgb_triples(args.data_dir), args.test_limit, args.dev_limit, args.seed)),
    }
    judge = LocalJudge(threads=args.threads)
    results: dict[str, dict[str, dict]] = {}
    started = time.perf_counter()
    for variant in args.variants:
        for name, (lang, units) in sets.items():
            results.setdefault(variant, {})[name] = asyncio.run(measure(judge, variant, units, lang))
            r = results[variant][name]
            print(
                f"{variant} {name}: AUC {r['roc_auc']['value']:.3f} BA {r['balanced_accuracy']['value']:.3f} {r['seconds_per_unit']:.1f} s/unit",
                flush=True,
            )
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "settings": vars(args) | {"data_dir": str(args.data_dir), "out": str(args.out), "threads": judge.threads},
        "wall_seconds": round(time.perf_counter() - started, 1),
        "results": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "relevance_prompts.json").write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")
    lines = [
        "# Context relevance: prompt variants on a development split",
        "",
        f"{document['date']}, commit {document['commit']}; local judge, {judge.threads} thread(s); "
        f"{args.dev_limit} development passages per set, from queries the bench's seed-{args.seed} draw of "
        f"{args.test_limit} does not touch. Command: `python benchmarks/relevance_prompts.py --dev-limit {args.dev_limit} "
        f"--test-limit {args.test_limit} --variants {' '.join(args.variants)}`",
        "",
        "| variant | layout | set | units (relevant) | ROC-AUC | balanced acc. (0.5) | s / passage | tokens evaluated / passage |",
        "|---|---|---|---:|---|---|---:|---:|",
    ]
    for variant, by_set in results.items():
        layout = BUILTIN.get(variant) or CANDIDATES[variant]["layout"]
        for name, r in by_set.items():
            auc, ba = r["roc_auc"], r["balanced_accuracy"]
            lines.append(
                f"| {variant} | {layout} | {name} | {r['units']} ({r['positives']}) | {auc['value']:.3f} [{auc['ci_low']:.3f}, {auc['ci_high']:.3f}] | "
                f"{ba['value']:.3f} [{ba['ci_low']:.3f}, {ba['ci_high']:.3f}] | {r['seconds_per_unit']:.1f} | {r['tokens_evaluated_per_unit']:.0f} |"
            )
    (args.out / "relevance_prompts.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Does the local judge rank claims better when it gives a reason before its verdict?

An experiment for faithfulness (issue 14), not a product path. For every sentence of the
seeded labelled units of ``claim_data.py``, the packaged 1.5B judge is asked two ways, on the
same evidence (the ``k`` premise sentences closest to the sentence, as faithfulness picks them):

- **direct**: faithfulness's own prompt; P(yes) from the next-token logits (what the product
  reads today);
- **reason first**: the same system prompt, premise and statement, but the few-shot examples
  answer ``Reason: <the example's reason> / Answer: Yes|No`` and the question asks for that
  form. The model writes its reason greedily (at most ``--max-reason`` tokens) up to
  ``Answer:``; P(yes) is read from the logits there.

Each answer is appended to a JSONL cache outside the repository (a stopped job resumes).
The report compares the two on each source: ROC-AUC and balanced accuracy at 0.5 of the
unit's score (the minimum over its sentences), with 95% intervals and the paired difference,
bootstrapped by document; and the seconds and tokens each costs. Nothing is fitted, so every
source is held out for both.

Usage (one model process at a time):
    python benchmarks/claim_reasoning.py --sources summedits-samsum qags-xsum --n 50 [--seed 0]
    python benchmarks/claim_reasoning.py --report-only ...   # write the report from the cache

Writes ``claim_reasoning.md`` and ``.json`` into --out. Data text is not quoted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from claim_data import DEFAULT_DATA_DIR, interleave, labelled_units
from claim_features import Evidence, load_cache

from ragmeter.bench.report import git_commit
from ragmeter.data.files import write_json, write_text
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.prompts import PromptBook, VerdictPrompt, fence
from ragmeter.results.stats import balanced_accuracy, roc_auc

VERSION = "r1"
#: The scorers compared: the two ways, and both together (the mean of their logits).
WAYS = ("direct", "reason_first", "both")
CACHE = Path("/work/trust_cache/claim_reasoning.jsonl")
OUT = Path(__file__).resolve().parent / "results"
#: The reason-first question, after the product's own question.
ASK_REASON = "First give your reason in one short sentence, then your answer, in the form:\nReason: ...\nAnswer: Yes or No"
ANSWER_MARK = "Answer:"


def reason_prompt(book: PromptBook, evidence: list[str]) -> VerdictPrompt:
    """Faithfulness's verdict prompt with reasons in its examples and asked for."""
    spec = book.task("supported")
    asks = "{item}\n" + spec["asks"].strip() + " " + ASK_REASON + "\n"
    examples = []
    for example in spec["examples"]:
        premise = fence("premise", example["shared"]["premise"]) + "\n"
        for case in example["items"]:
            user = premise + asks.format(item=fence("statement", case["item"]))
            examples.append((user, f"Reason: {case['reason']}\n{ANSWER_MARK} {case['answer']}"))
    direct = book.verdict("supported", {"premise": evidence})
    return VerdictPrompt(direct.system, tuple(examples), direct.shared, asks)


class TwoWays:
    """The local judge's P(yes) on one statement, asked directly and reason first."""

    def __init__(self, threads: int, max_reason: int):
        self.judge = LocalJudge(threads=threads)
        self.llm = self.judge._model()
        self.max_reason = max_reason
        self.stop = {self.llm.token_eos(), *self.llm.tokenize(b"<|im_end|>", add_bos=False, special=True)}

    def _p_yes(self, answers: tuple[str, str]) -> float:
        probabilities = self.judge._option_probabilities(self.judge._next_token_logits(), answers)
        return min(max(float(probabilities[0]), 0.0), 1.0)

    def direct(self, evidence: list[str], sentence: str) -> dict[str, Any]:
        prompt = PromptBook("en").verdict("supported", {"premise": evidence})
        head, shared, item = self.judge._memory.segments_of(prompt, prompt.item(sentence, "statement"))
        started = time.perf_counter()
        evaluated = self.judge._memory.reach([head, shared]) + self.judge._memory.evaluate(item)
        return {"p": self._p_yes(prompt.answers), "seconds": time.perf_counter() - started, "evaluated": evaluated}

    def reason_first(self, evidence: list[str], sentence: str) -> dict[str, Any]:
        prompt = reason_prompt(PromptBook("en"), evidence)
        head, shared, item = self.judge._memory.segments_of(prompt, prompt.item(sentence, "statement"))
        started = time.perf_counter()
        evaluated = self.judge._memory.reach([head, shared]) + self.judge._memory.evaluate(item)
        written: list[int] = []
        text, finished = "", False
        while len(written) < self.max_reason:
            token = int(np.argmax(self.judge._next_token_logits()))
            if token in self.stop:
                break
            written.append(token)
            evaluated += self.judge._memory.evaluate((token,))
            text = self.llm.detokenize(written).decode("utf-8", errors="ignore")
            if text.rstrip().endswith(ANSWER_MARK):
                finished = True
                break
        if not finished:  # the reason ran long or ended early: ask for the answer outright
            forced = tuple(self.llm.tokenize(f"\n{ANSWER_MARK}".encode(), add_bos=False, special=False))
            evaluated += self.judge._memory.evaluate(forced)
        return {
            "p": self._p_yes(prompt.answers),
            "seconds": time.perf_counter() - started,
            "evaluated": evaluated,
            "written": len(written),
            "reached_answer": finished,
            "reason": text.strip(),
        }


def key_of(evidence: list[str], sentence: str, max_reason: int) -> str:
    text = json.dumps([evidence, sentence, max_reason, VERSION], ensure_ascii=False)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def run(units: list[dict[str, Any]], threads: int, max_reason: int, cache: Path, k: int) -> None:
    done = load_cache(cache)
    evidence = Evidence(threads)
    jobs = []
    for u in units:
        for sentence in u["claims"]:
            chosen = evidence.closest([u["premise"]], sentence, k)
            key = key_of(chosen, sentence, max_reason)
            if key not in done:
                done[key] = {}  # asked once, however many units share the sentence
                jobs.append({"key": key, "evidence": chosen, "sentence": sentence})
    print(f"{len(jobs)} sentences to ask", flush=True)
    if not jobs:
        return
    asker = TwoWays(threads, max_reason)
    cache.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with cache.open("a", encoding="utf-8") as out:
        for n, job in enumerate(jobs, start=1):
            record = {"key": job["key"], "direct": asker.direct(job["evidence"], job["sentence"])}
            record["reason_first"] = asker.reason_first(job["evidence"], job["sentence"])
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            if n % 10 == 0 or n == len(jobs):
                rate = (time.perf_counter() - started) / n
                print(f"{n}/{len(jobs)} {rate:.1f} s a sentence, eta {rate * (len(jobs) - n) / 60:.0f} min", flush=True)


def _both(record: dict[str, Any]) -> float:
    """sigmoid of the mean of the two ways' logits: an ensemble of the two prompts."""
    logits = [math.log(p / (1 - p)) for p in (min(max(record[w]["p"], 1e-6), 1 - 1e-6) for w in ("direct", "reason_first"))]
    return 1 / (1 + math.exp(-sum(logits) / 2))


def unit_scores(units: list[dict[str, Any]], cache: Path, max_reason: int, k: int) -> list[dict[str, Any]]:
    """Per unit: label, document, and the minimum over its sentences of each scorer's P(yes)
    (:data:`WAYS`)."""
    done, evidence, rows = load_cache(cache), Evidence(1), []
    for u in units:
        records = [done.get(key_of(evidence.closest([u["premise"]], s, k), s, max_reason)) for s in u["claims"]]
        if not records or any(r is None for r in records):
            continue
        rows.append(
            {
                "source": u["source"],
                "doc": u["doc"],
                "label": u["label"],
                "direct": min(r["direct"]["p"] for r in records),
                "reason_first": min(r["reason_first"]["p"] for r in records),
                "both": min(_both(r) for r in records),
                "records": records,
            }
        )
    return rows


def _interval(values: list[float]) -> list[float]:
    return [round(float(np.percentile(values, 2.5)), 3), round(float(np.percentile(values, 97.5)), 3)]


def compare(rows: list[dict[str, Any]], resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """AUC and BA at 0.5 of each scorer, with bootstrap intervals by document and the paired
    difference from ``direct`` of the others."""
    labels = np.array([r["label"] for r in rows])
    scores = {w: np.array([r[w] for r in rows]) for w in WAYS}

    def measures(index: np.ndarray) -> dict[str, float] | None:
        y = labels[index]
        if y.min() == y.max():
            return None
        out = {}
        for way, s in scores.items():
            out[f"{way}_auc"] = roc_auc(y, s[index])
            out[f"{way}_ba"] = balanced_accuracy(y, s[index] >= 0.5)
        for way in WAYS[1:]:
            out[f"{way}_auc_gain"] = out[f"{way}_auc"] - out["direct_auc"]
            out[f"{way}_ba_gain"] = out[f"{way}_ba"] - out["direct_ba"]
        return out

    point = measures(np.arange(len(rows)))
    docs: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        docs.setdefault(r["doc"], []).append(i)
    groups = list(docs.values())
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        picked = rng.integers(0, len(groups), len(groups))
        m = measures(np.array([i for g in picked for i in groups[g]]))
        if m:
            draws.append(m)
    assert point is not None
    return {name: {"value": round(value, 3), "ci": _interval([d[name] for d in draws])} for name, value in point.items()}


def costs(rows: list[dict[str, Any]]) -> dict[str, Any]:
    records = [r for row in rows for r in row["records"]]
    out = {}
    for way in ("direct", "reason_first"):
        out[way] = {
            "seconds": round(float(np.mean([r[way]["seconds"] for r in records])), 2),
            "evaluated": round(float(np.mean([r[way]["evaluated"] for r in records])), 1),
        }
    out["reason_first"]["written"] = round(float(np.mean([r["reason_first"]["written"] for r in records])), 1)
    out["reason_first"]["reached_answer"] = round(float(np.mean([r["reason_first"]["reached_answer"] for r in records])), 3)
    out["sentences"] = len(records)
    return out


def report(by_source: dict[str, list[dict[str, Any]]], command: str, out: Path) -> None:
    results = {s: {"units": len(rows), "compare": compare(rows), "costs": costs(rows)} for s, rows in by_source.items() if rows}
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    payload = {"date": stamp, "commit": git_commit(), "command": command, "version": VERSION, "results": results}
    write_json(out / "claim_reasoning.json", payload)
    lines = [
        "# Reason first, then the verdict: the local judge on labelled claims",
        "",
        f"{stamp}, commit {payload['commit']}; packaged Qwen2.5-Coder-1.5B Q4_K_M, one thread. Generated by",
        "`benchmarks/claim_reasoning.py` (what is asked: its docstring). Nothing is fitted: every source is held out.",
        "",
        f"Command: `{command}`",
        "",
        "Unit score: the minimum over the unit's sentences of the judge's P(yes), no head, no lexical evidence;",
        "*both*: sigmoid of the mean of the two ways' logits. Intervals: 1,000 bootstrap resamples of documents;",
        "a gain is the scorer minus direct, paired.",
        "",
        "| source | units | scorer | ROC-AUC | AUC gain over direct | BA at 0.5 | BA gain over direct |",
        "|---|---:|---|---|---|---|---|",
    ]

    def cell(m: dict[str, Any]) -> str:
        return f"{m['value']:.3f} [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}]"

    for source, r in results.items():
        c = r["compare"]
        for way in WAYS:
            auc_gain = cell(c[f"{way}_auc_gain"]) if way != "direct" else "–"
            ba_gain = cell(c[f"{way}_ba_gain"]) if way != "direct" else "–"
            lines.append(
                f"| {source} | {r['units']} | {way.replace('_', ' ')} | {cell(c[f'{way}_auc'])} | {auc_gain} | {cell(c[f'{way}_ba'])} | {ba_gain} |"
            )
    lines += [
        "",
        "| source | sentences | direct: s / tokens evaluated | reason first: s / tokens evaluated | reason tokens written | reached `Answer:` |",
        "|---|---:|---|---|---:|---:|",
    ]
    for source, r in results.items():
        c = r["costs"]
        lines.append(
            f"| {source} | {c['sentences']} | {c['direct']['seconds']} / {c['direct']['evaluated']} "
            f"| {c['reason_first']['seconds']} / {c['reason_first']['evaluated']} | {c['reason_first']['written']} "
            f"| {c['reason_first']['reached_answer']:.0%} |"
        )
    write_text(out / "claim_reasoning.md", "\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--sources", nargs="+", required=True)
    parser.add_argument("--n", type=int, default=50, help="units drawn per source")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--k", type=int, default=3, help="evidence sentences (faithfulness: 3)")
    parser.add_argument("--max-reason", type=int, default=60, help="tokens the reason may take")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    groups = {s: labelled_units(s, args.n, args.seed, args.data_dir) for s in args.sources}
    if not args.report_only:
        run(interleave(list(groups.values())), args.threads, args.max_reason, args.cache, args.k)
    by_source = {s: unit_scores(units, args.cache, args.max_reason, args.k) for s, units in groups.items()}
    command = "python benchmarks/claim_reasoning.py " + " ".join(
        ["--sources", *args.sources, "--n", str(args.n), "--seed", str(args.seed), "--max-reason", str(args.max_reason)]
    )
    report(by_source, command, args.out)


if __name__ == "__main__":
    main()

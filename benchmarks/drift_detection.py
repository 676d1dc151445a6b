"""Query drift measured: a planted new topic at 10% of the recent traffic, and two windows of
one distribution.

Base traffic: the questions of ClapNQ's dev set (600 open-domain questions). Planted topics: the
questions of one RAGChecker domain (28 each: NLP research, personal finance, biomedicine,
writing, novels), none of which appear in the base. Each trial draws a reference window and a
disjoint recent window of the base questions; in a planted trial 10% of the recent window are
replaced by questions of the topic. The test is ``ragmeter drift queries``'s
(:func:`ragmeter.monitor.drift.query_drift`, alpha 0.01, 500 relabellings) on the packaged
encoder's embeddings. Targets: the planted topic found, and no alarm in at least 95% of the
same-distribution trials.

Usage:
    python benchmarks/drift_detection.py [--data-dir ../shared/data] [--trials 100] [--window 200]

Writes ``drift_detection.json`` and ``drift_detection.md`` into --out. The data is read by
path, never copied.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ragmeter.data.files import write_json, write_text
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.monitor.drift import query_drift
from ragmeter.results.inference import wilson_interval

ROOT = Path(__file__).resolve().parents[1]
TOPICS = {
    "kiwi": "NLP research (kiwi)",
    "robustqa/fiqa": "personal finance (fiqa)",
    "robustqa/bioasq": "biomedicine (bioasq)",
    "robustqa/writing": "writing",
    "novelqa": "novels (novelqa)",
}


def load(data_dir: Path) -> tuple[list[str], dict[str, list[str]]]:
    base = [json.loads(line)["question"] for line in (data_dir / "clapnq_dev.jsonl").open(encoding="utf-8")]
    topics: dict[str, list[str]] = {}
    for line in (data_dir / "ragchecker_meta_eval.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["annotator_slot"] == 0 and row["dataset"] in TOPICS:
            topics.setdefault(row["dataset"], []).append(row["question"])
    return base, topics


def run(base: list[str], topics: dict[str, list[str]], trials: int, window: int) -> list[dict]:
    """Alarm counts per condition, over ``trials`` seeded trials each."""
    encoder = USEEncoder()
    texts = base + [q for qs in topics.values() for q in qs]
    vectors = dict(zip(texts, encoder.encode(texts), strict=True))

    def encode(batch: list[str]) -> np.ndarray:
        return np.array([vectors[t] for t in batch])

    planted = max(1, window // 10)
    rows = []
    for condition in ["same distribution", *topics]:
        generator = np.random.default_rng(17)
        alarms, found_topic, began = 0, 0, time.perf_counter()
        for trial in range(trials):
            order = generator.permutation(len(base))
            reference = [base[i] for i in order[:window]]
            if condition == "same distribution":
                current = [base[i] for i in order[window : 2 * window]]
            else:
                chosen = generator.choice(len(topics[condition]), planted, replace=False)
                current = [base[i] for i in order[window : 2 * window - planted]] + [topics[condition][i] for i in chosen]
            result = query_drift(reference, current, encode, seed=trial)
            alarms += result.drift
            if condition != "same distribution" and result.grown_topics:
                found_topic += any(e in topics[condition] for e in result.grown_topics[0].examples)
        low, high = wilson_interval(alarms, trials)
        rows.append({
            "condition": TOPICS.get(condition, condition),
            "trials": trials,
            "alarms": alarms,
            "alarm_rate": alarms / trials,
            "alarm_rate_ci": [low, high],
            "top_grown_topic_is_the_planted_one": None if condition == "same distribution" else found_topic,
            "seconds_per_trial": (time.perf_counter() - began) / trials,
        })  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def render(report: dict) -> str:
    lines = [
        "# Query drift: a planted topic at 10% of traffic, and windows of one distribution",
        "",
        f"{report['date']}, commit {report['commit']}, {report['machine']['cpus']} CPUs (shared), Python {report['machine']['python']}.",
        f"Command: `{report['command']}`",
        "",
        f"Windows of {report['window']} questions (reference and recent, disjoint, from ClapNQ dev); planted trials replace "
        f"{report['window'] // 10} recent questions by questions of one RAGChecker domain. Test: nearest-neighbour scan, "
        "alpha 0.01, 500 relabellings, packaged USE encoder. Intervals: Wilson 95%.",
        "",
        "| condition | trials | alarms | alarm rate [95% CI] | top grown topic is the planted one | s per trial |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for row in report["rows"]:
        low, high = row["alarm_rate_ci"]
        found = (
            "–" if row["top_grown_topic_is_the_planted_one"] is None else f"{row['top_grown_topic_is_the_planted_one']} of {row['alarms']}"
        )
        lines.append(
            f"| {row['condition']} | {row['trials']} | {row['alarms']} | {row['alarm_rate']:.2f} [{low:.2f}, {high:.2f}] | {found} | {row['seconds_per_trial']:.2f} |"
        )
    return "\n".join([*lines, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data-dir", type=Path, default=ROOT.parent / "shared" / "data", help="folder with clapnq_dev.jsonl and ragchecker_meta_eval.jsonl"
    )
    parser.add_argument("--trials", type=int, default=100, help="trials per condition")
    parser.add_argument("--window", type=int, default=200, help="questions per window")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results", help="folder to write to")
    args = parser.parse_args()
    base, topics = load(args.data_dir)
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip(),
        "command": " ".join(["python benchmarks/drift_detection.py", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "window": args.window,
        "rows": run(base, topics, args.trials, args.window),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "drift_detection.json", report)
    write_text(args.out / "drift_detection.md", render(report))
    print(render(report))


if __name__ == "__main__":
    main()

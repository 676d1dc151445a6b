"""The robustness suite on RGB's Chinese questions: the naive and the hardened extractive
generators of ``examples/rgb_readers.py`` under every RGB condition (noise ratios, negative
rejection, counterfactual, information integration), compared question by question.

The data is read where it lies (``../shared/data/rgb_zh_refine.jsonl`` by default), never
copied. No model is involved: the suite measures the generators, whose answers are decided
by RGB's rule (every gold element in the response) and ragmeter's refusal patterns.

Usage:
    python benchmarks/robustness_rgb.py [--data ../shared/data/rgb_zh_refine.jsonl] [--questions 300] [--out benchmarks/results]

Writes ``robustness.json`` and ``robustness.md`` into --out/robustness_rgb/.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ragmeter.decide.robustness_suite import compare_suites, load_rgb, rgb_cases, run_suite, write_suite_report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from rgb_readers import hardened, naive  # noqa: E402  (the examples folder is not a package)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "rgb_zh_refine.jsonl")
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    rows = load_rgb(args.data)[: args.questions]
    cases = rgb_cases(rows)
    outcomes = [asyncio.run(run_suite(generate, cases)) for generate in (naive, hardened)]
    comparison = compare_suites(*outcomes, label_a="naive", label_b="hardened")
    source = f"{args.data.name}, first {len(rows)} questions, {len(cases)} cases, seed 0"
    for path in write_suite_report(comparison, args.out / "robustness_rgb", source):
        print(path)
    print((args.out / "robustness_rgb" / "robustness.md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()

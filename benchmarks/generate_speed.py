"""Speed and yield of ``ragmeter generate`` with the embedded judge on 2 CPU cores.

Generates ``--size`` questions (the default mix of types and styles, seed 0) from each
corpus with the packaged local model, without the answer cache, and reports questions per
minute (generated, and kept by the quality filter), the share kept per question type and
the rejection reasons, with every kept and rejected question listed for reading.

Corpora: the example knowledge base (English, then Chinese) and the ClapNQ development
passages (``../shared/data/clapnq_dev.jsonl``, read by path; a corpus nobody here wrote).

Usage:
    python benchmarks/generate_speed.py [--size 6] [--size-for clapnq=14] [--corpora en zh clapnq] [--clapnq ../shared/data/clapnq_dev.jsonl]
        [--out benchmarks/results] [--samples-dir DIR]

Writes ``generate_speed.json`` and ``generate_speed.md`` into --out; for ClapNQ they keep ids,
types and reasons only (its text stays out of the repository). The full kept and rejected
samples of every corpus go to --samples-dir (``<corpus>/kept.json``, ``rejected.json``), with
each corpus's journal: a run stopped midway and started again resumes the questions written.
``--corpora`` runs some corpora only (so that model time can be split into several jobs); the
corpora measured by an earlier invocation stay in the report, each with its own command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragmeter.data.files import write_json, write_text
from ragmeter.generate import GenerateOptions, agenerate
from ragmeter.judges.embeddings import BatchingEmbedder
from ragmeter.judges.local import LocalJudge

ROOT = Path(__file__).resolve().parents[1]


def corpora(clapnq: Path) -> dict[str, tuple[str, Path]]:
    """Corpus name -> (its short key for --corpora, its path)."""
    return {
        "example KB, English": ("en", ROOT / "examples" / "knowledge_base" / "en"),
        "example KB, Chinese": ("zh", ROOT / "examples" / "knowledge_base" / "zh"),
        CLAPNQ: ("clapnq", clapnq),
    }


#: The corpus nobody here wrote: its text (and questions and references drawn from it) stays out
#: of the repository's results; the full samples go to --samples-dir.
CLAPNQ = "ClapNQ dev passages"


def without_text(sample: dict[str, Any]) -> dict[str, Any]:
    """A generated sample reduced to what may be kept in the repository: id, type, style,
    language and the rejection reason's name; no question, reference or context text."""
    meta = sample.get("metadata", {})
    kept = {"id": sample.get("id"), "metadata": {k: meta[k] for k in ("type", "style", "language", "difficulty") if k in meta}}
    if "reject_reason" in sample:
        kept["reject_reason"] = sample["reject_reason"]
    return kept


async def measure(path: Path, size: int, work: Path) -> dict[str, Any]:
    """One generation run on ``path`` of ``size`` kept questions, journalled in ``work``, where
    its kept and rejected questions are also written (``kept.json``, ``rejected.json``): its
    summary, and those questions."""
    judge = LocalJudge(threads=2)
    try:
        generation = await agenerate([path], judge, BatchingEmbedder(), GenerateOptions(size=size, concurrency=1), work)
    finally:
        await judge.aclose()
    summary = generation.summary()
    minutes = summary["seconds"] / 60
    summary["kept_per_minute"] = round(summary["kept"] / minutes, 3) if minutes else None
    result = {"summary": summary, "kept": generation.kept(), "rejected": generation.rejected()}
    write_json(work / "kept.json", result["kept"])
    write_json(work / "rejected.json", result["rejected"])
    return result


def _row(sample: dict[str, Any], reason: str | None = None) -> str:
    meta = sample.get("metadata", {})
    not_copied = "(not copied)" if "user_input" not in sample else None
    question = not_copied or str(sample.get("user_input", "")).replace("|", "\\|").replace("\n", " ")
    reference = not_copied or str(sample.get("reference", "")).replace("|", "\\|").replace("\n", " ")[:160]
    cells = [sample.get("id", ""), meta.get("type", ""), meta.get("style", ""), question, reference]
    return "| " + " | ".join(str(c) for c in cells) + (f" | {reason} |" if reason is not None else " |")


def markdown(results: dict[str, dict[str, Any]]) -> str:
    """The results as a Markdown page."""
    lines = [
        "# ragmeter generate: speed and yield with the embedded judge",
        "",
        "Packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 2 threads, no answer cache, default mix and styles, seed 0, "
        "top-up rounds 2 (the default). The machine's 2 cores were shared with other work, so the speeds are lower bounds. "
        "`generated` counts every question written (top-up rounds included), `kept` those the filter kept.",
        "",
        "| corpus | command | commit | date | asked | generated | kept | rejected | seconds | generated / min | kept / min | judge calls |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        s = result["summary"]
        lines.append(
            f"| {name} | `{result.get('command', '')}` | {result.get('commit', '')} | {result.get('date', '')} | {s['asked']} | "
            f"{s['generated']} | {s['kept']} | {len(result['rejected'])} | {s['seconds']:.0f} | {s['generated_per_minute']} | "
            f"{s['kept_per_minute']} | {s['usage']['calls']} |"
        )
    lines += ["", "Asked / generated / kept per question type (kept counted by the type kept as):", ""]
    lines += ["| corpus | " + " | ".join(_types(results)) + " | relabelled |", "|---|" + "---|" * (len(_types(results)) + 1)]
    for name, result in results.items():
        by_type = result["summary"]["by_type"]
        cells = [
            f"{by_type[t]['asked']} / {by_type[t]['generated']} / {by_type[t]['kept']}" if t in by_type else "–" for t in _types(results)
        ]
        relabelled = ", ".join(f"{k} {v}" for k, v in result["summary"].get("relabelled", {}).items()) or "none"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {relabelled} |")
    lines += ["", "Rejected per filter reason (count, and share of the questions generated):", ""]
    reasons = list(dict.fromkeys(k for r in results.values() for k in r["summary"]["reasons"]))
    lines += ["| corpus | " + " | ".join(reasons) + " |", "|---|" + "---|" * len(reasons)]
    for name, result in results.items():
        counts, generated = result["summary"]["reasons"], max(result["summary"]["generated"], 1)
        lines.append(f"| {name} | " + " | ".join(f"{counts.get(k, 0)} ({counts.get(k, 0) / generated:.0%})" for k in reasons) + " |")
    for name, result in results.items():
        reasons_text = ", ".join(f"{k} {v}" for k, v in result["summary"]["reasons"].items()) or "none"
        dropped = result["summary"].get("boilerplate") or {}  # absent from reports older than the boilerplate filter
        lines += [
            "",
            f"## {name}",
            "",
            f"Rejection reasons: {reasons_text}.",
            "",
            f"Boilerplate dropped before chunking: {dropped.get('template_notices', '–')} wiki maintenance notices, "
            f"{dropped.get('repeated_sentences', '–')} sentences repeated across documents, "
            f"{dropped.get('documents_dropped', '–')} documents with nothing else.",
            "",
            "| id | type | style | question | reference |",
            "|---|---|---|---|---|",
        ]
        lines += [_row(s) for s in result["kept"]]
        lines += ["", "Rejected:", "", "| id | type | style | question | reference | reason |", "|---|---|---|---|---|---|"]
        lines += [
            _row(s, (s["reject_reason"] + (f": {s['reject_detail']}" if s.get("reject_detail") else "")).replace("|", "\\|"))
            for s in result["rejected"]
        ]
    return "\n".join(lines) + "\n"


def _types(results: dict[str, dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(t for r in results.values() for t in r["summary"]["by_type"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=6, help="Questions kept per corpus (top-up rounds replace rejects).")
    parser.add_argument(
        "--size-for", action="append", default=[], metavar="KEY=N", help="Another size for one corpus (en, zh or clapnq), e.g. clapnq=14."
    )
    parser.add_argument(
        "--corpora", nargs="+", choices=("en", "zh", "clapnq"), default=["en", "zh", "clapnq"], help="Which corpora to run."
    )
    parser.add_argument("--clapnq", type=Path, default=ROOT.parent / "shared" / "data" / "clapnq_dev.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument(
        "--samples-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "ragmeter-generate-speed",
        help="Where the full samples and the journals go (outside the repository).",
    )
    args = parser.parse_args()
    sizes = dict.fromkeys(("en", "zh", "clapnq"), args.size)
    for given in args.size_for:
        key, _, number = given.partition("=")
        if key not in sizes or not number.isdigit() or int(number) < 1:
            parser.error(f"--size-for {given!r}: expected en=N, zh=N or clapnq=N with N a positive whole number")
        sizes[key] = int(number)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    command = ("python benchmarks/generate_speed.py " + " ".join(sys.argv[1:])).strip()
    args.out.mkdir(parents=True, exist_ok=True)
    report = args.out / "generate_speed.json"
    earlier = json.loads(report.read_text(encoding="utf-8")).get("results", {}) if report.exists() else {}
    results = {name: r for name, r in earlier.items() if "command" in r}  # older reports had one command for all
    for name, (key, path) in corpora(args.clapnq).items():
        if key not in args.corpora:
            continue
        print(f"{name}: {path}", file=sys.stderr)
        work = args.samples_dir / key
        result = asyncio.run(measure(path, sizes[key], work))
        print(f"full samples: {work}", file=sys.stderr)
        if name == CLAPNQ:
            result = {**result, **{k: [without_text(x) for x in result[k]] for k in ("kept", "rejected")}}
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        results[name] = {"command": command, "commit": commit, "date": when, **result}
        # Written after each corpus, so that a run stopped midway keeps what it measured.
        write_json(report, {"results": results})
        write_text(args.out / "generate_speed.md", markdown(results))


if __name__ == "__main__":
    main()

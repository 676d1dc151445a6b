"""Speed and yield of ``ragmeter generate`` with the embedded judge on 2 CPU cores.

Generates ``--size`` questions (the default mix of types and styles, seed 0) from each
corpus with the packaged local model, without the answer cache, and reports questions per
minute (generated, and kept by the quality filter), the share kept per question type and
the rejection reasons, with every kept and rejected question listed for reading.

Corpora: the example knowledge base (English, then Chinese) and the ClapNQ development
passages (``../shared/data/clapnq_dev.jsonl``, read by path; a corpus nobody here wrote).

Usage:
    python benchmarks/generate_speed.py [--size 6] [--clapnq ../shared/data/clapnq_dev.jsonl] [--out benchmarks/results]

Writes ``generate_speed.json`` and ``generate_speed.md`` into --out; for ClapNQ they keep ids,
types and reasons only (its text stays out of the repository), the full samples go to
--samples-dir.
"""

from __future__ import annotations

import argparse
import asyncio
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


def corpora(clapnq: Path) -> dict[str, Path]:
    return {
        "example KB, English": ROOT / "examples" / "knowledge_base" / "en",
        "example KB, Chinese": ROOT / "examples" / "knowledge_base" / "zh",
        CLAPNQ: clapnq,
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


async def measure(path: Path, size: int) -> dict[str, Any]:
    """One generation run on ``path``: its summary, and the kept and rejected questions."""
    judge = LocalJudge(threads=2)
    try:
        generation = await agenerate([path], judge, BatchingEmbedder(), GenerateOptions(size=size, concurrency=1))
    finally:
        await judge.aclose()
    summary = generation.summary()
    minutes = summary["seconds"] / 60
    summary["kept_per_minute"] = round(summary["kept"] / minutes, 3) if minutes else None
    return {"summary": summary, "kept": generation.kept(), "rejected": generation.rejected()}


def _row(sample: dict[str, Any], reason: str | None = None) -> str:
    meta = sample.get("metadata", {})
    not_copied = "(not copied)" if "user_input" not in sample else None
    question = not_copied or str(sample.get("user_input", "")).replace("|", "\\|").replace("\n", " ")
    reference = not_copied or str(sample.get("reference", "")).replace("|", "\\|").replace("\n", " ")[:160]
    cells = [sample.get("id", ""), meta.get("type", ""), meta.get("style", ""), question, reference]
    return "| " + " | ".join(str(c) for c in cells) + (f" | {reason} |" if reason is not None else " |")


def markdown(results: dict[str, dict[str, Any]], command: str, commit: str, size: int) -> str:
    """The results as a Markdown page."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# ragmeter generate: speed and yield with the embedded judge",
        "",
        f"Command: `{command}`  ",
        f"Date: {when}; commit {commit}; packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 2 threads, no answer cache, "
        f"{size} questions per corpus, default mix and styles, seed 0. The machine's 2 cores were shared with other work, "
        "so the speeds are lower bounds.",
        "",
        "| corpus | asked | generated | kept | seconds | generated / min | kept / min | judge calls |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        s = result["summary"]
        lines.append(
            f"| {name} | {s['asked']} | {s['generated']} | {s['kept']} | {s['seconds']:.0f} | {s['generated_per_minute']} | "
            f"{s['kept_per_minute']} | {s['usage']['calls']} |"
        )
    lines += ["", "Kept / asked per question type:", "", "| corpus | " + " | ".join(_types(results)) + " |"]
    lines.append("|---|" + "---|" * len(_types(results)))
    for name, result in results.items():
        by_type = result["summary"]["by_type"]
        cells = [f"{by_type[t]['kept']}/{by_type[t]['asked']}" if t in by_type else "–" for t in _types(results)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for name, result in results.items():
        reasons = ", ".join(f"{k} {v}" for k, v in result["summary"]["reasons"].items()) or "none"
        lines += [
            "",
            f"## {name}",
            "",
            f"Rejection reasons: {reasons}.",
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
    parser.add_argument("--size", type=int, default=6, help="Questions per corpus.")
    parser.add_argument("--clapnq", type=Path, default=ROOT.parent / "shared" / "data" / "clapnq_dev.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument(
        "--samples-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "ragmeter-generate-speed",
        help="Where the full ClapNQ samples go.",
    )
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    command = "python benchmarks/generate_speed.py " + " ".join(sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, path in corpora(args.clapnq).items():
        print(f"{name}: {path}", file=sys.stderr)
        results[name] = asyncio.run(measure(path, args.size))
        if name == CLAPNQ:
            args.samples_dir.mkdir(parents=True, exist_ok=True)
            write_json(args.samples_dir / "clapnq_samples.json", results[name])
            print(f"full ClapNQ samples: {args.samples_dir / 'clapnq_samples.json'}", file=sys.stderr)
            results[name] = {**results[name], **{k: [without_text(x) for x in results[name][k]] for k in ("kept", "rejected")}}
        # Written after each corpus, so that a run stopped midway keeps what it measured.
        write_json(args.out / "generate_speed.json", {"command": command, "commit": commit, "results": results})
        write_text(args.out / "generate_speed.md", markdown(results, command.strip(), commit, args.size))


if __name__ == "__main__":
    main()

"""How `ragmeter generate` scales with the size of the knowledge base: time and peak memory
of reading, chunking, embedding and linking it.

Runs ``ragmeter generate KB --size 2 --dry-run`` as a separate process on a synthetic
Markdown document of N megabytes (sections of sentences drawn, with a fixed seed, from a
small vocabulary of names and verbs, so that nearly every pair of chunks shares key phrases:
the worst case for the knowledge graph). A dry run calls no model, so what is measured is
everything before the first question. Several checkouts can be measured side by side in one
run (``--compare REV``), alternating, as ``benchmarks/scale.py`` does.

Usage:
    python benchmarks/generate_scale.py [--megabytes 0.5 1 2 5] [--compare 61864cf [--compare-up-to 2]] [--out benchmarks/results]

Writes ``generate_scale.json`` and ``generate_scale.md`` into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scale import checkouts, save_report

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    "Forge",
    "Vault",
    "Atlas",
    "Beacon",
    "release",
    "platform",
    "secret",
    "manager",
    "team",
    "month",
    "approves",
    "merges",
    "rotates",
    "runs",
    "deploys",
    "reviews",
    "pipeline",
    "branch",
    "service",
    "dashboard",
    "incident",
    "owner",
    "migration",
    "freeze",
    "schedule",
    "budget",
    "region",
]


def write_knowledge_base(folder: Path, megabytes: float, seed: int = 7) -> None:
    """One Markdown document of about ``megabytes`` MB: sections of five 60-word paragraphs."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    target, written, section = int(megabytes * 1_000_000), 0, 0
    with (folder / "handbook.md").open("w", encoding="utf-8") as out:
        while written < target:
            paragraphs = [" ".join(rng.choice(WORDS) for _ in range(60)).capitalize() + "." for _ in range(5)]
            text = f"## Section {section}\n\n" + "\n\n".join(paragraphs) + "\n\n"
            out.write(text)
            written += len(text.encode("utf-8"))
            section += 1


def measure(source: Path, kb: Path, work: Path) -> dict:
    """Run ``ragmeter generate KB --size 2 --dry-run`` from ``source`` and measure it."""
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)  # every measurement embeds its chunks itself
    env = {**os.environ, "PYTHONPATH": str(source), "RAGMETER_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ragmeter", "generate", str(kb), "--size", "2", "--dry-run", "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"generate failed ({done.returncode}): {done.stderr[-2000:]}")
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, nargs="+", default=[0.5, 1, 2, 5])
    parser.add_argument("--compare", nargs="*", default=[], help="Other revisions to measure side by side.")
    parser.add_argument("--compare-up-to", type=float, default=2, help="Largest size (MB) the other revisions are measured at.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragmeter-generate-scale-") as tmp:
        work = Path(tmp)
        sources = checkouts(work, args.compare)
        for megabytes in sorted(args.megabytes):
            kb = work / f"kb_{megabytes}"
            write_knowledge_base(kb, megabytes)
            for label, source in sources.items():
                if not label.startswith("HEAD") and megabytes > args.compare_up_to:
                    continue
                # A fresh process per measurement keeps each peak RSS its own.
                child = [sys.executable, __file__, "--child", str(source), str(kb), str(work)]
                row = json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
                rows.append({"code": label, "megabytes": megabytes, **row})
                print(json.dumps(rows[-1]), flush=True)
    _write(args, rows)


def _write(args: argparse.Namespace, rows: list[dict]) -> None:
    report = save_report(args.out, "generate_scale", rows)
    commit = report["commit"]
    lines = [
        "# `ragmeter generate` on a large knowledge base: everything before the first question",
        "",
        f"{report['date']}, commit {commit}, {report['machine']['cpus']} CPUs, Python {report['machine']['python']}.",
        f"Command: `{report['command']}`. Each row is one `ragmeter generate KB --size 2 --dry-run` process",
        "on one synthetic Markdown document (reading, chunking, embedding and linking; no model call).",
        "",
        "| code | MB | seconds | peak RSS MB |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {r['code']} | {r['megabytes']} | {r['seconds']} | {r['peak_rss_mb']} |" for r in rows]
    (args.out / "generate_scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        source, kb, work = sys.argv[2:5]
        print(json.dumps(measure(Path(source), Path(kb), Path(work))))
    else:
        main()

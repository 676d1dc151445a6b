"""How `ragmeter eval` scales with the number of samples: time, peak memory, file sizes.

Runs the documented command, `ragmeter eval DATA -m model-free -o DIR`, as a separate
process on the bundled examples repeated to N samples (ids made unique, texts shared: the
case of a team scoring a production log sample with model-free metrics), and measures wall
time, samples per second, the child's peak RSS, and the sizes of what it wrote. Several
checkouts can be measured side by side in one run (``--compare REV``): the committed HEAD and each revision are
exported into a temporary folder and run with the same interpreter, alternating sizes, so
that a shared and noisy machine affects both alike.

Usage:
    python benchmarks/scale.py [--sizes 1000 10000 100000] [--compare 74e783b [--compare-up-to 10000]] [--out benchmarks/results]

Writes ``scale.json`` and ``scale.md`` into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def write_samples(path: Path, n: int) -> None:
    """The bundled examples repeated to ``n`` samples with unique ids."""
    rows = [
        json.loads(line) for name in ("dev_platform_en.jsonl", "dev_platform_zh.jsonl") for line in (EXAMPLES / name).open(encoding="utf-8")
    ]
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = dict(rows[i % len(rows)])
            row["id"] = f"{row['id']}-{i // len(rows)}"
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def export(revision: str, into: Path) -> Path:
    """The ``src`` folder of ``revision``, exported into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def checkouts(work: Path, revisions: list[str]) -> dict[str, Path]:
    """The ``src`` folders to measure, exported into ``work``: the committed HEAD (labelled
    ``HEAD <hash>``) and each of ``revisions`` (labelled by itself)."""
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    (work / "head").mkdir()
    sources = {f"HEAD {head}": export("HEAD", work / "head")}
    for revision in revisions:
        (work / revision).mkdir()
        sources[revision] = export(revision, work / revision)
    return sources


def measure(source: Path, data: Path, out: Path, n: int) -> dict:
    """Run `ragmeter eval` from ``source`` and measure it."""
    shutil.rmtree(out, ignore_errors=True)
    cache = out.parent / f"cache-{out.name}"
    shutil.rmtree(cache, ignore_errors=True)  # every measurement embeds its texts itself
    env = {**os.environ, "PYTHONPATH": str(source), "RAGMETER_CACHE_DIR": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ragmeter", "eval", str(data), "-m", "model-free", "-o", str(out), "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if done.returncode != 0:
        raise SystemExit(f"eval failed ({done.returncode}): {done.stderr[-2000:]}")

    def size(name: str) -> float:
        path = out / name
        return round(path.stat().st_size / 1e6, 2) if path.exists() else 0.0

    return {
        "samples": n,
        "seconds": round(seconds, 2),
        "samples_per_second": round(n / seconds, 1),
        # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: sizes run smallest first.
        "peak_rss_mb": round(max(peak, before) / 1024, 1),
        "report_html_mb": size("report.html"),
        "results_jsonl_mb": size("results.jsonl"),
        "journal_mb": size("journal.jsonl"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--compare", nargs="*", default=[], help="Other revisions to measure side by side.")
    parser.add_argument("--compare-up-to", type=int, default=10_000, help="Largest size the other revisions are measured at.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragmeter-scale-") as tmp:
        work = Path(tmp)
        sources = checkouts(work, args.compare)
        for n in sorted(args.sizes):
            data = work / f"samples_{n}.jsonl"
            write_samples(data, n)
            for label, source in sources.items():
                if not label.startswith("HEAD") and n > args.compare_up_to:
                    continue
                # A fresh process per measurement keeps each peak RSS its own.
                row = json.loads(
                    subprocess.run(
                        [sys.executable, __file__, "--child", str(source), str(data), str(work / f"out_{n}"), str(n)],
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout.splitlines()[-1]
                )
                rows.append({"code": label, **row})
                print(json.dumps(rows[-1]), flush=True)
    _write(args, rows)


def save_report(out: Path, name: str, rows: list[dict]) -> dict:
    """Write ``<name>.json`` into ``out``: date, commit, machine, the command that ran (this
    process's arguments) and ``rows``; returns it, for the Markdown table."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "command": f"python benchmarks/{Path(sys.argv[0]).name} " + " ".join(sys.argv[1:]),
        "results": rows,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def _write(args: argparse.Namespace, rows: list[dict]) -> None:
    report = save_report(args.out, "scale", rows)
    commit = report["commit"]
    lines = [
        "# `ragmeter eval` at scale: model-free metrics",
        "",
        f"{report['date']}, commit {commit}, {report['machine']['cpus']} CPUs, Python {report['machine']['python']}.",
        f"Command: `{report['command']}`. Each row is one `ragmeter eval DATA -m model-free` process.",
        "",
        "| code | samples | seconds | samples/s | peak RSS MB | report.html MB | results.jsonl MB | journal MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['code']} | {r['samples']:,} | {r['seconds']} | {r['samples_per_second']} | {r['peak_rss_mb']} | "
            f"{r['report_html_mb']} | {r['results_jsonl_mb']} | {r['journal_mb']} |"
        )
    (args.out / "scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        source, data, out, n = sys.argv[2:6]
        print(json.dumps(measure(Path(source), Path(data), Path(out), int(n))))
    else:
        main()

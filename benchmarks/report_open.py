"""How long a browser takes to open the HTML report of a large run.

Writes the bundled examples repeated to ``--samples`` samples (as ``benchmarks/scale.py``
does), runs the documented command ``ragmeter eval DATA -m model-free`` once, then opens the
run's ``report.html`` in Debian's Chromium (headless, driven by Playwright, a fresh page each
time) ``--repeat`` times and measures, from navigation start: the DOM ready (parsed, scripts
run), the load event, and the first contentful paint. The report is meant to open in under
2 seconds at any run size (issue 13): its size no longer grows with the number of samples
(6.87, 6.86 and 6.88 MB at 1,000, 10,000 and 100,000 samples: ``benchmarks/results/scale.md``).

Usage:
    python benchmarks/report_open.py [--samples 10000] [--repeat 5] [--run DIR] [--out benchmarks/results]

``--run DIR`` measures an existing run directory instead of making one. Needs ``/usr/bin/chromium``
(``scripts/install-chromium.sh``) and Playwright for Python (the dev extras). Writes
``report_open.json`` and ``report_open.md`` into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import ROOT, write_samples

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
TIMINGS = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  return {dom_ready: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, first_paint: paint ? paint.startTime : null};
}"""


def make_run(samples: int, work: Path) -> Path:
    """A run directory of ``samples`` samples scored with the model-free metrics."""
    data, out = work / "samples.jsonl", work / "run"
    write_samples(data, samples)
    env = {**os.environ, "RAGMETER_CACHE_DIR": str(work / "cache")}
    command = [sys.executable, "-m", "ragmeter", "eval", str(data), "-m", "model-free", "-o", str(out), "--no-progress"]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"eval failed ({done.returncode}): {done.stderr[-2000:]}")
    return out


def open_times(report: Path, repeat: int) -> list[dict[str, float | None]]:
    """Milliseconds from navigation start to DOM ready, load and first paint, per opening."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).is_file():
        raise SystemExit(f"{CHROMIUM} is missing: run scripts/install-chromium.sh")
    found = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(repeat):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                started = time.perf_counter()
                page.goto(report.resolve().as_uri(), wait_until="load")
                wall = (time.perf_counter() - started) * 1000
                page.wait_for_timeout(200)  # the first paint entry is recorded after load
                found.append({**page.evaluate(TIMINGS), "goto_wall": wall})
                page.close()
        finally:
            browser.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=10_000, help="Size of the run to make (ignored with --run).")
    parser.add_argument("--repeat", type=int, default=5, help="How many times the report is opened.")
    parser.add_argument("--run", type=Path, help="An existing run directory to measure.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragmeter-report-open-") as tmp:
        run = args.run or make_run(args.samples, Path(tmp))
        report = run / "report.html"
        n_samples = json.loads((run / "run.json").read_text(encoding="utf-8"))["run"]["n_samples"]
        size_mb = round(report.stat().st_size / 1e6, 2)
        times = open_times(report, args.repeat)
    measured = {key: [t[key] for t in times if t[key] is not None] for key in times[0]}
    median = {key: round(statistics.median(values), 1) if values else None for key, values in measured.items()}
    worst = {key: round(max(values), 1) if values else None for key, values in measured.items()}
    _write(args, {"samples": n_samples, "report_html_mb": size_mb, "openings": len(times), "median_ms": median, "worst_ms": worst})


def _write(args: argparse.Namespace, found: dict) -> None:
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    version = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip()
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "browser": version},
        "command": "python benchmarks/report_open.py " + " ".join(sys.argv[1:]),
        **found,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report_open.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    median, worst = found["median_ms"], found["worst_ms"]
    lines = [
        "# Opening the HTML report of a large run",
        "",
        f"{report['date']}, commit {commit}, {report['machine']['cpus']} CPUs, {version}, headless.",
        f"Command: `{report['command']}`. A run of {found['samples']:,} samples (model-free metrics);",
        f"report.html is {found['report_html_mb']} MB. Opened {found['openings']} times, a fresh page each time;",
        "milliseconds from navigation start (the browser's own Navigation and Paint Timing entries).",
        "",
        "| measure | median ms | worst ms |",
        "|---|---:|---:|",
        f"| DOM ready (parsed, scripts run) | {median['dom_ready']} | {worst['dom_ready']} |",
        f"| load event | {median['load']} | {worst['load']} |",
        f"| first contentful paint | {median['first_paint']} | {worst['first_paint']} |",
        f"| `page.goto` until load, wall clock | {median['goto_wall']} | {worst['goto_wall']} |",
    ]
    (args.out / "report_open.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

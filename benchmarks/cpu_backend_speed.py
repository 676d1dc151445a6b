"""Prompt reading and generation speed of two llama-cpp-python builds, side by side.

``make install`` builds llama-cpp-python portable (``GGML_NATIVE=OFF``: AVX2 kernels, the same
scores on every x86-64 CPU with AVX2). The opt-in build of the README adds one CPU backend per
instruction-set level (``GGML_BACKEND_DL=ON GGML_CPU_ALL_VARIANTS=ON``), of which the local judge
loads the best one this CPU runs (``ragmeter.judges.local_model.load_backends``). This
benchmark compares two builds, each installed in its own virtualenv: the packaged model reads the same text in batches of 64, 128
and 512 tokens (the sizes of the judge's prompt segments) and then generates 40 tokens one by
one. The two interpreters take turns, round after round, so load from other work on the
machine hits both alike; the best of each build's rounds is reported.

Usage:
    python benchmarks/cpu_backend_speed.py --python A=/path/to/venv-a/bin/python --python B=/path/to/venv-b/bin/python [--rounds 3]

Each interpreter needs llama-cpp-python and ragmeter importable (``pip install -e .`` without
extras is enough besides the wheel). Writes ``cpu_backend_speed.json`` and ``.md`` into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

BATCHES = (64, 128, 512)
GENERATED = 40


def probe() -> dict:
    """Run in the build under test: its instruction sets and its speeds on the packaged model."""
    import llama_cpp

    from ragmeter.judges.local_model import load_backends, packaged_model_path

    load_backends()
    llm = llama_cpp.Llama(
        model_path=str(packaged_model_path()), n_ctx=4096, n_threads=2, n_threads_batch=2, n_batch=512, seed=0, verbose=False
    )
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")[:8000]
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    figures: dict = {"system": llama_cpp.llama_print_system_info().decode().strip()}
    for size in BATCHES:
        llm.reset()
        started = time.perf_counter()
        llm.eval(tokens[:size])
        figures[f"read_{size}_tokens_per_s"] = size / (time.perf_counter() - started)
    llm.reset()
    llm.eval(tokens[:200])
    started = time.perf_counter()
    for token in tokens[200 : 200 + GENERATED]:
        llm.eval([token])
    figures["generate_ms_per_token"] = 1000 * (time.perf_counter() - started) / GENERATED
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", action="append", required=True, help="NAME=interpreter of one build (give two)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe()))
        return
    builds = dict(entry.split("=", 1) for entry in args.python)
    rounds: dict[str, list[dict]] = {name: [] for name in builds}
    for _ in range(args.rounds):
        for name, python in builds.items():
            done = subprocess.run([python, __file__, "--probe", "--python", "x=x"], capture_output=True, text=True, check=False)
            if done.returncode:
                sys.exit(f"{name}: the probe failed:\n{done.stderr[-2000:]}")
            rounds[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    best = {}
    for name, runs in rounds.items():
        figures = {"system": runs[0]["system"]}
        for key in runs[0]:
            if key.startswith("read_"):
                figures[key] = round(max(r[key] for r in runs), 1)
        figures["generate_ms_per_token"] = round(min(r["generate_ms_per_token"] for r in runs), 1)
        best[name] = figures
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count()},
        "rounds": args.rounds,
        "builds": best,
        "all_rounds": rounds,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cpu_backend_speed.json").write_text(json.dumps(report, indent=1))
    names = list(best)
    lines = [
        "# llama-cpp-python builds side by side: prompt reading and generation",
        "",
        f"{report['date']}, {report['machine']['cpus']} CPUs, packaged model, 2 threads; best of {args.rounds} rounds, "
        "the builds taking turns. Command: `python benchmarks/cpu_backend_speed.py "
        + " ".join(f"--python {n}=<its venv>/bin/python" for n in names)
        + f" --rounds {args.rounds}`.",
        "",
        "| build | " + " | ".join(f"read, {s}-token batch (tokens/s)" for s in BATCHES) + " | generate (ms/token) |",
        "|---|" + "---:|" * (len(BATCHES) + 1),
    ]
    for name, f in best.items():
        lines.append(f"| {name} | " + " | ".join(str(f[f"read_{s}_tokens_per_s"]) for s in BATCHES) + f" | {f['generate_ms_per_token']} |")
    if len(names) == 2:
        a, b = (best[n] for n in names)
        ratios = ", ".join(f"{s}-token reads {b[f'read_{s}_tokens_per_s'] / a[f'read_{s}_tokens_per_s']:.2f}x" for s in BATCHES)
        lines += [
            "",
            f"{names[1]} against {names[0]}: {ratios}; generation {a['generate_ms_per_token'] / b['generate_ms_per_token']:.2f}x.",
        ]
    lines += ["", "Instruction sets each build reported:", ""] + [f"- {n}: `{f['system']}`" for n, f in best.items()]
    (args.out / "cpu_backend_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

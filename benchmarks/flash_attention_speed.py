"""llama.cpp's flash attention on the CPU: does it make the local judge read or write faster?

The local judge loads the packaged model without flash attention (llama-cpp-python's default).
This benchmark loads it twice in one process, with ``flash_attn`` off and on, and measures, the
two taking turns round after round so that load from other work on the machine hits both alike:

- reading 512 tokens into an empty memory (a task's few-shot head);
- reading 128 tokens after 1,000 already read (a claim or a context after its prefix: attention
  then spans the whole prefix, where flash attention should matter most);
- writing 30 tokens one by one after 1,128 (a generated reply).

The best round of each is reported, and the largest difference between the two models' logits
of the next token after the same text: flash attention sums in another order, so it can change
verdicts as a different CPU kernel does.

Usage:
    python benchmarks/flash_attention_speed.py [--rounds 3] [--out benchmarks/results]

Writes ``flash_attention_speed.json`` and ``.md`` into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ragmeter.judges.local_model import load_backends, packaged_model_path

ROOT = Path(__file__).resolve().parents[1]
#: (name, tokens already read, tokens read or written) of each measure.
HEAD, LATE_READ, WRITE = ("read 512 from empty", 0, 512), ("read 128 after 1,000", 1000, 128), ("write 30 after 1,128", 1128, 30)


def _model(flash_attn: bool):
    import llama_cpp

    return llama_cpp.Llama(
        model_path=str(packaged_model_path()),
        n_ctx=4096,
        n_threads=2,
        n_threads_batch=2,
        n_batch=512,
        seed=0,
        flash_attn=flash_attn,
        verbose=False,
    )


def _logits(llm) -> np.ndarray:
    import llama_cpp

    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).copy()


def one_round(llm, tokens: list[int]) -> tuple[dict[str, float], np.ndarray]:
    """Tokens per second of each measure, and the logits after the last token written."""
    figures = {}
    llm.reset()
    started = time.perf_counter()
    llm.eval(tokens[: HEAD[2]])
    figures[HEAD[0]] = HEAD[2] / (time.perf_counter() - started)
    llm.eval(tokens[HEAD[2] : LATE_READ[1]])
    started = time.perf_counter()
    llm.eval(tokens[LATE_READ[1] : LATE_READ[1] + LATE_READ[2]])
    figures[LATE_READ[0]] = LATE_READ[2] / (time.perf_counter() - started)
    started = time.perf_counter()
    for token in tokens[WRITE[1] : WRITE[1] + WRITE[2]]:
        llm.eval([token])
    figures[WRITE[0]] = WRITE[2] / (time.perf_counter() - started)
    return figures, _logits(llm)


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    load_backends()
    models = {"off": _model(False), "on": _model(True)}
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    tokens = models["off"].tokenize(text.encode("utf-8"), add_bos=True, special=False)[: WRITE[1] + WRITE[2]]
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in models}
    last: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, llm in models.items():
            figures, last[name] = one_round(llm, tokens)
            rounds[name].append(figures)
    best = {name: {key: round(max(r[key] for r in runs), 1) for key in runs[0]} for name, runs in rounds.items()}
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {"cpus": os.cpu_count()},
        "rounds": args.rounds,
        "tokens_per_second": best,
        "all_rounds": rounds,
        "largest_logit_difference": round(float(np.abs(last["on"] - last["off"]).max()), 3),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "flash_attention_speed.json").write_text(json.dumps(report, indent=1))
    measures = [HEAD[0], LATE_READ[0], WRITE[0]]
    lines = [
        "# Flash attention on the CPU: the packaged model with and without it",
        "",
        f"{report['date']}, commit {report['commit']}, {report['machine']['cpus']} CPUs, packaged model, 2 threads; "
        f"best of {args.rounds} rounds, the two taking turns. Command: `python benchmarks/flash_attention_speed.py "
        f"--rounds {args.rounds}`.",
        "",
        "| flash attention | " + " | ".join(f"{m} (tokens/s)" for m in measures) + " |",
        "|---|" + "---:|" * len(measures),
    ]
    lines += [f"| {name} | " + " | ".join(str(best[name][m]) for m in measures) + " |" for name in models]
    lines += [
        "",
        "On against off: " + ", ".join(f"{m} {best['on'][m] / best['off'][m]:.2f}x" for m in measures) + ".",
        f"Largest difference of a next-token logit after the same 1,158 tokens: {report['largest_logit_difference']}.",
    ]
    (args.out / "flash_attention_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

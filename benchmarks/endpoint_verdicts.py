"""Endpoint verdicts against the local judge: the same model, the same claims, each verdict mode.

1. Draws a seeded, label-balanced set of claims with short documents (under 2,500
   characters) from QAGS (outside the local judge's calibration split) and SummEdits, read
   by path from ``--data-dir``; claims of one document are judged one after the other.
2. Starts llama-cpp-python's OpenAI-compatible server on the packaged GGUF (one thread
   unless told otherwise) and scores faithfulness through it in each verdict mode:
   ``batch-text`` (batch mode from a server that gives no log-probabilities: the reply's
   yes or no), ``batch-logprobs`` (batch mode, P(yes) at each verdict's token),
   ``single`` (one request per claim, P(yes) from the first token), ``auto`` (the
   verdict probe, then the mode it chose: its verdicts are the chosen mode's, read back
   from that mode's cache, and its cost is the probe's plus that mode's), and
   ``single-evidence3`` (single mode on the 3 sentences closest to each claim, the
   local judge's default premise), ``ensemble`` (two single-mode members averaged: the
   packaged prompts and ``prompts/strict_en.yaml``, another wording of the claim-support
   verdict; the report adds each member's ROC-AUC); then with the in-process ``local`` judge (default
   settings: the 3 closest sentences). Nothing is cached across modes.
3. Reports per mode and set: ROC-AUC (mean P(yes) of a sample's claims) and balanced
   accuracy (faithfulness >= 0.5) with 95% bootstrap intervals (documents resampled), the
   paired ROC-AUC difference from the local judge, and calls, prompt and completion tokens
   and seconds per claim.

Usage:
    python benchmarks/endpoint_verdicts.py [--per-set 60] [--seed 0] [--threads 1]
        [--modes local batch-text batch-logprobs single auto single-evidence3 ensemble]
        [--data-dir ../shared/data] [--work ~/.cache/ragmeter/endpoint-verdicts] [--report-only]

Each mode's figures are saved in --work as it finishes (a mode interrupted midway resumes
from its journal), so modes can run in separate invocations; --report-only writes the
report from what is there. Run model jobs one at a time (``flock``) on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragmeter.bench.report import git_commit
from ragmeter.bench.runner import unit_score
from ragmeter.bench.suites import in_qags_calibration_split
from ragmeter.bench.task import DEFAULT_DATA_DIR, Task
from ragmeter.data import load_dataset
from ragmeter.judges import Judges
from ragmeter.judges.cache import CachingJudge, DiskCache
from ragmeter.judges.ensemble import EnsembleJudge
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.local_model import llama_server_command, packaged_model_path
from ragmeter.judges.openai_compat import OpenAIJudge
from ragmeter.metrics.base import Score
from ragmeter.metrics.registry import create_metric
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic, roc_auc
from ragmeter.run.engine import Evaluator

HERE = Path(__file__).resolve().parent
MODES = ("local", "batch-text", "batch-logprobs", "single", "auto", "single-evidence3", "ensemble")
#: The ensemble mode's second member: the same server with this wording of the claim-support verdict.
STRICT_PROMPTS = HERE / "prompts" / "strict_en.yaml"
MAX_CHARS = 2500
N_CTX = 4096
MODEL = "qwen2.5-coder-1.5b-instruct"


# ---- the claims -----------------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise SystemExit(f"{path} not found: pass --data-dir with the folder of the labelled sets")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def balanced(rows: list[dict[str, Any]], label: str, per_set: int, seed: int) -> list[dict[str, Any]]:
    """``per_set`` rows, half of each label, drawn with ``seed``."""
    rng = random.Random(seed)
    chosen = []
    for value in (1, 0):
        pool = [r for r in rows if int(r[label]) == value]
        rng.shuffle(pool)
        chosen += pool[: per_set // 2]
    return chosen


def claims(data_dir: Path, per_set: int, seed: int) -> list[dict[str, Any]]:
    """The claims: ``{"id", "set", "context", "claim", "label"}``, claims of one document together."""
    qags = [r for r in _rows(data_dir / "qags_sentences.jsonl") if len(r["context"]) < MAX_CHARS and not in_qags_calibration_split(r["id"])]
    summedits = [r for r in _rows(data_dir / "summedits_dev.jsonl") if len(r["context"]) < MAX_CHARS]
    picked = [
        {"id": f"qags-{r['id']}", "set": "qags", "context": r["context"], "claim": r["claim"], "label": int(r["faithful_majority"])}
        for r in balanced(qags, "faithful_majority", per_set, seed)
    ]
    picked += [
        {"id": f"summedits-{r['id']}", "set": "summedits", "context": r["context"], "claim": r["claim"], "label": int(r["consistent"])}
        for r in balanced(summedits, "consistent", per_set, seed)
    ]
    first = {}
    for number, row in enumerate(picked):
        first.setdefault(row["context"], number)
    return sorted(picked, key=lambda r: (first[r["context"]], r["id"]))


def task_of(rows: list[dict[str, Any]], name: str) -> Task:
    samples = [
        {"id": r["id"], "user_input": "Summarise the document.", "retrieved_contexts": [r["context"]], "response": r["claim"]} for r in rows
    ]
    units = [{"sample": r["id"], "label": r["label"], "group": r["context"][:200], "part": None} for r in rows]
    return Task(name, "faithfulness", load_dataset(samples), units, "binary")


# ---- the server and the judges --------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(threads: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = llama_server_command(
        "--model", str(packaged_model_path()), "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", str(N_CTX), "--chat_format", "chatml", "--verbose", "False",
        "--n_threads", str(threads), "--n_threads_batch", str(threads),
    )  # fmt: skip
    server = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"llama-cpp-python's server exited: see {log}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return server, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(1)
    server.kill()
    raise SystemExit(f"llama-cpp-python's server did not start: see {log}")


def endpoint(url: str, mode: str, prompts: dict[str, str] | None = None) -> OpenAIJudge:
    verdict_mode = {"batch-text": "batch", "batch-logprobs": "batch", "single-evidence3": "single"}.get(mode, mode)
    judge = OpenAIJudge(
        url, MODEL, verdict_mode=verdict_mode, concurrency=1, timeout=900, max_retries=2, context_window=N_CTX,
        evidence_sentences=3 if mode == "single-evidence3" else 0, prompts=prompts,
    )  # fmt: skip
    if mode == "batch-text":
        judge.transport.unsupported.add("logprobs")  # as a server without log-probabilities answers
    return judge


def score_mode(mode: str, task: Task, url: str | None, threads: int, work: Path) -> dict[str, Any]:
    """Run one mode over the task; its figures (units, usage, judge description)."""
    started = time.perf_counter()
    if mode == "local":
        judge: Any = LocalJudge(threads=threads, context_window=N_CTX)
        probe = None
    elif mode == "auto":
        judge, probe = auto_judge(url, work)
    elif mode == "ensemble":
        members = [endpoint(url or "", "single"), endpoint(url or "", "single", {"en": str(STRICT_PROMPTS)})]
        judge, probe = EnsembleJudge(members, combine="mean"), None
    else:
        judge, probe = endpoint(url, mode), None
    cache = DiskCache(work / f"{mode}.sqlite") if mode != "auto" else judge.cache
    cached = judge if isinstance(judge, CachingJudge) else CachingJudge(judge, cache)
    metric = create_metric(task.metric)
    evaluator = Evaluator([metric], judges=Judges(llm=cached), concurrency=1, out_dir=work / f"run-{mode}", progress=False)

    async def evaluate() -> Any:
        try:
            return await evaluator.arun(task.dataset)
        finally:
            await cached.aclose()  # in the loop its connections were opened in

    result = asyncio.run(evaluate())
    cache.close()
    by_key = {s.key: s for s in result.samples}
    units = []
    for unit in task.units:
        score = by_key[unit["sample"]].scores.get(metric.id)
        value, decision, reason = unit_score(task.metric, score, None)
        units.append(
            {
                "id": unit["sample"], "label": unit["label"], "group": unit["group"], "score": value, "decision": decision,
                "reason": reason, "members": member_scores(score),
            }
        )  # fmt: skip
    figures = {
        "mode": mode,
        "units": units,
        "usage": result.aggregates[metric.id]["usage"]["total"],
        "n_claims": sum(len(((s.scores.get(metric.id) or Score(None)).details or {}).get("claims") or []) for s in result.samples),
        "n_samples": len(result.samples),
        "seconds": round(time.perf_counter() - started, 1),
        "judge": cached.describe(),
        "probe": probe,
    }
    (work / f"{mode}.json").write_text(json.dumps(figures, indent=1, ensure_ascii=False), encoding="utf-8")
    return figures


def member_scores(score: Score | None) -> list[float] | None:
    """An ensemble's sample, per member: the lowest P(yes) its claims got from that member
    (the raw verdicts, before faithfulness combines them with lexical evidence); else ``None``."""
    claims = ((score.details or {}).get("claims") or []) if score is not None else []
    members = [claim.get("p_yes_members") for claim in claims]
    if not members or any(m is None for m in members):
        return None
    return [min(claim[i] for claim in members) for i in range(len(members[0]))]


def auto_judge(url: str | None, work: Path) -> tuple[CachingJudge, dict[str, Any]]:
    """The auto judge, probed fresh (its cost measured), in front of the cache of the mode
    it chose: the verdicts are that mode's, as a run would get them."""
    judge = endpoint(url or "", "auto")
    from ragmeter.judges.metering import metered

    async def settle() -> None:
        with metered():
            await judge.settle()

    asyncio.run(settle())
    chosen = judge.describe()["probe"]["chosen"]
    source = work / f"{'batch-logprobs' if chosen == 'batch' else 'single'}.sqlite"
    if not source.exists():
        raise SystemExit(f"auto chose {chosen}: run that mode first ({source} is missing)")
    copy = work / "auto.sqlite"
    shutil.copyfile(source, copy)  # the chosen mode's answers, untouched by this run
    return CachingJudge(judge, DiskCache(copy)), judge.describe()["probe"]


# ---- the report ------------------------------------------------------------------------------


def statistics_of(units: list[dict[str, Any]], local: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    """ROC-AUC and balanced accuracy with intervals, and the paired ROC-AUC difference from
    the local judge on the units both scored."""
    scored = [u for u in units if u["score"] is not None]
    labels, scores, groups = [u["label"] for u in scored], [u["score"] for u in scored], [u["group"] for u in scored]
    found: dict[str, Any] = {"n": len(scored), "unscored": len(units) - len(scored)}
    if len(set(labels)) < 2:
        return found
    found["roc_auc"] = bootstrap_statistic(roc_auc, labels, scores, groups=groups)
    found["balanced_accuracy"] = bootstrap_statistic(balanced_accuracy, labels, [u["decision"] for u in scored], groups=groups)
    found["share_yes"] = round(sum(u["decision"] for u in scored) / len(scored), 3)
    if local is not None:
        both = [u for u in scored if local.get(u["id"], {}).get("score") is not None]
        found["auc_minus_local"] = bootstrap_statistic(
            lambda y, a, b: roc_auc(y, a) - roc_auc(y, b),
            [u["label"] for u in both],
            [u["score"] for u in both],
            [local[u["id"]]["score"] for u in both],
            groups=[u["group"] for u in both],
        )
    return found


def cost_of(figures: dict[str, Any], chosen: dict[str, Any] | None) -> dict[str, Any]:
    """Calls, tokens and judge seconds per claim (auto: the mode it chose)."""
    source = chosen if figures["mode"] == "auto" and chosen is not None else figures
    usage, n = source["usage"], max(1, source["n_claims"])
    return {
        "calls": usage["calls"] / n,
        "prompt_tokens": usage["prompt_tokens"] / n,
        "completion_tokens": usage["completion_tokens"] / n,
        "seconds": usage["seconds"] / n,
    }


def report(work: Path, out: Path, settings: dict[str, Any]) -> None:
    figures = {m: json.loads((work / f"{m}.json").read_text(encoding="utf-8")) for m in MODES if (work / f"{m}.json").exists()}
    local = {u["id"]: u for u in figures["local"]["units"]} if "local" in figures else None
    rows = []
    for mode, data in figures.items():
        probe = data.get("probe")
        chosen_mode = None if not probe else ("batch-logprobs" if probe["chosen"] == "batch" else "single")
        for name in ("all", "qags", "summedits"):
            units = [u for u in data["units"] if name == "all" or u["id"].startswith(name + "-")]
            stats = statistics_of(units, None if mode == "local" else local)
            rows.append({"mode": mode, "set": name, **stats, "cost": cost_of(data, figures.get(chosen_mode or ""))})
    document = {
        "benchmark": "endpoint_verdicts",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "settings": settings,
        "rows": rows,
        "judges": {m: d["judge"] for m, d in figures.items()},
        "probe": {m: d["probe"] for m, d in figures.items() if d.get("probe")},
        "wall_seconds": {m: d["seconds"] for m, d in figures.items()},
        "ensemble_members": members_of(figures["ensemble"]["units"]) if "ensemble" in figures else None,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "endpoint_verdicts.json").write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "endpoint_verdicts.md").write_text(markdown(document), encoding="utf-8")
    print(f"wrote {out / 'endpoint_verdicts.md'}")


def members_of(units: list[dict[str, Any]]) -> dict[str, Any]:
    """ROC-AUC of each ensemble member's raw lowest P(yes) per sample and of their mean, and the
    paired gain of the mean over the packaged prompt alone, on the samples every member judged."""
    judged = [u for u in units if u.get("members")]
    labels, groups = [u["label"] for u in judged], [u["group"] for u in judged]
    packaged, strict = [u["members"][0] for u in judged], [u["members"][1] for u in judged]
    mean = [(a + b) / 2 for a, b in zip(packaged, strict, strict=True)]
    if len(set(labels)) < 2:
        return {"n": len(judged)}
    return {
        "n": len(judged),
        "packaged": bootstrap_statistic(roc_auc, labels, packaged, groups=groups),
        "strict": bootstrap_statistic(roc_auc, labels, strict, groups=groups),
        "mean": bootstrap_statistic(roc_auc, labels, mean, groups=groups),
        "mean_minus_packaged": bootstrap_statistic(lambda y, a, b: roc_auc(y, a) - roc_auc(y, b), labels, mean, packaged, groups=groups),
    }


def _interval(stat: dict[str, Any] | None) -> str:
    if not stat:
        return "–"
    low, high = stat.get("ci_low"), stat.get("ci_high")
    text = f"{stat['value']:.3f}"
    return text + (f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else "")


def markdown(document: dict[str, Any]) -> str:
    s = document["settings"]
    lines = [
        "# Endpoint verdicts against the local judge",
        "",
        f"Date {document['date']}, commit {document['commit']}. Command: `{s['command']}`.",
        "",
        f"Claims: {s['per_set']} per set, half of each label (seed {s['seed']}), documents under {MAX_CHARS} characters: "
        "QAGS summary sentences (outside the local judge's calibration split) and SummEdits summaries. Faithfulness of "
        "each claim against its document, one sample per claim. The packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M, "
        f"through llama-cpp-python's server ({s['threads']} thread(s), temperature 0, seed 0) and in-process. "
        "ROC-AUC ranks samples by the mean P(yes) of their claims; balanced accuracy decides at faithfulness >= 0.5; "
        "95% bootstrap intervals resample documents. 'AUC - local' is paired, on the same claims.",
        "",
        "| mode | set | claims | ROC-AUC | balanced accuracy | yes | AUC - local | calls / claim | prompt tokens / claim | completion tokens / claim | judge s / claim |",
        "|---|---|---:|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for row in document["rows"]:
        c = row["cost"]
        lines.append(
            f"| {row['mode']} | {row['set']} | {row['n']} | {_interval(row.get('roc_auc'))} | {_interval(row.get('balanced_accuracy'))} | "
            f"{row.get('share_yes', 0):.0%} | {_interval(row.get('auc_minus_local')) if row['mode'] != 'local' else ''} | "
            f"{c['calls']:.2f} | {c['prompt_tokens']:.0f} | {c['completion_tokens']:.1f} | {c['seconds']:.1f} |"
        )
    for mode, probe in document["probe"].items():
        tried = "; ".join(
            f"{t['mode']} ({t['method']}): ROC-AUC {t['roc_auc']}, balanced accuracy {t['balanced_accuracy']}, {t['share_yes']:.0%} yes"
            if not t.get("error")
            else f"{t['mode']}: failed ({t['error']})"
            for t in probe["tried"]
        )
        usage = probe.get("usage") or {}
        lines += [
            "",
            f"Verdict probe ({mode}): chose **{probe['chosen']}**. Tried: {tried}. Cost, once per judge and kept in the disk "
            f"cache: {usage.get('calls', '?')} calls, {usage.get('prompt_tokens', '?')} prompt and "
            f"{usage.get('completion_tokens', '?')} completion tokens, {usage.get('seconds', 0):.0f} s."
            + (f" Warning: {probe['warning']}" if probe.get("warning") else ""),
        ]
    members = document.get("ensemble_members")
    if members and "mean" in members:
        lines += [
            "",
            f"Ensemble members ({members['n']} samples; each sample ranked by the lowest raw P(yes) of its claims, "
            "before faithfulness combines it with lexical evidence): ROC-AUC packaged prompt "
            f"{_interval(members['packaged'])}, `{STRICT_PROMPTS.relative_to(HERE.parent)}` {_interval(members['strict'])}, "
            f"their mean {_interval(members['mean'])}; mean minus packaged, paired: {_interval(members['mean_minus_packaged'])}.",
        ]
    lines += ["", "Wall time per mode (s): " + ", ".join(f"{m} {v:.0f}" for m, v in document["wall_seconds"].items()), ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-set", type=int, default=60, help="claims per labelled set (half of each label)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of the server and of the local judge")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "ragmeter" / "endpoint-verdicts")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run stops its server too
    settings = {
        "per_set": args.per_set,
        "seed": args.seed,
        "threads": args.threads,
        "command": "python benchmarks/endpoint_verdicts.py " + " ".join(sys.argv[1:]),
    }
    if not args.report_only:
        task = task_of(claims(args.data_dir, args.per_set, args.seed), "faithfulness")
        server, url = None, None
        try:
            for mode in args.modes:
                if mode != "local" and server is None:
                    server, url = start_server(args.threads, args.work / "server.log")
                print(f"{mode}: {len(task.dataset)} samples …", flush=True)
                figures = score_mode(mode, task, url, args.threads, args.work)
                print(f"  done in {figures['seconds']:.0f} s", flush=True)
        finally:
            if server is not None:
                server.terminate()
                server.wait(30)
    report(args.work, args.out, settings)


if __name__ == "__main__":
    main()

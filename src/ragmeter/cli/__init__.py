"""The ``ragmeter`` command line.

Exit codes: 0 success; 2 usage or input errors (the message names file, line and field);
130 interrupted (the journal keeps what was finished: re-run the same command to resume).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragmeter.bench.report import write as write_bench
from ragmeter.bench.runner import run_task
from ragmeter.bench.suites import DEFAULT_DATA_DIR, SUITES, bench_tasks, labelled_file
from ragmeter.run.config import load_config
from ragmeter.run.engine import DEFAULT_CONCURRENCY, Evaluator, applicable_metrics, resolve_metrics
from ragmeter.data import InputError, InputIssue, load_dataset
from ragmeter.judges import BatchingEmbedder, JudgeError, Judges
from ragmeter.judges.cache import CachingJudge, EmbeddingStore
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.dry_run import DryRunJudge, estimated_local_seconds
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.judges.metering import PriceTable, Usage
from ragmeter.metrics.base import FAMILIES, Needs, create_metric, metric_classes
from ragmeter.report import REPORT_HTML, REPORT_MD, write_reports
from ragmeter.results import Result
from ragmeter.results.rundir import RESULTS_FILE, RUN_FILE, SUMMARY_FILE

app = typer.Typer(
    name="ragmeter",
    help="Evaluate retrieval-augmented generation systems: retrieval, generation, and both together.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# soft_wrap: messages naming a file and line stay on one line, for grep and copy-paste.
console = Console(stderr=True, soft_wrap=True)
USAGE_ERROR = 2


def _fail(message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(USAGE_ERROR)


def _print_issues(issues: list[InputIssue], limit: int = 12) -> None:
    """Issues grouped by source, field and message, with the first locations of each."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for issue in issues:
        groups[(issue.source, issue.field, issue.message, issue.skipped)].append(issue.location)
    for shown, ((source, field, message, skipped), locations) in enumerate(groups.items()):
        if shown == limit:
            console.print(f"  … and {len(groups) - limit} more kinds of issue (see input_issues.jsonl)")
            break
        where = ", ".join(locations[:5]) + (f" and {len(locations) - 5} more" if len(locations) > 5 else "")
        field_text = f", field '{field}'" if field else ""
        action = "row skipped" if skipped else "sample kept"
        console.print(f"  {source}, {where}{field_text}: {message} [dim]({action})[/]", highlight=False, markup=True)


def _choose_metrics(spec: str | None, configured: list | None, dataset, judge_available: str | None) -> list:
    """The metrics to run: --metrics, else the config file's, else automatic selection.

    ``judge_available`` is ``None`` when an LLM judge can run, else the reason it cannot.
    """
    if spec is None and configured is not None:
        return configured
    spec = spec or "auto"
    if spec in ("auto", "model-free"):
        llm = spec == "auto" and judge_available is None
        if spec == "auto" and judge_available is not None:
            console.print(f"[yellow]LLM metrics skipped[/]: {escape(judge_available)}", highlight=False)
        chosen = applicable_metrics(dataset, llm=llm)
        if not chosen:
            raise _fail("no metric applies: the samples lack the fields every metric requires (see `ragmeter metrics`)")
        return chosen
    if spec == "all":
        return [cls() for cls in metric_classes().values() if cls.needs in (Needs.NOTHING, Needs.EMBEDDINGS)]
    try:
        return resolve_metrics(name for name in spec.split(",") if name.strip())
    except ValueError as exc:
        raise _fail(str(exc)) from None


def _print_scores(result: Result) -> None:
    table = Table(title="Scores (mean with 95% bootstrap CI)", title_justify="left")
    for column in ("metric", "mean", "95% CI", "scored", "unscored"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for metric in result.metrics:
        a = result.aggregates[metric["id"]]
        if a["mean"] is None:
            mean, interval = "–", "–"
        else:
            digits = 3 if metric["unit"] is None else (5 if metric["unit"] == "USD" else 1)
            mean = f"{a['mean']:.{digits}f}"
            interval = f"[{a['ci_low']:.{digits}f}, {a['ci_high']:.{digits}f}]" if a["ci_low"] is not None else "–"
        unscored = str(a["n_unscored"]) + (f" ({a['n_failed']} failed)" if a["n_failed"] else "")
        table.add_row(metric["id"] + (f" ({metric['unit']})" if metric["unit"] else ""), mean, interval, str(a["n_scored"]), unscored)
    console.print(table)


def _print_diagnosis(diagnosis: dict) -> None:
    problems = [p for p in diagnosis["patterns"] if p["name"] not in ("healthy", "correct_refusal", "inconclusive")]
    if not diagnosis["signals"]:
        return
    if not problems:
        console.print("Diagnosis: no problem pattern found.")
        return
    console.print("Diagnosis (see the report for the samples):")
    for pattern in problems:
        examples = ", ".join(pattern["samples"][:4]) + (", …" if len(pattern["samples"]) > 4 else "")
        console.print(f"  {pattern['count']:>4} × [bold]{escape(pattern['title'])}[/] ({escape(examples)})", highlight=False)


def _written(out: Path) -> str:
    return ", ".join(str(out / name) for name in (RESULTS_FILE, SUMMARY_FILE, REPORT_MD, REPORT_HTML))


@app.command("eval")
def eval_command(
    data: Annotated[list[Path], typer.Argument(help="Sample files: .jsonl, .json, .csv or .parquet (several allowed).")],
    metrics: Annotated[
        Optional[str],
        typer.Option(
            "--metrics",
            "-m",
            help="Comma-separated metric names (`ragmeter metrics` lists them; add @k to rank metrics: ndcg@5). "
            "'auto' (default): every model-free metric the data has fields for, plus the core LLM metrics when a "
            "judge is available; 'model-free': without LLM metrics; 'all': every model-free metric.",
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory for results, journal and reports.")] = Path("ragmeter-out"),
    config: Annotated[
        Optional[Path], typer.Option("--config", "-c", help="YAML config file: judge settings, metrics with parameters, prices.")
    ] = None,
    judge: Annotated[Optional[str], typer.Option(help="Judge backend: 'local' (embedded model) or 'openai' (any compatible endpoint).")] = None,
    judge_base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")] = None,
    judge_model: Annotated[Optional[str], typer.Option(help="Model name at the endpoint.")] = None,
    judge_api_key_env: Annotated[
        Optional[str], typer.Option(help="Environment variable holding the API key (default RAGMETER_JUDGE_API_KEY, then OPENAI_API_KEY).")
    ] = None,
    judge_concurrency: Annotated[Optional[int], typer.Option(min=1, help="Most requests in flight to the endpoint (default 8).")] = None,
    judge_rpm: Annotated[Optional[int], typer.Option(min=1, help="Requests per minute allowed to the endpoint.")] = None,
    judge_timeout: Annotated[Optional[float], typer.Option(min=1, help="Seconds per request (default 60).")] = None,
    judge_context_window: Annotated[Optional[int], typer.Option(min=256, help="Tokens per prompt (default 4096 local, 128000 endpoint).")] = None,
    verdict_mode: Annotated[
        Optional[str], typer.Option(help="Endpoint verdicts: 'batch' (all items in one request) or 'single' (one per item, with logprobs).")
    ] = None,
    gguf: Annotated[Optional[Path], typer.Option(help="GGUF model for the local judge instead of the packaged one.")] = None,
    prices: Annotated[Optional[Path], typer.Option(help="Price table (JSON or YAML) overriding the packaged one.")] = None,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse judge answers and embeddings from the disk cache.")] = True,
    dry_run: Annotated[bool, typer.Option(help="Estimate LLM calls, tokens and cost; call no model and write nothing.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Most (sample, metric) pairs scored at once.")] = DEFAULT_CONCURRENCY,
    strict: Annotated[bool, typer.Option(help="Stop on the first bad row or missing field instead of skipping it.")] = False,
    fresh: Annotated[bool, typer.Option(help="Ignore scores journalled by an earlier run in --out; recompute all.")] = False,
    progress: Annotated[
        Optional[bool], typer.Option("--progress/--no-progress", help="Progress bar (default: on when stderr is a terminal).")
    ] = None,
) -> None:
    """Evaluate samples and write results.jsonl, summary.json, report.md and report.html to --out.

    Re-running the same command after an interruption (even a kill) resumes: scores already
    journalled in --out are reused; only missing or failed ones are computed.
    """
    try:
        run_config = load_config(config) if config else None
        judge_config = _judge_config(
            run_config,
            backend=judge,
            base_url=judge_base_url,
            model=judge_model,
            api_key_env=judge_api_key_env,
            concurrency=judge_concurrency,
            requests_per_minute=judge_rpm,
            timeout=judge_timeout,
            context_window=judge_context_window,
            verdict_mode=verdict_mode,
            gguf=str(gguf) if gguf else None,
            prices=str(prices) if prices else None,
            cache=cache,
        )
    except ValueError as exc:
        raise _fail(str(exc)) from None
    try:
        dataset = load_dataset(*data, strict=strict)
    except InputError as exc:
        _print_issues(exc.issues)
        raise _fail("input is not usable; nothing was evaluated") from None
    if dataset.issues:
        console.print(f"[yellow]{len(dataset.issues)} input issue(s):[/]")
        _print_issues(dataset.issues)
    if not dataset.samples:
        raise _fail("no valid samples to evaluate")
    disk_cache = judge_config.open_cache()
    llm_judge, unavailable = None, None
    try:
        llm_judge = judge_config.build(disk_cache)
    except JudgeError as exc:
        unavailable = str(exc)
    chosen = _choose_metrics(metrics, run_config.metrics if run_config else None, dataset, unavailable)
    if any(m.needs == Needs.LLM for m in chosen) and llm_judge is None:
        raise _fail(f"LLM metrics need a judge: {unavailable}")
    store = EmbeddingStore(disk_cache, USEEncoder.model_name) if disk_cache is not None else None
    judges = Judges(embedder=BatchingEmbedder(store=store), llm=llm_judge)
    if dry_run:
        _dry_run(dataset, chosen, judges, judge_config, concurrency)
        return
    evaluator = Evaluator(chosen, judges=judges, concurrency=concurrency, out_dir=out, resume=not fresh, progress=progress, strict=strict)
    judge_text = f"; judge {llm_judge.backend}: {llm_judge.model}" if any(m.needs == Needs.LLM for m in chosen) else ""
    console.print(f"Evaluating {len(dataset)} samples with {len(evaluator.metrics)} metrics → {out}{judge_text}", highlight=False)
    try:
        result = evaluator.run(dataset)
    except InputError as exc:
        _print_issues(exc.issues)
        raise _fail("samples lack fields the chosen metrics require (--strict)") from None
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted[/]: finished scores are journalled in {out}; run the same command again to resume.")
        raise typer.Exit(130) from None
    field_issues = [i for i in result.issues if not i.skipped]
    if field_issues:
        console.print(f"[yellow]{len(field_issues)} missing field(s); the metrics that need them leave those samples unscored:[/]")
        _print_issues(field_issues)
    result.save(out)
    summary = write_reports(result, out)
    _print_scores(result)
    _print_usage(result)
    _print_diagnosis(summary["diagnosis"])
    run = result.run
    console.print(
        f"{run['pairs_computed']} scores computed, {run['pairs_resumed']} resumed from the journal, {run['seconds']:.1f} s.",
        highlight=False,
    )
    console.print(f"Wrote {_written(out)}; open {out / REPORT_HTML} for the full report.", highlight=False)


def _judge_config(run_config, *, cache: bool, **options) -> JudgeConfig:
    """Judge settings: the environment, then the config file, then the options given."""
    settings = JudgeConfig.from_env().updated(**(run_config.judge if run_config else {})).updated(**options)
    if not cache:
        settings = settings.updated(cache=False)
    settings.validate()
    return settings


def _usage_table(title: str, rows: list[tuple[str, Usage]], local: bool) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("metric", no_wrap=True, min_width=max(len(name) for name, _ in rows))
    for column in ("calls", "cached", "prompt tok.", "output tok.", "retries", "cost"):
        table.add_column(column, justify="right")
    for name, usage in rows:
        if local:
            cost = "0 (local)"
        elif usage.cost_usd is None:
            cost = "unknown price"
        else:
            cost = f"${usage.cost_usd:.4f}"
        table.add_row(
            name, str(usage.calls), str(usage.cached_calls), f"{usage.prompt_tokens:,}", f"{usage.completion_tokens:,}", str(usage.retries), cost
        )
    return table


def _print_usage(result: Result) -> None:
    rows = []
    for metric in result.metrics:
        if metric["needs"] == Needs.LLM.value:
            rows.append((metric["id"], Usage.from_dict(result.aggregates[metric["id"]]["usage"]["total"])))
    if rows:
        local = (result.run.get("judge") or {}).get("backend") == "local"
        console.print(_usage_table("LLM judge usage", rows, local))


def _dry_run(dataset, chosen, judges: Judges, judge_config: JudgeConfig, concurrency: int) -> None:
    """Run the LLM metrics against a stand-in judge and print the estimate."""
    llm_metrics = [m for m in chosen if m.needs == Needs.LLM]
    if not llm_metrics:
        console.print("No LLM metric chosen: nothing would be spent on a judge.")
        return
    target = judges.llm.judge if isinstance(judges.llm, CachingJudge) else judges.llm
    local = target.backend == "local"
    price = None
    if local:
        price = (0.0, 0.0)
    else:
        found = PriceTable(judge_config.prices).price(target.model)
        price = (found.input_per_million, found.output_per_million) if found else None
    stand_in = DryRunJudge(target, per_item=local or judge_config.verdict_mode == "single", price=price)
    estimate = Evaluator(llm_metrics, judges=Judges(embedder=judges.embedder, llm=stand_in), concurrency=concurrency, progress=False)
    result = estimate.run(dataset)
    rows = [(m.id, Usage.from_dict(result.aggregates[m.id]["usage"]["total"])) for m in llm_metrics]
    total = Usage()
    for _, usage in rows:
        total.add(usage)
    rows.append(("total", total))
    console.print(_usage_table(f"Estimate for {len(dataset)} samples (no model was called)", rows, local))
    if local:
        minutes = estimated_local_seconds(total) / 60
        console.print(f"The local judge would need roughly {minutes:.0f} min on 2 CPU cores (before cache hits).", highlight=False)
    elif total.cost_usd is None:
        console.print(f"No price known for model '{target.model}': pass --prices to get a cost.", highlight=False)


@app.command("bench")
def bench_command(
    suites: Annotated[
        Optional[list[str]],
        typer.Argument(
            help="Labelled sets to measure against: qags, ragchecker, clapnq, msmarco, rgb (default: all); "
            "a set/task name (clapnq/context_recall) measures that task only."
        ),
    ] = None,
    data_dir: Annotated[Path, typer.Option(help="Folder of the labelled sets.")] = DEFAULT_DATA_DIR,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Units drawn from each set (seeded); default: all.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the draw.")] = 0,
    labelled: Annotated[Optional[Path], typer.Option(help="Your own labelled samples instead of the built-in sets.")] = None,
    metric: Annotated[Optional[str], typer.Option(help="With --labelled: the metric to measure.")] = None,
    label_field: Annotated[str, typer.Option(help="With --labelled: the column holding the human label.")] = "label",
    out: Annotated[Path, typer.Option(help="Folder for the results (Markdown and JSON).")] = Path("benchmarks/results"),
    name: Annotated[Optional[str], typer.Option(help="File name of the results (default: meta_eval_<judge backend>).")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML config file with judge settings.")] = None,
    judge: Annotated[Optional[str], typer.Option(help="Judge backend: 'local' or 'openai'.")] = None,
    judge_base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint.")] = None,
    judge_model: Annotated[Optional[str], typer.Option(help="Model name at the endpoint.")] = None,
    judge_api_key_env: Annotated[Optional[str], typer.Option(help="Environment variable holding the API key.")] = None,
    verdict_mode: Annotated[Optional[str], typer.Option(help="Endpoint verdicts: 'batch' or 'single'.")] = None,
    gguf: Annotated[Optional[Path], typer.Option(help="GGUF model for the local judge.")] = None,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse judge answers from the disk cache.")] = True,
    concurrency: Annotated[int, typer.Option(min=1, help="Most (sample, metric) pairs scored at once.")] = 8,
) -> None:
    """Measure metrics against human labels: agreement with 95% intervals, and cost per sample.

    Reads the labelled sets by path (never copies them) and writes Markdown and JSON
    results with the date, commit, judge and settings.
    """
    import shlex
    import sys

    try:
        settings = _judge_config(
            load_config(config) if config else None,
            backend=judge,
            base_url=judge_base_url,
            model=judge_model,
            api_key_env=judge_api_key_env,
            verdict_mode=verdict_mode,
            gguf=str(gguf) if gguf else None,
            cache=cache,
        )
        if labelled is not None:
            if not metric:
                raise ValueError("--labelled needs --metric")
            resolve_metrics([metric])
            tasks = [labelled_file(labelled, metric, label_field, limit, seed)]
        else:
            tasks = bench_tasks(suites or list(SUITES), data_dir, limit, seed)
    except (ValueError, FileNotFoundError, InputError) as exc:
        raise _fail(str(exc)) from None
    needs_llm = any(create_metric(t.metric).needs == Needs.LLM for t in tasks)
    llm_judge = None
    if needs_llm:
        try:
            llm_judge = settings.build()
        except JudgeError as exc:
            raise _fail(f"the benchmark needs an LLM judge: {exc}") from None
    disk_cache = settings.open_cache()
    store = EmbeddingStore(disk_cache, USEEncoder.model_name) if disk_cache is not None else None
    judges = Judges(embedder=BatchingEmbedder(store=store), llm=llm_judge)
    described = llm_judge.describe() if llm_judge is not None else {"backend": "none", "model": "-"}
    run_settings = {
        "judge": described,
        "limit": limit,
        "seed": seed,
        "data_dir": str(data_dir),
        "command": "ragmeter " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
    }
    results = []
    for task in tasks:
        console.print(f"{task.name}: {len(task.dataset)} samples, {len(task.units)} labelled units …", highlight=False)
        results.append(run_task(task, judges, concurrency=concurrency))
        for statistic, value in results[-1].statistics.items():
            console.print(f"  {statistic} {value['value']:.3f} [{value['ci_low']}, {value['ci_high']}]", highlight=False)
        # Written after every task: a long run that is stopped keeps the tasks it finished.
        json_path, md_path = write_bench(results, run_settings, out, name or f"meta_eval_{described['backend']}")
    console.print(f"Wrote {md_path} and {json_path}", highlight=False)


def _measure_table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for label, value in rows:
        table.add_row(escape(label), escape(value))
    return table


@app.command("pairwise")
def pairwise_command(
    a: Annotated[Path, typer.Argument(help="System A: a sample file (.jsonl, .json, .csv, .parquet) or a run directory.")],
    b: Annotated[Path, typer.Argument(help="System B: same questions (matched by id, else by question).")],
    criterion: Annotated[str, typer.Option(help="What 'better' means, e.g. 'Factually correct and answers the question.'")] = (
        "Factually correct and answers the question."
    ),
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for pairwise.json and pairwise.md.")] = Path("ragmeter-pairwise"),
    margin: Annotated[float, typer.Option(min=0.0, max=0.49, help="P(first better) within 0.5 ± margin counts as no preference.")] = 0.0,
    reference_metric: Annotated[
        Optional[str], typer.Option(help="Reference for length bias: a metric of both run directories (or a numeric metadata field).")
    ] = None,
    labels: Annotated[Optional[Path], typer.Option(help='Reference labels, JSONL: {"id": ..., "better": "A" | "B" | "tie"}.')] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Pairs judged at once.")] = 4,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="YAML config file with judge settings.")] = None,
    judge: Annotated[Optional[str], typer.Option(help="Judge backend: 'local' or 'openai'.")] = None,
    judge_base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint.")] = None,
    judge_model: Annotated[Optional[str], typer.Option(help="Model name at the endpoint.")] = None,
    judge_api_key_env: Annotated[Optional[str], typer.Option(help="Environment variable holding the API key.")] = None,
    judge_concurrency: Annotated[Optional[int], typer.Option(min=1, help="Most requests in flight to the endpoint.")] = None,
    judge_rpm: Annotated[Optional[int], typer.Option(min=1, help="Requests per minute allowed to the endpoint.")] = None,
    gguf: Annotated[Optional[Path], typer.Option(help="GGUF model for the local judge.")] = None,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse judge answers from the disk cache.")] = True,
) -> None:
    """Judge which of two systems' responses to the same questions is better, in both orders.

    Reports the win rate of B over A (95% Wilson interval, ties count half), the tie rate,
    the judge's position consistency and its length bias; writes pairwise.json and pairwise.md.
    """
    from ragmeter.decide import pairwise
    try:
        settings = _judge_config(
            load_config(config) if config else None,
            backend=judge,
            base_url=judge_base_url,
            model=judge_model,
            api_key_env=judge_api_key_env,
            concurrency=judge_concurrency,
            requests_per_minute=judge_rpm,
            gguf=str(gguf) if gguf else None,
            cache=cache,
        )
        side_a, side_b = pairwise.load_side(a), pairwise.load_side(b)
        reference, label_problems = pairwise.read_labels(labels) if labels else (None, [])
    except InputError as exc:
        _print_issues(exc.issues)
        raise _fail("input is not usable; nothing was judged") from None
    except (ValueError, OSError, KeyError) as exc:
        raise _fail(str(exc)) from None
    pairs, matching = pairwise.match_samples(side_a, side_b, reference_metric=reference_metric, labels=reference)
    matching["label_issues"] = label_problems
    for problem in label_problems:
        console.print(f"  {problem}", highlight=False, markup=False)
    if not pairs:
        raise _fail(f"no question has a response on both sides ({a}, {b}); matched by {matching['matched_by']}")
    try:
        llm = settings.build()
    except JudgeError as exc:
        raise _fail(f"pairwise judging needs an LLM judge: {exc}") from None
    console.print(f"Judging {len(pairs)} pairs in both orders ({2 * len(pairs)} judge calls); judge {llm.backend}: {llm.model}", highlight=False)
    report = pairwise.judge_pairs(pairs, llm, criterion, margin=margin, concurrency=concurrency, close=True)
    report.matching = matching
    report.settings.update(a=str(a), b=str(b))
    json_path, md_path = pairwise.write_report(report, out)
    console.print(_measure_table(f"B ({b}) vs A ({a})", pairwise.summary_rows(report.statistics)))
    for title, keys in (("in A only", matching["unmatched_a"]), ("in B only", matching["unmatched_b"]), ("unusable", matching["unusable"])):
        if keys:
            shown = ", ".join(k if isinstance(k, str) else f"{k['side']} {k['key']} ({k['reason']})" for k in keys[:10])
            console.print(f"[yellow]{len(keys)} sample(s) {title}:[/] {escape(shown)}{' …' if len(keys) > 10 else ''}", highlight=False)
    console.print(f"Wrote {json_path} and {md_path}", highlight=False)


@app.command("calibrate")
def calibrate_command(
    run_dir: Annotated[Path, typer.Argument(help="A directory written by `ragmeter eval`.")],
    labels: Annotated[Path, typer.Option(help='Human labels, JSONL: {"id": ..., "label": 0/1 or a score in [0, 1]}.')],
    metric: Annotated[str, typer.Option(help="The metric to calibrate (its id in the run, e.g. faithfulness).")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Folder for calibration.json and .md (default: RUN_DIR/calibration_<metric>).")] = None,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="Coverage of the intervals.")] = 0.95,
) -> None:
    """Agreement of a metric with a few human labels, and the true mean by prediction-powered inference.

    Accuracy, Cohen's kappa, Pearson, Spearman and Kendall tau with bootstrap intervals on the
    labelled samples; the PPI mean over the whole run next to the labels-only mean.
    """
    from ragmeter.decide import calibrate
    try:
        report = calibrate.calibrate_run(run_dir, labels, metric, confidence=confidence)
    except KeyError as exc:
        raise _fail(str(exc.args[0] if exc.args else exc)) from None
    except (ValueError, OSError) as exc:
        raise _fail(str(exc)) from None
    json_path, md_path = calibrate.write_report(report, out or calibrate.default_out(run_dir, metric))
    console.print(_measure_table(f"{metric}: {report.n_used} labelled of {report.n_scored} scored samples", calibrate.summary_rows(report)))
    for warning in report.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    console.print(f"Wrote {json_path} and {md_path}", highlight=False)


@app.command("compare")
def compare_command(
    a: Annotated[Path, typer.Argument(help="Run A (the reference): a directory written by `ragmeter eval`.")],
    b: Annotated[Path, typer.Argument(help="Run B (the candidate): differences are B - A.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for compare.md, compare.json and compare.html.")] = Path("compare-out"),
    alpha: Annotated[float, typer.Option(min=0.0001, max=0.5, help="Family-wise significance level (Holm across the metrics).")] = 0.05,
    permutations: Annotated[
        int, typer.Option(min=100, help="Random sign flips of the permutation test (exact enumeration up to 16 non-zero differences).")
    ] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the permutations and of the bootstrap.")] = 0,
) -> None:
    """Compare two runs on their matched samples: mean difference with a paired bootstrap CI,
    paired permutation p-value with Holm correction across metrics, and the largest regressions.

    Samples are matched by id, else by question; unmatched and duplicate samples are listed.
    Writes compare.md, compare.json and compare.html to --out. Exit code 0 (a report, not a gate).
    """
    from ragmeter.decide import compare
    try:
        comparison = compare.compare_runs(a, b, alpha=alpha, n_permutations=permutations, seed=seed)
    except (FileNotFoundError, json.JSONDecodeError, KeyError, ValueError) as exc:
        raise _fail(f"cannot compare {a} and {b}: {exc}") from None
    paths = compare.write_comparison(comparison, out)
    console.print(compare.rich_table(comparison))
    for line in compare.summary_lines(comparison):
        console.print(line, highlight=False, markup=False)
    console.print(f"Wrote {', '.join(str(p) for p in paths)}", highlight=False, markup=False)


@app.command("gate")
def gate_command(
    run_dir: Annotated[Path, typer.Argument(help="The run to check: a directory written by `ragmeter eval`.")],
    thresholds: Annotated[
        Optional[Path], typer.Option("--thresholds", "-t", help="YAML: metric id -> minimum mean, or {min|max: x, on: mean|ci_low|ci_high}.")
    ] = None,
    baseline: Annotated[Optional[Path], typer.Option(help="A baseline run directory to check against (e.g. the main branch's last run).")] = None,
    max_drop: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="With --baseline: fail a [0, 1] metric whose mean drops by more than this and significantly, "
            "or whose share of matched samples scored (coverage) drops by more than this.",
        ),
    ] = 0.02,
    alpha: Annotated[float, typer.Option(min=0.0001, max=0.5, help="Significance level of the baseline test (Holm across metrics).")] = 0.05,
    junit: Annotated[Optional[Path], typer.Option(help="Write the checks as JUnit XML to this file.")] = None,
    permutations: Annotated[int, typer.Option(min=100, help="Random sign flips of the baseline permutation test.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the permutations and of the bootstrap.")] = 0,
) -> None:
    """Fail (exit 1) when the run misses a threshold or drops significantly below a baseline.

    A baseline check fails when the mean drop over matched samples exceeds --max-drop and the
    paired permutation test (Holm-adjusted across metrics) says the drop is real. A second
    baseline check per metric fails when the share of matched samples it scored is lower than
    the baseline's by more than --max-drop. Exit codes: 0 every check passed, 1 a check
    failed, 2 usage or input error.
    """
    from ragmeter.decide import gate
    try:
        report = gate.run_gate(
            run_dir, thresholds=thresholds, baseline=baseline, max_drop=max_drop, alpha=alpha, n_permutations=permutations, seed=seed
        )
    except gate.GateInputError as exc:
        raise _fail(escape(str(exc))) from None
    console.print(gate.rich_table(report))
    for line in gate.summary_lines(report):
        console.print(line, highlight=False, markup=False)
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(report.to_junit(), encoding="utf-8")
        console.print(f"Wrote {junit}", highlight=False, markup=False)
    raise typer.Exit(report.exit_code)


@app.command("metrics")
def metrics_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List every metric: its family, what it needs, the fields it requires, and what it measures."""
    order = list(FAMILIES)
    infos = sorted((cls().info() for cls in metric_classes().values()), key=lambda info: order.index(info["family"]))
    if as_json:
        typer.echo(json.dumps(infos, ensure_ascii=False, indent=1))
        return
    out = Console()
    for info in infos:
        unit = f"; unit {info['unit']}, lower is better" if info["unit"] and not info["higher_is_better"] else ""
        cutoff = "; takes @k" if "k" in info["config"] else ""
        out.print(
            f"[bold]{info['name']}[/]  [dim]({info['family']}; needs {info['needs']}; "
            f"requires {', '.join(info['required'])}{cutoff}{unit})[/]",
            highlight=False,
        )
        out.print("    " + escape(info["description"]), highlight=False)


@app.command("report")
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A directory written by `ragmeter eval`.")],
) -> None:
    """Re-render summary.json, report.md and report.html of an earlier run."""
    try:
        result = Result.load(run_dir)
    except (FileNotFoundError, json.JSONDecodeError, KeyError, ValueError) as exc:
        raise _fail(f"cannot read run directory {run_dir}: {exc}") from None
    write_reports(result, run_dir)
    console.print(f"Wrote {run_dir / SUMMARY_FILE}, {run_dir / REPORT_MD}, {run_dir / REPORT_HTML}", highlight=False)


if __name__ == "__main__":
    app()

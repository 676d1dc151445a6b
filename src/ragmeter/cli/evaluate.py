"""``ragmeter eval``: score samples and write the run directory and its reports."""

import shlex
import sys
from itertools import islice
from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import console, fail, say
from ragmeter.cli.issues import print_issues
from ragmeter.cli.options import JudgeOptions, judge_options
from ragmeter.cli.result_console import failure_lines, print_diagnosis, scores_table, usage_rows, usage_table
from ragmeter.cli.runs import open_store, save_run
from ragmeter.data import Dataset, InputError, load_dataset
from ragmeter.data.files import write_problem
from ragmeter.data.readers import rows_of
from ragmeter.data.secrets import register_url
from ragmeter.judges import BatchingEmbedder, JudgeError, Judges
from ragmeter.judges.cache import EmbeddingStore
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.metrics import Metric, Needs, metric_classes
from ragmeter.report import REPORT_HTML, REPORT_MD, write_reports
from ragmeter.report.judge import judge_line, judge_warnings
from ragmeter.results import Result
from ragmeter.results.rundir import ISSUES_FILE, RESULTS_FILE, RUN_FILE, SUMMARY_FILE
from ragmeter.run.engine import DEFAULT_CONCURRENCY, Evaluator, applicable_metrics, resolve_metrics
from ragmeter.run.estimate import estimate_usage
from ragmeter.run.executor import ExecutorError, RemoteExecutor
from ragmeter.run.journal import JOURNAL_FILE, SHARD_PREFIX
from ragmeter.run.outdir import LOCK_FILE, OutputDirError, locked
from ragmeter.run.recorder import SPOOL_FILE
from ragmeter.run.sync import interruption, run_sync

#: Where the pairs are scored (``--executor`` and the Ray executor's settings).
ExecutorOption = Annotated[
    str, typer.Option(help="Where pairs are scored: 'local' (this process) or 'ray' (Ray workers; needs ragmeter[ray]).")
]
RayAddressOption = Annotated[
    str | None, typer.Option(help="With --executor ray: an existing cluster (host:6379, ray://host:10001); default: start a local one.")
]
RayWorkersOption = Annotated[int | None, typer.Option(min=1, help="With --executor ray: worker processes (default: one per CPU).")]
RayEndpointOption = Annotated[
    list[str] | None,
    typer.Option(help="With --executor ray: another endpoint serving the --judge-model (repeatable); workers are spread over all."),
]


@command("eval")
@judge_options
def eval_command(
    data: Annotated[list[Path], typer.Argument(help="Sample files: .jsonl, .json, .csv or .parquet (several allowed).")],
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            "-m",
            help="Comma-separated metric names (`ragmeter metrics` lists them; add @k to rank metrics: ndcg@5). "
            "'auto' (default): every model-free metric the data has fields for, plus the core LLM metrics when a "
            "judge is available; 'model-free': without LLM metrics; 'all': every model-free metric. Groups and names "
            "mix: 'model-free,faithfulness'.",
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory for results, journal and reports.")] = Path("ragmeter-out"),
    dry_run: Annotated[bool, typer.Option(help="Estimate LLM calls, tokens and cost; call no model and write nothing.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Most (sample, metric) pairs scored at once.")] = DEFAULT_CONCURRENCY,
    strict: Annotated[bool, typer.Option(help="Stop on the first bad row or missing field instead of skipping it.")] = False,
    fresh: Annotated[bool, typer.Option(help="Ignore scores journalled by an earlier run in --out; recompute all.")] = False,
    store: Annotated[
        str | None, typer.Option(help="Also keep the run in this store: a SQLite file or postgresql://... (see `ragmeter runs`).")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", "-t", help="With --store: a label kept with the run (repeatable), e.g. nightly or model=gpt-4o."),
    ] = None,
    progress: Annotated[
        bool | None, typer.Option("--progress/--no-progress", help="Progress bar (default: on when stderr is a terminal).")
    ] = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = None,
    ray_endpoint: RayEndpointOption = None,
    *,
    judge_options: JudgeOptions,
) -> None:
    """Evaluate samples and write results.jsonl, summary.json, report.md and report.html to --out.

    Re-running the same command after an interruption (even a kill) resumes: scores already
    journalled in --out are reused; only missing or failed ones are computed.
    """
    try:
        run_config, settings = judge_options.resolve()
    except ValueError as exc:
        raise fail(str(exc)) from None
    if tag and store is None:
        raise fail("--tag labels the run in a store: give --store too")
    if metrics is not None:
        _named_metrics(metrics)  # a misspelt metric is said before the data's own issues are listed
    _refuse_own_outputs(data, out)
    _refuse_trace_files(data)
    dataset = _load(data, strict)
    judges, unavailable = _judges(settings)
    endpoint = settings.chosen_backend == "openai"
    chosen = _choose_metrics(metrics, run_config.metrics if run_config else None, dataset, unavailable, endpoint=endpoint)
    if any(m.needs == Needs.LLM for m in chosen) and judges.llm is None:
        raise fail(f"LLM metrics need a judge: {unavailable}")
    if dry_run:
        _print_estimate(dataset, chosen, judges, settings, concurrency)
        return
    remote = _remote_executor(executor, ray_address, ray_workers, _endpoints(settings, ray_endpoint or []), concurrency, progress)
    evaluator = Evaluator(
        chosen, judges=judges, concurrency=concurrency, out_dir=out, resume=not fresh, progress=progress, strict=strict, executor=remote
    )
    judge_text = f"; judge {judges.llm.backend}: {judges.llm.model}" if judges.llm and any(m.needs == Needs.LLM for m in chosen) else ""
    _evaluate(
        evaluator,
        dataset,
        judges,
        out,
        f"Evaluating {len(dataset)} samples with {len(evaluator.metrics)} metrics → {out}{judge_text}",
        store,
        tag or [],
    )


def _evaluate(evaluator: Evaluator, dataset: Dataset, judges: Judges, out: Path, opening: str, store: str | None, tags: list[str]) -> None:
    """Run the evaluation in the locked ``out`` (saying ``opening`` first), write its reports, and
    keep it in ``store`` (when given) with ``tags``; an interruption says how to resume."""
    try:
        with locked(out):
            say(opening)
            run_store = open_store(store) if store is not None else None
            result = _run(evaluator, dataset, judges)
            _save_and_print(result, out)
            if run_store is not None:
                save_run(run_store, result, out, tags)
                run_store.close()
    except OutputDirError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt as stop:
        said, code = interruption(stop)
        say((said, "yellow"), f": finished scores are journalled in {out}; run the same command again to resume.")
        raise typer.Exit(code) from None


def _endpoints(settings: JudgeConfig, more: list[str]) -> list[JudgeConfig]:
    """The judge settings, and a copy for each further endpoint (``--ray-endpoint``)."""
    if more and settings.chosen_backend != "openai":
        raise fail("--ray-endpoint needs an endpoint judge: give --judge-base-url and --judge-model too")
    for url in more:
        register_url(url)  # credentials in a URL are masked wherever it is printed
    try:
        return [settings, *(settings.updated(base_url=url) for url in more)]
    except ValueError as exc:
        raise fail(str(exc)) from None


def _remote_executor(
    name: str, address: str | None, workers: int | None, settings: list[JudgeConfig], concurrency: int, progress: bool | None
) -> RemoteExecutor | None:
    """The executor --executor names (``None``: this process), or a usage error."""
    if name not in ("local", "ray"):
        raise fail(f"--executor {name!r} is not known: choose 'local' or 'ray'")
    if name == "local":
        if address is not None or workers is not None or len(settings) > 1:
            raise fail("--ray-address, --ray-workers and --ray-endpoint need --executor ray")
        return None
    from ragmeter.run.ray_executor import RayExecutor

    shown = sys.stderr.isatty() if progress is None else progress
    try:
        return RayExecutor(address, workers=workers, judge=settings, concurrency=concurrency, progress=shown)
    except ExecutorError as exc:
        raise fail(str(exc)) from None


def _run(evaluator: Evaluator, dataset: Dataset, judges: Judges) -> Result:
    """Evaluate, then release the judge (its model memory, its connections) whatever happens."""

    async def run() -> Result:
        try:
            return await evaluator.arun(dataset)
        finally:
            if judges.llm is not None:
                await judges.llm.aclose()

    try:
        return run_sync(run())
    except ExecutorError as exc:
        raise fail(str(exc)) from None
    except InputError as exc:
        print_issues(exc.issues, written=False, refused=True)
        raise fail("samples lack fields the chosen metrics require, or give ones they cannot use (--strict)") from None


#: The files a run writes in --out (besides its journal shards, ``journal.shard-*.jsonl``).
OUTPUT_FILES = (RESULTS_FILE, RUN_FILE, ISSUES_FILE, SUMMARY_FILE, REPORT_MD, REPORT_HTML, JOURNAL_FILE, SPOOL_FILE, LOCK_FILE)


def _refuse_own_outputs(data: list[Path], out: Path) -> None:
    """A usage error when a samples file is one of the files the run writes in ``out``
    (through a link or another spelling of the path too): the run would read its own
    results as samples and replace the file it reads."""
    if not out.is_dir():
        return
    own = [out / name for name in OUTPUT_FILES] + sorted(out.glob(f"{SHARD_PREFIX}*.jsonl"))
    for path in data:
        clash = next((written for written in own if _same_file(path, written)), None)
        if clash is not None:
            raise fail(
                f"samples file {path} is the run's own {clash.name} in --out {out}: the run would replace what it reads; "
                "copy the samples elsewhere or choose another --out"
            )


#: Rows of a samples file looked at to tell a trace file (spans) from a samples file.
SPAN_SNIFF_ROWS = 100


def _refuse_trace_files(data: list[Path]) -> None:
    """A usage error when a file given as samples is a trace file: most of its first
    :data:`SPAN_SNIFF_ROWS` rows are spans (``trace_id`` and ``span_id``), which would be
    read as samples one span each, the retrievals skipped as bad rows. A file that cannot be
    read is left to the loading, which names the problem."""
    for path in data:
        try:
            rows = [row for _, row, _ in islice(rows_of(path)[1], SPAN_SNIFF_ROWS)]
        except (InputError, OSError, ValueError):
            continue
        spans = sum(isinstance(row, dict) and "trace_id" in row and "span_id" in row for row in rows)
        if rows and spans * 2 > len(rows):
            raise fail(
                f"{path} is a trace file (spans), not samples: run `ragmeter traces export {shlex.quote(str(path))} -o samples.jsonl` first"
            )


def _same_file(path: Path, other: Path) -> bool:
    try:
        return path.samefile(other)
    except OSError:  # the other file does not exist (yet)
        return False


def _load(data: list[Path], strict: bool) -> Dataset:
    try:
        dataset = load_dataset(*data, strict=strict)
    except InputError as exc:
        print_issues(exc.issues, written=False, refused=True)
        raise fail("input is not usable; nothing was evaluated") from None
    if dataset.issues:
        say((f"{len(dataset.issues)} input issue(s):", "yellow"))
        print_issues(dataset.issues, written=False)
    if not dataset.samples:
        raise fail("no valid samples to evaluate")
    return dataset


def _judges(settings: JudgeConfig) -> tuple[Judges, str | None]:
    """The judges for the run, and why there is no LLM judge (``None`` when there is one)."""
    disk_cache = settings.open_cache()
    llm, unavailable = None, None
    try:
        llm = settings.build(disk_cache)
    except JudgeError as exc:
        unavailable = str(exc)
    store = EmbeddingStore(disk_cache, USEEncoder.model_name) if disk_cache is not None else None
    return Judges(embedder=BatchingEmbedder(store=store), llm=llm), unavailable


def _named_metrics(spec: str) -> tuple[list[str], list[Metric]]:
    """The names in --metrics ``spec`` (metrics and groups), and the metrics named on their
    own; a usage error says what is wrong with the spec."""
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names:
        raise fail(f"--metrics {spec.strip()!r} names no metric; give names such as token_f1,ndcg@5 (see `ragmeter metrics`)")
    try:
        return names, resolve_metrics([name for name in names if name not in METRIC_GROUPS])
    except ValueError as exc:
        raise fail(f"--metrics: {exc}") from None


def _choose_metrics(
    spec: str | None, configured: list[Metric] | None, dataset: Dataset, unavailable: str | None, *, endpoint: bool = False
) -> list[Metric]:
    """The metrics to run: --metrics, else the config file's, else automatic selection.

    ``spec`` is a comma-separated list of metric names and groups (``auto``, ``model-free``,
    ``all``), so ``model-free,faithfulness`` adds one LLM metric to the automatic model-free
    choice. ``unavailable`` is ``None`` when an LLM judge can run, else the reason it cannot.
    ``endpoint`` is true when the settings name an endpoint judge (see :func:`_metric_group`).
    """
    if spec is None and configured is not None:
        return configured
    names, named = _named_metrics("auto" if spec is None else spec)
    chosen: dict[str, Metric] = {}
    for group in dict.fromkeys(name for name in names if name in METRIC_GROUPS):
        for metric in _metric_group(group, dataset, unavailable, endpoint):
            chosen.setdefault(metric.id, metric)
    # A metric named on its own keeps its own parameters, and its place after the groups.
    chosen = {id_: metric for id_, metric in chosen.items() if id_ not in {m.id for m in named}} | {m.id: m for m in named}
    if not chosen:
        raise fail("no metric applies: the samples lack the fields every metric requires (see `ragmeter metrics`)")
    return list(chosen.values())


#: Names that stand for several metrics in --metrics.
METRIC_GROUPS = ("auto", "model-free", "all")


def _metric_group(name: str, dataset: Dataset, unavailable: str | None, endpoint: bool) -> list[Metric]:
    """The metrics a group name of --metrics stands for (see the option's help). Without a
    judge (``unavailable`` says why), ``auto`` leaves the LLM metrics out, unless the settings
    name an endpoint (``endpoint``): a judge the user configured that cannot run (a base URL
    without http://, say) is a usage error, not a run without LLM metrics."""
    if name == "all":
        return [cls() for cls in metric_classes().values() if cls.needs in (Needs.NOTHING, Needs.EMBEDDINGS)]
    if name == "auto" and unavailable is not None:
        if endpoint:
            raise fail(f"LLM metrics need a judge: {unavailable}")
        say(("LLM metrics skipped", "yellow"), f": {unavailable}")
    return applicable_metrics(dataset, llm=name == "auto" and unavailable is None)


def _save_and_print(result: Result, out: Path) -> None:
    field_issues = [i for i in result.issues if not i.skipped]
    if field_issues:
        heading = f"{len(field_issues)} required field(s) missing or unusable; the metrics that need them leave those samples unscored:"
        say((heading, "yellow"))
        print_issues(field_issues)
    try:
        result.save(out)
        summary = write_reports(result, out)
    except OSError as exc:  # a folder in a report's place, a full disk
        raise fail(f"cannot write the results and reports into {out}: {write_problem(exc)}") from None
    console.print(scores_table(result))
    for line in failure_lines(result):
        say(("failed: ", "bold yellow"), line)
    usage = usage_rows(result)
    if usage:
        console.print(usage_table("LLM judge usage", usage, local=(result.run.get("judge") or {}).get("backend") == "local"))
    print_diagnosis(summary["diagnosis"])
    run = result.run
    described = judge_line(run.get("judge")) if usage else None
    if described:
        say(f"Judge: {described}.")
    for warning in judge_warnings(run.get("judge")):
        say(("judge warning", "bold yellow"), f": {warning}")
    say(f"{run['pairs_computed']} scores computed, {run['pairs_resumed']} resumed from the journal, {run['seconds']:.1f} s.")
    written = ", ".join(str(out / name) for name in (RESULTS_FILE, SUMMARY_FILE, REPORT_MD))
    say(f"Wrote {written}; open {out / REPORT_HTML} for the full report.")


def _print_estimate(dataset: Dataset, chosen: list[Metric], judges: Judges, settings: JudgeConfig, concurrency: int) -> None:
    """``--dry-run``: what the LLM metrics would spend, from a stand-in judge."""
    llm_metrics = [m for m in chosen if m.needs == Needs.LLM]
    if not llm_metrics or judges.llm is None:
        say("No LLM metric chosen: nothing would be spent on a judge.")
        return
    estimate = estimate_usage(dataset, llm_metrics, judges, settings, concurrency)
    rows = [*estimate.per_metric.items(), ("total", estimate.total)]
    console.print(usage_table(f"Estimate for {len(dataset)} samples (no model was called)", rows, estimate.local))
    if estimate.local:
        say(f"The local judge would need roughly {estimate.local_seconds / 60:.0f} min on 2 CPU cores (before cache hits).")
    elif estimate.total.cost_usd is None:
        say(f"No price known for model '{estimate.model}': pass --prices to get a cost.")

"""``ragmeter sweep``: a grid of pipeline configurations over one test set, the Pareto front of
quality against latency and cost, and which configurations are significantly worse than the best."""

import contextlib
from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import console, fail, say, table
from ragmeter.cli.evaluate import ExecutorOption, RayAddressOption, RayWorkersOption, _remote_executor
from ragmeter.data import InputError
from ragmeter.decide.sweep import SWEEP_FILE, WORSE, import_pipeline, load_sweep_file, run_sweep
from ragmeter.judges.config import JudgeConfig
from ragmeter.report.sweep import SWEEP_MD, sweep_rows
from ragmeter.run.engine import DEFAULT_CONCURRENCY
from ragmeter.run.executor import ExecutorError
from ragmeter.run.outdir import OutputDirError, locked


@command("sweep")
def sweep_command(
    testset: Annotated[Path, typer.Argument(help="Test set: questions, and references when the metrics need them.")],
    grid: Annotated[Path, typer.Option("--grid", "-g", help="Sweep file (YAML): pipeline, and grid: or configs:.")],
    metrics: Annotated[str, typer.Option("--metrics", "-m", help="Comma-separated metric names, the same for every configuration.")],
    pipeline: Annotated[
        str | None, typer.Option(help="module:function taking (config, sample); overrides the sweep file's pipeline.")
    ] = None,
    quality: Annotated[str | None, typer.Option(help="The metric that measures quality (default: the first of --metrics).")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for each configuration's run, sweep.json and sweep.md.")] = Path(
        "sweep-out"
    ),
    alpha: Annotated[float, typer.Option(min=0.0001, max=0.5, help="Family-wise significance level (Holm across the comparisons).")] = 0.05,
    timeout: Annotated[float | None, typer.Option(min=0.001, help="Seconds a pipeline may take per question.")] = None,
    pipeline_concurrency: Annotated[int, typer.Option(min=1, help="Questions in flight per configuration.")] = 4,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    ray_workers: RayWorkersOption = None,
) -> None:
    """Run the pipeline with every configuration of the sweep file over the test set, score
    each, and report the Pareto front of quality against latency and cost, with the
    configurations significantly worse than the best (paired tests, Holm-corrected).

    Writes one run directory per configuration, sweep.json and sweep.md to --out. With
    --executor ray, each configuration's pairs are scored on Ray workers (one cluster for the
    whole sweep; LLM metrics use the judge the RAGMETER_JUDGE_* environment describes); the
    pipeline runs in this process.
    """
    try:
        settings = JudgeConfig.from_env()
    except ValueError as exc:
        raise fail(str(exc)) from None
    remote = _remote_executor(executor, ray_address, ray_workers, [settings], DEFAULT_CONCURRENCY, False)
    try:
        named, configs = load_sweep_file(grid)
        spec = pipeline or named
        if spec is None:
            raise ValueError(f"{grid} names no pipeline: add pipeline: module:function, or pass --pipeline")
        function = import_pipeline(spec)
        names = [name.strip() for name in metrics.split(",") if name.strip()]
        with locked(out), remote.hold() if remote is not None else contextlib.nullcontext():
            where = f" on {executor}" if remote is not None else ""
            say(f"Sweeping {len(configs)} configurations of {spec} over {testset}{where} → {out}")
            sweep = run_sweep(
                function, configs, testset, names, quality=quality, out_dir=out, alpha=alpha, timeout=timeout,
                pipeline_concurrency=pipeline_concurrency, executor=remote,
            )  # fmt: skip
    except ExecutorError as exc:
        raise fail(str(exc)) from None
    except InputError as exc:
        raise fail(f"{testset}: {exc}") from None
    except (OutputDirError, ValueError, TypeError) as exc:
        raise fail(str(exc)) from None
    document = sweep.to_dict()
    columns = ["configuration", *((c, "right") for c in ("quality", "latency ms", "cost")), "Pareto"]
    columns += [("vs best", "right"), "95% CI", ("p (Holm)", "right"), "verdict"]
    console.print(table(f"Sweep on {sweep.quality_metric}", columns, sweep_rows(document)))
    worse = document["significantly_worse"]
    say(f"Best: {sweep.best}. Pareto front: {', '.join(document['pareto_front']) or 'none'}.")
    say(f"{len(worse)} configuration(s) {WORSE}" + (f": {', '.join(worse)}." if worse else "."))
    say(f"Wrote {out / SWEEP_FILE} and {out / SWEEP_MD}.")

"""``ragmeter bench``: agreement of metrics with human labels, with intervals and cost."""

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ragmeter.bench.report import write as write_bench
from ragmeter.bench.runner import run_task
from ragmeter.bench.suites import SUITES, bench_tasks, labelled_file
from ragmeter.bench.task import DEFAULT_DATA_DIR, Task
from ragmeter.cli.app import command
from ragmeter.cli.console import fail, say
from ragmeter.cli.options import JudgeOptions, judge_options
from ragmeter.data import InputError
from ragmeter.judges import BatchingEmbedder, JudgeError, Judges
from ragmeter.judges.cache import EmbeddingStore
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.metrics import Needs, create_metric
from ragmeter.run.engine import resolve_metrics
from ragmeter.run.outdir import OutputDirError, check_usable, prepare


@command("bench")
@judge_options
def bench_command(
    suites: Annotated[
        list[str] | None,
        typer.Argument(
            help="Labelled sets to measure against: qags, summedits, ragchecker, clapnq, msmarco, rgb (default: all); "
            "a set/task name (clapnq/context_recall) measures that task only."
        ),
    ] = None,
    data_dir: Annotated[Path, typer.Option(help="Folder of the labelled sets.")] = DEFAULT_DATA_DIR,
    limit: Annotated[int | None, typer.Option(min=1, help="Units drawn from each set (seeded); default: all.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the draw.")] = 0,
    labelled: Annotated[Path | None, typer.Option(help="Your own labelled samples instead of the built-in sets.")] = None,
    metric: Annotated[str | None, typer.Option(help="With --labelled: the metric to measure.")] = None,
    label_field: Annotated[str, typer.Option(help="With --labelled: the column holding the human label.")] = "label",
    out: Annotated[Path, typer.Option(help="Folder for the results (Markdown and JSON).")] = Path("benchmarks/results"),
    name: Annotated[str | None, typer.Option(help="File name of the results (default: meta_eval_<judge backend>).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Most (sample, metric) pairs scored at once.")] = 8,
    *,
    judge_options: JudgeOptions,
) -> None:
    """Measure metrics against human labels: agreement with 95% intervals, and cost per sample.

    Reads the labelled sets by path (never copies them) and writes Markdown and JSON
    results with the date, commit, judge and settings.
    """
    try:
        check_usable(out)  # before any judge call: a folder that is a file was found only at the first write
        _, settings = judge_options.resolve()
        if labelled is not None:
            if not metric:
                raise ValueError("--labelled needs --metric")
            resolve_metrics([metric])
            task, left_out = labelled_file(labelled, metric, label_field, limit, seed)
            tasks = [task]
            if left_out:
                say((f"{len(left_out)} sample(s) left out, without a usable label:", "yellow"))
                for line in left_out[:10]:
                    say(f"  {line}")
        else:
            tasks, left_out = bench_tasks(suites or list(SUITES), data_dir, limit, seed), []
    except (ValueError, FileNotFoundError, InputError, OutputDirError) as exc:
        raise fail(str(exc)) from None
    judges = _judges(settings, tasks)
    try:
        prepare(out)  # only now: bad settings or data leave no empty folder behind
    except OutputDirError as exc:
        raise fail(str(exc)) from None
    described = judges.llm.describe() if judges.llm is not None else {"backend": "none", "model": "-"}
    run_settings = {
        "judge": described,
        "limit": limit,
        "seed": seed,
        "data_dir": str(data_dir),
        "command": "ragmeter " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "left_out": left_out,
    }
    results = []
    for task in tasks:
        say(f"{task.name}: {len(task.dataset)} samples, {len(task.units)} labelled units …")
        results.append(run_task(task, judges, concurrency=concurrency))
        for statistic, value in results[-1].statistics.items():
            say(f"  {statistic} {value['value']:.3f}{_interval(value)}")
        # Written after every task: a long run that is stopped keeps the tasks it finished. The
        # judge is described again: what it found out (its verdict mode, warnings) goes in too.
        if judges.llm is not None:
            run_settings["judge"] = judges.llm.describe()
        json_path, md_path = write_bench(results, run_settings, out, name or f"meta_eval_{described['backend']}")
    say(f"Wrote {md_path} and {json_path}")


def _interval(statistic: dict[str, Any]) -> str:
    """`` [low, high]`` of a statistic's 95% interval (``statistic``: its ``ci_low`` and
    ``ci_high``), as the Markdown gives it; nothing when it has none."""
    low, high = statistic.get("ci_low"), statistic.get("ci_high")
    return f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""


def _judges(settings: JudgeConfig, tasks: list[Task]) -> Judges:
    llm = None
    disk_cache = settings.open_cache()  # one connection for the judge's answers and the embeddings
    if any(create_metric(t.metric).needs == Needs.LLM for t in tasks):
        try:
            llm = settings.build(disk_cache)
        except JudgeError as exc:
            raise fail(f"the benchmark needs an LLM judge: {exc}") from None
    store = EmbeddingStore(disk_cache, USEEncoder.model_name) if disk_cache is not None else None
    return Judges(embedder=BatchingEmbedder(store=store), llm=llm)

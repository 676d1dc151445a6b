"""``ragmeter monitor``: score a share of the live traces in the run store, in the background,
resumably, within judge budgets per hour in dollars and in calls (see :mod:`ragmeter.monitor.online`)."""

from typing import TYPE_CHECKING, Annotated

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import fail, say
from ragmeter.cli.options import JudgeOptions, judge_options
from ragmeter.cli.runs import DEFAULT_STORE, StoreOption, open_existing_store
from ragmeter.judges import BatchingEmbedder, JudgeError, Judges
from ragmeter.judges.cache import EmbeddingStore
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.metrics import Metric, Needs
from ragmeter.run.engine import resolve_metrics
from ragmeter.run.sync import interruption, run_sync

if TYPE_CHECKING:
    from ragmeter.monitor import Progress

EmbedOption = Annotated[
    bool,
    typer.Option(
        "--embed/--no-embed",
        help="Store the question vector of every trace decided about, sampled or not (query drift then only reads vectors).",
    ),
]

#: Sample fields traces never have: metrics that require them cannot score live traffic.
REFERENCE_FIELDS = ("reference", "reference_contexts", "reference_context_ids")


@command("monitor")
@judge_options
def monitor_command(
    metrics: Annotated[
        str, typer.Option("--metrics", "-m", help="Comma-separated reference-free metrics: faithfulness, answer_relevancy, latency_ms...")
    ],
    store: StoreOption = DEFAULT_STORE,
    share: Annotated[float, typer.Option(min=0.0, max=1.0, help="Share of the traces to score, chosen by a hash of the trace id.")] = 0.1,
    max_cost_per_hour: Annotated[
        float | None, typer.Option(min=0.0, help="Most judge cost in US dollars per rolling hour; scoring pauses beyond it.")
    ] = None,
    max_calls_per_hour: Annotated[
        int | None,
        typer.Option(
            min=0, help="Most judge model calls per rolling hour, for any judge (the local one costs nothing); scoring pauses beyond it."
        ),
    ] = None,
    batch: Annotated[int, typer.Option(min=1, help="Traces decided per transaction.")] = 20,
    interval: Annotated[
        float, typer.Option(min=0.1, help="Seconds to wait when there is no new trace (at least 0.1: 0 read the store without a pause).")
    ] = 10.0,
    once: Annotated[bool, typer.Option(help="Stop when every trace is decided instead of waiting for new ones.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Most (sample, metric) pairs scored at once.")] = 4,
    embed: EmbedOption = True,
    *,
    judge_options: JudgeOptions,
) -> None:
    """Score new traces in the store as they arrive (Ctrl-C stops; running again resumes)."""
    from ragmeter.monitor import MonitorSettings, Progress, run_monitor
    from ragmeter.store.vectors import packaged_encoder

    try:
        _, settings = judge_options.resolve()
        chosen = resolve_metrics([name.strip() for name in metrics.split(",") if name.strip()])
        limits = MonitorSettings(
            share=share, max_cost_per_hour=max_cost_per_hour, max_calls_per_hour=max_calls_per_hour, batch=batch, concurrency=concurrency
        )
    except ValueError as exc:
        raise fail(str(exc)) from None
    if not chosen:
        raise fail(f"--metrics {metrics!r} names no metric")
    needing_reference = [m.id for m in chosen if any(f in REFERENCE_FIELDS for f in m.required)]
    if needing_reference:
        raise fail(f"live traces have no reference answer or documents, which these metrics need: {', '.join(needing_reference)}")
    opened = open_existing_store(store)  # a misspelt path would make an empty store and, with --once, exit 0
    try:
        judges = _judges(settings, chosen)
    except BaseException:
        opened.close()
        raise
    say(f"Monitoring {store}: {share:.0%} of the traces with {', '.join(m.id for m in chosen)}")
    latest: list[Progress] = []  # the totals after the last batch stored, said on an interruption
    try:
        progress = run_monitor(
            opened,
            chosen,
            judges,
            limits,
            interval=interval,
            once=once,
            on_pass=lambda p: _say_pass(p, latest),
            encoder=packaged_encoder() if embed else None,
        )
    except KeyboardInterrupt as stop:
        said, code = interruption(stop)
        done = latest[0] if latest else Progress()
        say(
            (said, "yellow"),
            f": this run stored {done.scored} trace(s) scored, {done.not_sampled} not sampled and {done.unscorable} unscorable "
            "(a batch under way is not stored); run the same command again to resume.",
        )
        raise typer.Exit(code) from None
    finally:
        opened.close()
        if judges.llm is not None:
            run_sync(judges.llm.aclose())
    _report(progress, max_cost_per_hour, max_calls_per_hour)


def _say_pass(progress: "Progress", latest: list["Progress"]) -> None:
    """Say the totals after a batch was stored (``progress``), and keep them as ``latest[0]``."""
    latest[:] = [progress]
    say(f"scored {progress.scored}, not sampled {progress.not_sampled}, unscorable {progress.unscorable}")


def _report(progress: "Progress", max_cost_per_hour: float | None, max_calls_per_hour: int | None) -> None:
    """What the monitor did (``progress``), and which of the budgets given paused it."""
    if progress.paused_by_budget:
        budgets = [f"${max_cost_per_hour} of judge cost"] if max_cost_per_hour is not None else []
        budgets += [f"{max_calls_per_hour} judge calls"] if max_calls_per_hour is not None else []
        say(("budget", "yellow"), f": the last hour reached its budget ({' or '.join(budgets)}); the remaining traces wait.")
    if progress.judge_failed is not None:
        say(("judge failed", "yellow"), f" on every trace of the last batch ({progress.judge_failed}); they wait: run again to score them.")
    for reason, count in progress.reasons.items():
        say(f"{count} trace(s) unscorable: {reason}")
    say(
        f"Done: {progress.scored} trace(s) scored, {progress.not_sampled} not sampled, {progress.unscorable} unscorable; "
        f"{progress.embedded} question vector(s) stored."
    )


def _judges(settings: JudgeConfig, metrics: list[Metric]) -> Judges:
    """The embedder, and the LLM judge when a metric needs one (else a one-line error)."""
    disk_cache = settings.open_cache()
    store = EmbeddingStore(disk_cache, USEEncoder.model_name) if disk_cache is not None else None
    llm = None
    if any(m.needs == Needs.LLM for m in metrics):
        try:
            llm = settings.build(disk_cache)
        except JudgeError as exc:
            raise fail(f"LLM metrics need a judge: {exc}") from None
    return Judges(embedder=BatchingEmbedder(store=store), llm=llm)

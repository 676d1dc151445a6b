"""Reports of a run: ``summary.json``, ``report.md`` and a self-contained ``report.html``."""

from __future__ import annotations

from pathlib import Path

from ragmeter.data.files import write_json, write_text
from ragmeter.report.html import render_html
from ragmeter.report.markdown import render_markdown
from ragmeter.report.summary import build_summary
from ragmeter.results import Result
from ragmeter.results.rundir import SUMMARY_FILE

REPORT_MD = "report.md"
REPORT_HTML = "report.html"


def write_reports(result: Result, directory: str | Path) -> dict:
    """Write ``summary.json``, ``report.md`` and ``report.html`` into ``directory``.

    Returns the summary (see :func:`build_summary`) that the reports show.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    summary = build_summary(result)
    write_json(directory / SUMMARY_FILE, summary)
    write_text(directory / REPORT_MD, render_markdown(summary, result))
    write_text(directory / REPORT_HTML, render_html(summary, result))
    return summary


__all__ = ["REPORT_HTML", "REPORT_MD", "build_summary", "write_reports"]

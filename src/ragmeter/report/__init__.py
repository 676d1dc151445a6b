"""Reports of a run: ``summary.json``, ``report.md`` and a self-contained ``report.html``."""

from __future__ import annotations

import json
from pathlib import Path

from ragmeter.report.html import render_html
from ragmeter.report.markdown import render_markdown
from ragmeter.report.summary import build_summary
from ragmeter.result import SUMMARY_FILE, Result

REPORT_MD = "report.md"
REPORT_HTML = "report.html"


def write_json_and_markdown(directory: str | Path, json_name: str, document: dict, md_name: str, markdown: str) -> tuple[Path, Path]:
    """Write ``document`` as JSON and ``markdown`` into ``directory`` (created if missing);
    return the two paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    json_path, md_path = directory / json_name, directory / md_name
    json_path.write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")
    md_path.write_text(markdown, encoding="utf-8")
    return json_path, md_path


def write_reports(result: Result, directory: str | Path) -> dict:
    """Write ``summary.json``, ``report.md`` and ``report.html`` into ``directory``.

    Returns the summary (see :func:`build_summary`) that the reports show.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    summary = build_summary(result)
    (directory / SUMMARY_FILE).write_text(json.dumps(summary, ensure_ascii=False, indent=1), encoding="utf-8")
    (directory / REPORT_MD).write_text(render_markdown(summary, result), encoding="utf-8")
    (directory / REPORT_HTML).write_text(render_html(summary, result), encoding="utf-8")
    return summary


__all__ = ["REPORT_HTML", "REPORT_MD", "build_summary", "write_reports"]

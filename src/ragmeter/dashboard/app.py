"""``ragmeter serve``'s web application (FastAPI): the runs leaderboard, one run's report, two
runs compared with the statistics of ``ragmeter compare``, a metric's trend on its control chart,
the drift panels (every metric's control chart over the runs and over the monitor's days, the
last knowledge-base change report, and query drift of the stored requests), and the trace browser with each trace's scores and reasons.

Read-only: every route is a GET and nothing is written. Pages are rendered on the server with
Jinja2's autoescaping (data is never markup), carry a Content-Security-Policy that forbids any
request outside the page, and load nothing from elsewhere (no CDN; works offline). When a token is
set, every request needs it: ``Authorization: Bearer TOKEN``, or ``?token=TOKEN`` once (it is then
kept in a cookie).
"""

from __future__ import annotations

import html
import re
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

try:
    from fastapi import FastAPI, HTTPException, Query, Request
    from fastapi.responses import HTMLResponse, PlainTextResponse, Response
except ImportError as missing:  # the extra is not installed
    raise ImportError("the dashboard needs FastAPI and uvicorn: pip install 'ragmeter[dashboard]'") from missing

from ragmeter.dashboard.drift_panels import CachedEncoder, query_drift_panel, read_kb_report
from ragmeter.dashboard.queries import monitored_metrics, trace_detail, trace_page
from ragmeter.data.files import unicode_text
from ragmeter.decide.compare import compare_results
from ragmeter.judges.embeddings import Encoder
from ragmeter.monitor.ledger import day_chart, decision_counts, run_chart
from ragmeter.report import compare as compare_report
from ragmeter.report.formatting import format_number
from ragmeter.report.html import render_html
from ragmeter.report.summary import build_summary
from ragmeter.store import RunStore, StoreError
from ragmeter.store.schema import ID_LENGTH
from ragmeter.store.vectors import packaged_encoder

COOKIE = "ragmeter_token"
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'self'"


@lru_cache(maxsize=1)
def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ragmeter", "dashboard/templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["num"] = format_number
    env.filters["segment"] = _segment
    env.filters["trace_link"] = _trace_link
    return env


def _segment(value: Any) -> str:
    """``value`` as one percent-encoded part of a link's path: a trace id, run id or metric id
    from the store, whose ``/``, ``?``, ``#`` or ``%`` would otherwise make another path or a
    query of it (``/traces/../runs/x`` led to a run page); the routes read it back whole."""
    return quote(str(value), safe="")


def _trace_link(trace_id: Any) -> str:
    """The link to a trace's page: ``/traces/`` and its id as one :func:`_segment`, or for an id
    of ``.`` or ``..`` (which browsers and HTTP clients resolve as a path's dot segments, even
    percent-encoded as ``%2E``: ``/traces/..`` led to the leaderboard) ``/trace?id=`` and the id."""
    if str(trace_id) in (".", ".."):
        return f"/trace?id={quote(str(trace_id), safe='')}"
    return f"/traces/{_segment(trace_id)}"


def _page(template: str, **values: Any) -> HTMLResponse:
    return _html(_templates().get_template(template).render(**values), {"Content-Security-Policy": CSP})


def _html(text: str, headers: dict[str, str] | None = None) -> HTMLResponse:
    """A page of ``text``; half a surrogate pair (a stored tag that was no UTF-8) is replaced,
    since the page is sent as UTF-8."""
    return HTMLResponse(unicode_text(text), headers=headers)


# The policy a report page states in its head, before any data (data's quotes are entities,
# so no data can write this tag).
_META_CSP = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')


def _report(page: str) -> HTMLResponse:
    """A run or comparison report (see :mod:`ragmeter.report.html`) served with its own
    policy, which pins the hash of its one inline script, as the Content-Security-Policy
    header too; the dashboard's own policy when the page states none."""
    found = _META_CSP.search(page)
    return _html(page, {"Content-Security-Policy": html.unescape(found.group(1)) if found else CSP})


def create_app(store: RunStore, token: str | None = None, *, kb_report: Path | None = None, encoder: Encoder | None = None) -> FastAPI:
    """The application over ``store``.

    Args:
        store: The run store to show.
        token: When set, required on every request (see the module's description).
        kb_report: The JSON file ``ragmeter drift kb --json`` writes, shown on the drift panel.
        encoder: The encoder of query drift, whose stored question vectors are read (default: the
            packaged multilingual encoder of ``ragmeter drift queries``); it loads and encodes
            only questions without a stored vector.
    """
    app = FastAPI(title="ragmeter", docs_url=None, redoc_url=None, openapi_url=None)
    _require_token(app, token)
    _drift_routes(app, store, kb_report, CachedEncoder(encoder or packaged_encoder()))

    @app.get("/", response_class=HTMLResponse)
    def leaderboard() -> HTMLResponse:
        rows = store.runs()
        metrics = sorted({m for r in rows for m in r["means"]})
        units = {m: u for r in rows for m, u in r["units"].items()}
        return _page("leaderboard.html.j2", runs=rows, metrics=metrics, units=units)

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_report(run_id: str) -> HTMLResponse:
        result = _load(store, run_id)
        return _report(render_html(build_summary(result), result))

    @app.get("/compare", response_class=HTMLResponse)
    def compare(a: str = Query(..., max_length=64), b: str = Query(..., max_length=64)) -> HTMLResponse:
        first, second = _load(store, a), _load(store, b)
        comparison = compare_results(first, second, label_a=store.resolve(a), label_b=store.resolve(b))
        return _report(compare_report.render_html(comparison.to_dict()))

    @app.get("/trends/{metric_id:path}", response_class=HTMLResponse)  # an id with "/" is one part of the link
    def trend(metric_id: str, baseline: int = Query(5, ge=1, le=1000)) -> HTMLResponse:
        chart = run_chart(store, metric_id, baseline)
        return _page("trend.html.j2", chart=chart, polyline=_polyline([p.point.mean for p in chart.points]), baseline=baseline)

    @app.get("/traces", response_class=HTMLResponse)
    def traces(page: int = Query(1, ge=1)) -> HTMLResponse:
        found = trace_page(store, page)
        metrics = sorted({m for r in found.rows for m in r["scores"]})
        return _page("traces.html.j2", page=found, metrics=metrics)

    @app.get("/traces/{trace_id:path}", response_class=HTMLResponse)  # an id with "/" is one part of the link
    def trace(trace_id: str) -> HTMLResponse:
        found, scores = trace_detail(store, trace_id)
        if not found:
            raise HTTPException(404, "no such trace")
        return _page("trace.html.j2", trace_id=trace_id, spans=found, scores=scores)

    @app.get("/trace", response_class=HTMLResponse)  # the ids a path cannot hold, "." and ".." (see _trace_link)
    def trace_by_id(trace_id: str = Query(..., alias="id", max_length=ID_LENGTH)) -> HTMLResponse:
        return trace(trace_id)

    return app


def _require_token(app: FastAPI, token: str | None) -> None:
    """Ask ``token`` on every request of ``app`` (nothing when it is ``None``)."""

    @app.middleware("http")
    async def require_token(request: Request, call_next: Any) -> Response:
        if token is None:
            return await call_next(request)
        given = (
            request.headers.get("authorization", "").removeprefix("Bearer ").strip()
            or request.query_params.get("token")
            or request.cookies.get(COOKIE)
            or ""
        )
        if not secrets.compare_digest(given.encode(), token.encode()):
            return PlainTextResponse("a token is required: ?token=... or Authorization: Bearer ...", status_code=401)
        response = await call_next(request)
        if request.query_params.get("token"):
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return response


def _drift_routes(app: FastAPI, store: RunStore, kb_report: Path | None, encoder: CachedEncoder) -> None:
    """The drift panels of ``app``: score drift and the knowledge-base report (``/drift``), and
    query drift of the stored requests (``/drift/queries``), encoded by ``encoder``."""

    @app.get("/drift", response_class=HTMLResponse)
    def drift(baseline: int = Query(5, ge=1, le=1000)) -> HTMLResponse:
        run_metrics = sorted({m for r in store.runs() for m in r["means"]})
        return _page(
            "drift.html.j2",
            runs=[run_chart(store, m, baseline) for m in run_metrics],
            days=[day_chart(store, m, baseline) for m in monitored_metrics(store)],
            decisions=decision_counts(store),
            baseline=baseline,
            kb=read_kb_report(kb_report) if kb_report is not None else None,
        )

    @app.get("/drift/queries", response_class=HTMLResponse)
    def queries_drift(days: int = Query(7, ge=1, le=366), limit: int = Query(100, ge=10, le=1000)) -> HTMLResponse:
        return _page("query_drift.html.j2", panel=query_drift_panel(store, encoder, days, limit))


def _load(store: RunStore, run_id: str) -> Any:
    try:
        return store.load(run_id)
    except StoreError as exc:
        raise HTTPException(404, str(exc)) from None


def _polyline(values: list[float], width: int = 600, height: int = 120) -> str:
    """SVG polyline points of a series scaled into the box (numbers only, made here)."""
    if len(values) < 2:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = width / (len(values) - 1)
    return " ".join(f"{i * step:.1f},{height - (v - low) / span * height:.1f}" for i, v in enumerate(values))

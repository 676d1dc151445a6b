"""The dashboard's pages over a store with hostile data (FastAPI's test client): every page
answers, data stays text, the Content-Security-Policy forbids outside requests, the token
guards every page, and ``ragmeter serve`` will not bind beyond loopback without one."""

from __future__ import annotations

import html
import re
import urllib.parse

import pytest
from cli_helpers import runner
from fastapi.testclient import TestClient

from ragmeter.cli import app as cli
from ragmeter.dashboard.app import create_app
from ragmeter.data.schema import Sample
from ragmeter.metrics import create_metric
from ragmeter.metrics.base import Score
from ragmeter.monitor.ledger import SCORED, Decision, record
from ragmeter.observe import RetrievedContext, SpanRecord
from ragmeter.results import Result, SampleResult
from ragmeter.store import RunStore

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def make_run(day: int, mean: float) -> Result:
    samples = [
        SampleResult(key=f"s{i}", sample=Sample(id=f"s{i}", user_input=f"{HOSTILE} {i}", response="r"), source="d", location=f"line {i}", scores={"token_f1": Score(mean + 0.01 * (i % 3), HOSTILE)})
        for i in range(12)
    ]  # fmt: skip
    return Result(samples=samples, metrics=[create_metric("token_f1").info()], run={"started_at": f"2026-11-{day:02d}T00:00:00+00:00"})


@pytest.fixture
def store(tmp_path):
    opened = RunStore.open(str(tmp_path / "runs.db"))
    opened.save(make_run(1, 0.6), tags=[HOSTILE])
    opened.save(make_run(2, 0.7))
    spans = []
    for i in range(60):
        root = SpanRecord(
            trace_id=f"{i:032x}",
            span_id=f"{i:016x}",
            name="rag",
            started_at=f"2026-11-03T00:00:{i:02d}.000+00:00",
            question=f"{HOSTILE} q{i}",
            response=HOSTILE,
            latency_ms=12.5,
        )
        child = SpanRecord(
            trace_id=root.trace_id,
            span_id=f"{i + 100:016x}",
            parent_id=root.span_id,
            name="retrieve",
            kind="RETRIEVER",
            started_at=root.started_at,
            contexts=[RetrievedContext(HOSTILE, "doc<1>", 0.5)],
        )
        spans += [root, child]
    opened.add_spans(spans)
    item = SampleResult(key="t", sample=Sample(id="t"), source="", location="", scores={"faithfulness": Score(0.25, HOSTILE)})
    record(opened, [Decision(f"{59:032x}", SCORED, result=item)], "2026-11-03T01:00:00+00:00", {})
    yield opened
    opened.close()


def test_every_page_answers_with_data_as_text(store):
    client = TestClient(create_app(store))
    run_ids = [r["id"] for r in store.runs()]
    pages = [
        "/",
        f"/runs/{run_ids[0]}",
        f"/compare?a={run_ids[1]}&b={run_ids[0]}",
        "/trends/token_f1",
        "/drift",
        "/traces",
        "/traces?page=2",
        f"/traces/{59:032x}",
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        assert "<script>alert" not in response.text and "<img src=x" not in response.text, page
        assert "default-src 'none'" in response.headers.get("content-security-policy", ""), page
    leaderboard = client.get("/").text
    assert all(run_id in leaderboard for run_id in run_ids) and "&lt;script&gt;alert" in leaderboard
    first = client.get("/traces").text
    assert "120 requests" not in first and "60 requests, newest first; page 1 of 2." in first
    assert f"/traces/{59:032x}" in first and "0.250" in first  # the newest, with its monitor score
    detail = client.get(f"/traces/{59:032x}").text
    assert "doc&lt;1&gt;" in detail and "RETRIEVER" in detail and "faithfulness" in detail
    assert client.get("/compare", params={"a": run_ids[1], "b": run_ids[0]}).text.count("token_f1") >= 1
    # The run report's header policy is its own: it allows the page's one script by hash.
    report = client.get(f"/runs/{run_ids[0]}")
    policy = report.headers["content-security-policy"]
    pinned = policy.split("script-src ")[1].split(";")[0].strip("'")
    assert pinned.startswith("sha256-") and pinned in report.text  # the page's meta policy pins the same
    assert "script-src" not in client.get("/compare", params={"a": run_ids[1], "b": run_ids[0]}).headers["content-security-policy"]


def test_unknown_things_are_404_and_nothing_can_be_written(store):
    client = TestClient(create_app(store))
    assert client.get("/runs/nope").status_code == 404
    assert client.get(f"/traces/{'9' * 32}").status_code == 404
    assert client.post("/", data={}).status_code == 405
    assert client.delete(f"/runs/{store.runs()[0]['id']}").status_code == 405


def test_a_token_guards_every_page(store):
    client = TestClient(create_app(store, token="s3cret"))
    assert client.get("/").status_code == 401 and client.get("/traces").status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    first = client.get("/?token=s3cret")
    assert first.status_code == 200 and "httponly" in first.headers["set-cookie"].lower()
    assert client.get("/traces").status_code == 200  # the cookie now carries it


def test_serve_refuses_other_addresses_without_a_token(tmp_path):
    done = runner.invoke(cli, ["serve", "--host", "0.0.0.0", "--store", str(tmp_path / "r.db")])
    assert done.exit_code == 2 and "set --token" in done.output


def test_serve_refuses_a_store_that_does_not_exist(tmp_path, monkeypatch):
    """A misspelt --store made an empty SQLite database there and served an empty dashboard."""
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)  # never listen in a test
    nowhere = tmp_path / "runs_typo.db"
    done = runner.invoke(cli, ["serve", "--store", str(nowhere)])
    assert done.exit_code == 2 and f"--store {nowhere}: no such store" in done.output, done.output
    assert not nowhere.exists()


def test_the_drift_panel_shows_each_metric_s_control_chart(store):
    client = TestClient(create_app(store))
    page = client.get("/drift?baseline=1").text
    assert "Scores over the stored runs" in page and "token_f1" in page and "faithfulness" in page
    assert "scored 1" in page and ("in control" in page or "out of control" in page)
    assert "too few points" in client.get("/drift").text  # baseline 5: two runs are too few


def test_runs_with_other_settings_of_the_metric_are_left_out_of_its_charts(store):
    older = make_run(3, 0.9)
    older.metrics[0]["config"] = {"threshold": 0.5}
    store.save(older)
    newest = make_run(4, 0.7)
    store.save(newest)
    client = TestClient(create_app(store))
    trend = client.get("/trends/token_f1?baseline=1").text
    assert "1 earlier run(s) scored this metric with other settings" in trend
    assert "1 earlier run(s) with other settings left out" in client.get("/drift?baseline=1").text


def test_the_comparison_is_the_one_ragmeter_compare_computes(store):
    from ragmeter.decide.compare import compare_results
    from ragmeter.report.compare import render_html

    a, b = (r["id"] for r in store.runs()[::-1])
    expected = render_html(compare_results(store.load(a), store.load(b), label_a=a, label_b=b).to_dict())
    assert TestClient(create_app(store)).get("/compare", params={"a": a[:6], "b": b}).text == expected


@pytest.mark.parametrize("trace_id", ["../runs/x", "a?page=2", "b#c", "d/e f"])
def test_a_trace_id_is_one_part_of_its_link_never_a_path_or_query(store, trace_id):
    """The traces page wrote the id raw into the link: "/traces/../runs/x" led to a run page,
    "a?page=2" to trace "a", "b#c" to trace "b"; the id is now one percent-encoded part of
    the path, and the trace page reads it back whole."""
    store.add_spans(
        [SpanRecord(trace_id=trace_id, span_id="f" * 16, name="rag", started_at="2026-11-04T00:00:00+00:00", question="newest")]
    )
    client = TestClient(create_app(store))
    (link,) = re.findall(r'<a href="(/traces/[^"]*)">2026-11-04', client.get("/traces").text)
    assert link == "/traces/" + urllib.parse.quote(trace_id, safe="")
    detail = client.get(link)
    assert detail.status_code == 200 and f"<code>{html.escape(trace_id)}</code>" in detail.text


@pytest.mark.parametrize("trace_id", [".", ".."])
def test_a_trace_whose_id_is_a_dot_segment_is_reachable_from_its_link(store, trace_id):
    """ "/traces/.." is resolved by browsers and HTTP clients to "/" (the leaderboard), and
    "/traces/." to the traces page, percent-encoded as %2E too: such a trace had no page."""
    store.add_spans(
        [SpanRecord(trace_id=trace_id, span_id="f" * 16, name="rag", started_at="2026-11-04T00:00:00+00:00", question="newest")]
    )
    client = TestClient(create_app(store))
    (link,) = re.findall(r'<a href="([^"]*)">2026-11-04', client.get("/traces").text)
    detail = client.get(html.unescape(link))
    assert detail.status_code == 200 and f"<code>{trace_id}</code>" in detail.text


def test_a_stored_context_score_that_is_no_number_is_shown_as_text_not_a_server_error(store):
    """A context scored "high" (stored before spans were checked, or by another tool) failed the
    trace page with a server error."""
    contexts = [RetrievedContext("c", "d1", "high"), RetrievedContext("c", "d2", 0.25)]  # type: ignore[arg-type]
    store.add_spans([SpanRecord(trace_id="h" * 32, span_id="f" * 16, name="r", started_at="2026-11-04T00:00:00+00:00", contexts=contexts)])
    page = TestClient(create_app(store)).get("/traces/" + "h" * 32)
    assert page.status_code == 200 and "d1 · score high" in page.text and "d2 · score 0.250" in page.text

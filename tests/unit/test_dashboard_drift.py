"""The dashboard's query-drift and knowledge-base panels: a new topic planted in the stored
requests is found with the same statistics as ``ragmeter drift queries``, too few questions are
said so, the report of ``ragmeter drift kb --json`` is shown (or why it cannot be), all as text."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cli_helpers import runner
from fastapi.testclient import TestClient

from ragmeter.cli import app as cli
from ragmeter.dashboard.app import create_app
from ragmeter.dashboard.drift_panels import CachedEncoder, query_drift_panel
from ragmeter.monitor.drift import query_drift
from ragmeter.observe import SpanRecord
from ragmeter.store import RunStore

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
CENTRE = np.random.default_rng(11).normal(size=32)


def encode(texts: list[str]) -> np.ndarray:
    """Random unit vectors per text; the 'new topic' questions crowd around one direction."""
    rows = []
    for text in texts:
        noise = np.random.default_rng(zlib.crc32(text.encode())).normal(size=32)
        vector = CENTRE + 0.15 * noise / np.sqrt(32) if "new topic" in text else noise
        rows.append(vector / np.linalg.norm(vector))
    return np.array(rows, dtype=np.float32)


class FakeEncoder:
    """:func:`encode` as an encoder, counting the texts it was asked to encode."""

    model_name = "fake-32"

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.encoded += texts
        return encode(texts)


encoder = FakeEncoder()


def request(i: int, day: int, question: str) -> SpanRecord:
    return SpanRecord(trace_id=f"{i:032x}", span_id=f"{i:016x}", name="rag", started_at=f"2026-10-{day:02d}T{i % 24:02d}:00:00.000+00:00", question=question)  # fmt: skip


@pytest.fixture
def store(tmp_path):
    opened = RunStore.open(str(tmp_path / "runs.db"))
    reference = [request(i, 2 + i % 5, f"old question {i}") for i in range(150)]
    current = [request(1000 + i, 9 + i % 5, f"old question {1000 + i}") for i in range(135)]
    current += [request(2000 + i, 9 + i % 5, f"{HOSTILE} new topic {i}") for i in range(15)]
    child = SpanRecord(trace_id=f"{1:032x}", span_id="f" * 16, parent_id=f"{1:016x}", name="retrieve", started_at="2026-10-14T00:00:00.000+00:00", question="not a request")  # fmt: skip
    opened.add_spans([*reference, *current, child])
    yield opened
    opened.close()


def test_a_new_topic_in_the_stored_requests_is_found_as_ragmeter_drift_queries_finds_it(store):
    panel = query_drift_panel(store, encoder, days=7, limit=1000)
    assert panel.newest == "2026-10-13T23:00:00.000+00:00" and panel.current_from == "2026-10-06T23:00:00.000+00:00"
    assert (len(panel.reference), len(panel.current)) == (150, 150) and "not a request" not in panel.current
    expected = query_drift(panel.reference, panel.current, encode)
    assert panel.result == expected and expected.drift
    assert any(all("new topic" in e for e in topic.examples) for topic in expected.grown_topics)

    page = TestClient(create_app(store, encoder=encoder)).get("/drift/queries?days=7")
    assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
    assert f"p = {expected.p_value:.4f}" in page.text and ">drift<" in page.text and "Topics that grew" in page.text
    assert "&lt;script&gt;alert" in page.text and "<script>alert" not in page.text and "<img src=x" not in page.text


def test_windows_are_cut_by_time_and_capped_to_the_newest_questions(store):
    panel = query_drift_panel(store, encoder, days=2, limit=20)
    assert panel.reference_from == "2026-10-09T23:00:00.000+00:00"  # two windows of 2 days before the newest
    assert (len(panel.reference), len(panel.current)) == (20, 20) and panel.result is not None
    assert TestClient(create_app(store, encoder=encoder)).get("/drift/queries?limit=5").status_code == 422  # at least 10


def test_too_few_or_no_questions_are_said_so(store, tmp_path):
    page = TestClient(create_app(store, encoder=encoder)).get("/drift/queries?days=30").text
    assert "Too few questions to test" in page and "(0 questions)" in page  # nothing before 30 days back
    empty = RunStore.open(str(tmp_path / "empty.db"))
    try:
        assert "No stored request has a question yet" in TestClient(create_app(empty, encoder=encoder)).get("/drift/queries").text
    finally:
        empty.close()


def test_the_last_knowledge_base_report_is_shown_as_text(store, tmp_path):
    kb, baseline, report = tmp_path / "kb", tmp_path / "baseline.json", tmp_path / "kb-change.json"
    kb.mkdir()
    (kb / "kept.md").write_text("same")
    (kb / "edited.md").write_text("before")
    (kb / "gone.md").write_text("bye")
    assert runner.invoke(cli, ["drift", "kb", str(kb), "--baseline", str(baseline)]).exit_code == 0
    (kb / "edited.md").write_text("after")
    (kb / "gone.md").unlink()
    (kb / "<img src=x onerror=alert(1)>.md").write_text("new")  # a file name cannot hold HOSTILE's '/'

    assert runner.invoke(cli, ["drift", "kb", str(kb), "--baseline", str(baseline), "--json", str(report)]).exit_code == 1

    page = TestClient(create_app(store, encoder=encoder, kb_report=report)).get("/drift").text
    assert "1 added, 1 removed, 1 edited, 1 unchanged" in page and ">changed<" in page
    assert '<td>removed</td><td class="clip">gone.md</td>' in page and "edited.md" in page
    assert "&lt;img src=x onerror=alert(1)&gt;.md" in page and "<img src=x" not in page

    report.write_text('{"kind": "query_drift"}')
    assert "not a report of" in TestClient(create_app(store, kb_report=report)).get("/drift").text
    report.write_text("{not json")
    assert "cannot read it" in TestClient(create_app(store, kb_report=report)).get("/drift").text
    report.write_text("[" * 100_000)  # nested past the parser's depth: a RecursionError was a 500
    deep = TestClient(create_app(store, kb_report=report), raise_server_exceptions=False).get("/drift")
    assert deep.status_code == 200 and "cannot read it: invalid JSON: lists and objects nested too deeply" in deep.text
    missing = TestClient(create_app(store, kb_report=tmp_path / "none.json")).get("/drift")
    assert missing.status_code == 200 and "no report yet" in missing.text
    assert "--kb-report PATH" in TestClient(create_app(store)).get("/drift").text


def test_the_cached_encoder_encodes_each_text_once():
    seen: list[list[str]] = []
    counting = FakeEncoder()
    counting.encode = lambda texts: (seen.append(texts), encode(texts))[1]  # type: ignore[method-assign]
    cached = CachedEncoder(counting, size=3)
    first = cached.encode(["a", "b", "a"])
    assert seen == [["a", "b"]] and np.array_equal(first, encode(["a", "b", "a"])) and cached.model_name == "fake-32"
    assert np.array_equal(cached.encode(["b", "c"]), encode(["b", "c"])) and seen[-1] == ["c"]
    cached.encode(["d"])  # a is the least recently used of a, b, c: forgotten
    cached.encode(["a"])
    assert seen[-1] == ["a"]

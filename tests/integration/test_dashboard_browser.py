"""The dashboard (`ragmeter serve`, a real process) in Debian's headless Chromium driven by
Playwright: each page opens, the links and the compare form work, hostile data shows as text,
nothing fires, and no request leaves the server. A screenshot of each page is written to
``$RAGMETER_SCREENSHOTS`` (default: the test's temporary folder)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from llama_server import free_port

from ragmeter.data.schema import Sample
from ragmeter.metrics import create_metric
from ragmeter.metrics.base import Score
from ragmeter.monitor.ledger import SCORED, Decision, record
from ragmeter.observe import RetrievedContext, SpanRecord
from ragmeter.results import Result, SampleResult
from ragmeter.store import RunStore

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
TOKEN = "browser-test-token"


def _store(path: Path) -> list[str]:
    store = RunStore.open(str(path))
    for day, mean in ((1, 0.60), (2, 0.62), (3, 0.40)):
        samples = [
            SampleResult(key=f"s{i}", sample=Sample(id=f"s{i}", user_input=f"{HOSTILE} question {i}", response="answer"), source="d", location=f"line {i}", scores={"token_f1": Score(mean + 0.02 * (i % 4), f"explained {HOSTILE}")})
            for i in range(20)
        ]  # fmt: skip
        store.save(
            Result(samples=samples, metrics=[create_metric("token_f1").info()], run={"started_at": f"2026-11-0{day}T00:00:00+00:00"}),
            tags=["nightly"],
        )
    spans = []
    for i in range(30):
        root = SpanRecord(
            trace_id=f"{i:032x}",
            span_id=f"{i:016x}",
            name="rag",
            started_at=f"2026-11-04T00:00:{i:02d}.000+00:00",
            question=f"{HOSTILE} live {i}",
            response="live answer",
            latency_ms=20.0,
        )
        spans += [root, SpanRecord(trace_id=root.trace_id, span_id=f"{i + 50:016x}", parent_id=root.span_id, name="retrieve", kind="RETRIEVER", started_at=root.started_at, contexts=[RetrievedContext(HOSTILE, "doc-1", 0.7)])]  # fmt: skip
    for i in range(40):  # the week before: other questions, so query drift has a reference window
        spans.append(SpanRecord(trace_id=f"{i + 100:032x}", span_id=f"{i + 100:016x}", name="rag", started_at=f"2026-10-25T00:00:{i:02d}.000+00:00", question=f"How do I reset my password, case {i}?"))  # fmt: skip
    store.add_spans(spans)
    item = SampleResult(
        key="t", sample=Sample(id="t"), source="", location="", scores={"faithfulness": Score(None, reason=f"judge said {HOSTILE}")}
    )
    record(store, [Decision(f"{29:032x}", SCORED, result=item)], "2026-11-04T01:00:00+00:00", {})
    ids = [r["id"] for r in store.runs()]
    store.close()
    return ids


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dashboard")
    run_ids = _store(folder / "runs.db")
    embedded = subprocess.run([sys.executable, "-m", "ragmeter", "traces", "embed", "--store", str(folder / "runs.db")], capture_output=True, text=True)  # fmt: skip
    assert embedded.returncode == 0 and "70 question vector(s) stored" in embedded.stderr, embedded.stderr
    kb, baseline, report = folder / "kb", folder / "kb-baseline.json", folder / "kb-change.json"
    kb.mkdir()
    (kb / "refunds.md").write_text("30 days")
    subprocess.run([sys.executable, "-m", "ragmeter", "drift", "kb", str(kb), "--baseline", str(baseline)], check=True)
    (kb / "<img src=x onerror=alert(1)>.md").write_text("new")  # the real command writes the report the panel shows
    changed = subprocess.run([sys.executable, "-m", "ragmeter", "drift", "kb", str(kb), "--baseline", str(baseline), "--json", str(report)])
    assert changed.returncode == 1
    port = free_port()
    command = [sys.executable, "-m", "ragmeter", "serve", "--store", str(folder / "runs.db"), "--port", str(port), "--token", TOKEN]
    command += ["--kb-report", str(report)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
            try:
                urllib.request.urlopen(f"{url}/?token={TOKEN}", timeout=2).close()
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "the dashboard did not answer in 60 s"
                time.sleep(0.2)
        yield url, run_ids
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's browser with `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


def test_each_page_in_a_real_browser(server, browser, tmp_path):
    url, run_ids = server
    shots = Path(os.environ.get("RAGMETER_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    events: dict[str, list[str]] = {"dialogs": [], "errors": [], "requests": []}
    page.on("dialog", lambda dialog: (events["dialogs"].append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: events["errors"].append(str(error)))
    page.on("request", lambda request: events["requests"].append(request.url))

    assert page.goto(url + "/").status == 401  # no token yet
    page.goto(f"{url}/?token={TOKEN}")
    assert page.locator("#leaderboard tbody tr").count() == 3
    assert HOSTILE not in page.content() and "nightly" in page.inner_text("#leaderboard")
    page.screenshot(path=str(shots / "dashboard-leaderboard.png"), full_page=True)

    page.click(f"a[href='/runs/{run_ids[0]}']")  # the cookie now carries the token
    page.wait_for_load_state("load")
    assert "token_f1" in page.inner_text("body") and f"{HOSTILE} question 0" in page.inner_text("body")
    page.screenshot(path=str(shots / "dashboard-run.png"), full_page=True)

    page.goto(url + "/")
    page.select_option("select[name=a]", run_ids[1])
    page.select_option("select[name=b]", run_ids[0])
    page.click("button[type=submit]")
    page.wait_for_load_state("load")
    assert "/compare?" in page.url and "token_f1" in page.inner_text("body")
    page.screenshot(path=str(shots / "dashboard-compare.png"), full_page=True)

    page.goto(url + "/trends/token_f1?baseline=2")
    assert "out of control" in page.inner_text("#trend")  # 0.40 after 0.60 and 0.62
    page.screenshot(path=str(shots / "dashboard-trend.png"), full_page=True)

    page.click("header a[href='/drift']")
    page.wait_for_load_state("load")
    assert "token_f1" in page.inner_text("body") and "too few points" in page.inner_text("body")  # baseline 5 of 3 runs
    page.goto(url + "/drift?baseline=2")
    assert "out of control" in page.inner_text("body")
    kb = page.inner_text("#kb")
    assert "1 added, 0 removed, 0 edited, 1 unchanged" in kb and "<img src=x onerror=alert(1)>.md" in kb
    page.screenshot(path=str(shots / "dashboard-drift.png"), full_page=True)

    page.click("a[href='/drift/queries']")  # the 40 + 30 questions' vectors are read from the store
    page.wait_for_load_state("load")
    drift = page.inner_text("#query-drift")
    assert "Question vectors read from the store (use-multilingual-v3)" in drift and "no stored vector" not in drift
    assert "(30 questions)" in drift and "(40 questions)" in drift and "no drift" not in drift and "drift: p = 0.0" in drift
    assert f"{HOSTILE} live" in drift  # the grown topic's examples, as text
    page.screenshot(path=str(shots / "dashboard-query-drift.png"), full_page=True)

    page.goto(url + "/traces")
    assert page.locator("#traces tbody tr").count() == 50 and f"{HOSTILE} live 29" in page.inner_text("#traces")
    page.screenshot(path=str(shots / "dashboard-traces.png"), full_page=True)
    page.click(f"a[href='/traces/{29:032x}']")
    page.wait_for_load_state("load")
    body = page.inner_text("body")
    assert f"judge said {HOSTILE}" in body and "doc-1" in body and "RETRIEVER" in body
    page.screenshot(path=str(shots / "dashboard-trace.png"), full_page=True)

    assert events["dialogs"] == [] and events["errors"] == []
    assert all(request.startswith(url) for request in events["requests"]), [r for r in events["requests"] if not r.startswith(url)]
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed, script').length") == 0
    print(f"screenshots in {shots}")
    page.close()

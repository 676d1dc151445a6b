"""The HTML report in a real headless Chromium: hostile samples stay text, the page makes
no request, and the search box, the pattern filter and the drill-down work.

Needs Debian's browser (``apt-get install chromium``) and Playwright for Python
(``pip install playwright``; no ``playwright install``: the system browser is used).
"""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture fails with how to install it
    expect = None

from ragmeter.data.schema import Sample
from ragmeter.metrics.base import Score
from ragmeter.report.html import render_html
from ragmeter.report.summary import build_summary
from ragmeter.results import Result, SampleResult

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

HOSTILE_QUESTION = '<script>alert("x")</script> hostile question'
HOSTILE_RESPONSE = '</script><script>alert("y")</script>'
HOSTILE_IMG = "<img src=x onerror=alert(1)>"
HOSTILE_LINK = '<a href="javascript:alert(2)">click</a>'
BRACES = "{{ 7 * 7 }}"


def _info(metric_id: str, family: str, unit: str | None = None) -> dict:
    return {
        "id": metric_id,
        "name": metric_id,
        "family": family,
        "needs": "nothing",
        "required": [],
        "unit": unit,
        "higher_is_better": unit is None,
        "description": f"<b>{metric_id}</b> <script>alert('desc')</script>",
        "config": {},
    }


METRICS = [
    _info("retrieval_recall", "retrieval"),
    _info("embedding_groundedness", "groundedness"),
    _info("token_f1", "correctness"),
    _info("latency_ms", "efficiency", "ms"),
]


def _result() -> Result:
    def sample(key, question, contexts, response, recall, grounded, f1, **extra):
        return SampleResult(
            key,
            Sample(
                id=key,
                user_input=question,
                retrieved_contexts=contexts,
                retrieved_context_ids=[f"doc-{key}#{i}" for i in range(len(contexts))],
                response=response,
                reference="a reference answer",
                reference_context_ids=[f"doc-{key}#0"],
                metadata=extra,
            ),
            "data.jsonl",
            f"line {key}",
            {
                "retrieval_recall": recall,
                "embedding_groundedness": grounded,
                "token_f1": f1,
                "latency_ms": Score(value=1000.0 + len(key)),
            },
        )

    good = Score(value=1.0, explanation="all good")
    bad = Score(value=0.0, explanation='<img src=y onerror=alert("expl")>', details={"why": HOSTILE_IMG})
    samples = [
        sample("en-1", "How long do refunds take?", ["Refunds take 14 days."], "14 days.", good, good, good),
        sample("en-2", "Where is the office?", ["The office is in Berlin."], "Berlin.", good, good, good),
        sample("zh-1", "退款需要多长时间？", ["退款将在十四天内处理完毕。"], "十四天。", good, bad, good),
        sample(
            "evil",
            HOSTILE_QUESTION,
            [HOSTILE_IMG, HOSTILE_LINK, BRACES],
            HOSTILE_RESPONSE,
            bad,
            bad,
            Score.unscored("reference missing <script>alert('reason')</script>"),
            note="<svg onload=alert(3)>",
        ),
    ]
    run = {
        "ragmeter_version": "0.1.0",
        "started_at": "2026-01-01T00:00:00+00:00",
        "seconds": 1.0,
        "sources": ["data.jsonl"],
        "n_samples": 4,
    }
    return Result(samples=samples, metrics=METRICS, run=run)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    result = _result()
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_html(build_summary(result), result), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's browser with `apt-get install -y chromium`")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover
        pytest.fail("Playwright for Python is missing: `pip install playwright` (no `playwright install` needed)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture()
def opened(browser, report):
    """The report open in a fresh page, with dialogs, console errors and requests recorded."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    events = {"dialogs": [], "errors": [], "requests": []}

    def on_dialog(dialog):
        events["dialogs"].append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda message: message.type == "error" and events["errors"].append(message.text))
    page.on("pageerror", lambda error: events["errors"].append(str(error)))
    page.on("request", lambda request: events["requests"].append(request.url))
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    yield page, events
    page.close()


# Playwright's string predicates (wait_for_function) are evaluated with eval(), which the
# page's Content-Security-Policy forbids: wait with expect(), which needs no eval.


def _shown(page) -> list[str]:
    return page.eval_on_selector_all(
        "#sample-list > details", "rows => rows.filter(r => !r.hidden).map(r => r.querySelector('.key').textContent)"
    )


def test_nothing_fires_errs_or_loads(opened, report):
    page, events = opened
    for details in page.query_selector_all("details"):
        details.evaluate("d => { d.open = true; }")
    page.mouse.move(200, 200)
    page.wait_for_timeout(500)
    assert events["dialogs"] == []
    assert events["errors"] == []
    assert events["requests"] == [report.as_uri()]
    assert page.evaluate("document.querySelectorAll('script').length") == 1
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert (
        page.evaluate("[...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length") == 0
    )


def test_the_search_box_filters_the_samples(opened):
    page, _ = opened
    shown_keys = page.locator("#sample-list > details:not([hidden]) > summary .key")
    assert _shown(page) == ["en-1", "en-2", "zh-1", "evil"]
    for query, keys in [
        ("refunds", ["en-1"]),
        ("十四天", ["zh-1"]),
        ("ONERROR", ["evil"]),  # contexts are searched too, ignoring case
        ("office berlin", ["en-2"]),  # every word must match
        ("no sample says this", []),
        ("", ["en-1", "en-2", "zh-1", "evil"]),
    ]:
        page.fill("#q", query)
        expect(shown_keys).to_have_text(keys)
        expect(page.locator("#shown")).to_have_text(str(len(keys)))
        assert _shown(page) == keys


def test_the_pattern_filter_and_the_pattern_links(opened):
    page, _ = opened
    healthy = page.get_attribute("#sample-list > details:first-child", "data-pattern")
    assert healthy == "healthy"
    page.select_option("#pattern", "healthy")
    assert _shown(page) == ["en-1", "en-2"]
    page.select_option("#pattern", "")
    assert len(_shown(page)) == 4
    page.click('a.all[data-pattern="healthy"]')
    assert _shown(page) == ["en-1", "en-2"]
    assert page.input_value("#pattern") == "healthy"
    # A link to one sample opens it, even when the filter hides it.
    target = page.get_attribute('#sample-list > details[data-pattern]:not([data-pattern="healthy"])', "id")
    page.evaluate(f"location.hash = '#{target}'")
    expect(page.locator(f"#{target}")).to_have_attribute("open", "")
    assert not page.eval_on_selector(f"#{target}", "d => d.hidden")


def test_expanding_the_hostile_sample_shows_its_text_literally(opened):
    page, events = opened
    evil = page.locator("#sample-list > details", has_text="hostile question")
    assert evil.count() == 1
    evil.locator("> summary").click()
    assert evil.evaluate("d => d.open")
    body = evil.locator(".body")
    assert body.is_visible()
    text = body.inner_text()
    assert HOSTILE_QUESTION in text
    assert HOSTILE_RESPONSE in text
    assert HOSTILE_IMG in text
    assert HOSTILE_LINK in text
    assert BRACES in text
    contexts = evil.locator("ol.ctx > li")
    assert contexts.count() == 3
    assert "rank 1" in contexts.nth(0).inner_text() and "doc-evil#0" in contexts.nth(0).inner_text()
    assert contexts.nth(1).locator("a").count() == 0
    # The unscored score: a dash and the reason, as text.
    row = evil.locator("table.sc tr", has_text="token_f1")
    assert row.locator("td.n").inner_text() == "–"
    assert "reference missing <script>alert('reason')</script>" in row.inner_text()
    row = evil.locator("table.sc tr", has_text="retrieval_recall")
    row.locator("summary").click()
    assert HOSTILE_IMG in row.locator("pre").inner_text()
    page.wait_for_timeout(300)
    assert events["dialogs"] == []
    assert events["errors"] == []

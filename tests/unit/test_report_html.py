"""The HTML report: content, escaping of untrusted samples, offline-ness, and the charts."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from ragmeter.data import InputIssue
from ragmeter.data.schema import Sample
from ragmeter.metrics.base import Score
from ragmeter.report.charts import family_bars, family_chart, histogram, radar_chart
from ragmeter.report.formatting import format_number
from ragmeter.report.html import render_html
from ragmeter.report.summary import build_summary
from ragmeter.results import Result, SampleResult

HOSTILE_QUESTION = '<script>alert("x")</script> What is the refund window?'
HOSTILE_RESPONSE = "</script><script>alert(2)</script> Refunds take 14 days."
HOSTILE_IMG = "<img src=x onerror=alert(1)>"
HOSTILE_LINK = '<a href="javascript:alert(3)">click me</a>'
TEMPLATE_BRACES = "{{ 7 * 7 }} {% if true %}yes{% endif %}"
HOSTILE_KEY = '"><svg onload=alert(6)>'

#: <script> elements the template itself emits.
TEMPLATE_SCRIPTS = 1


def _info(metric_id: str, family: str, unit: str | None = None, higher_is_better: bool = True, description: str = "") -> dict:
    return {
        "id": metric_id,
        "name": metric_id,
        "family": family,
        "needs": "nothing",
        "required": [],
        "unit": unit,
        "higher_is_better": higher_is_better,
        "description": description or f"What {metric_id} measures.",
        "config": {},
    }


METRICS = [
    _info("retrieval_recall", "retrieval", description="Share of relevant contexts that were retrieved."),
    _info("first_relevant_rank", "retrieval", unit="rank", higher_is_better=False),
    _info("embedding_groundedness", "groundedness"),
    _info("token_f1", "correctness"),
    _info("latency_ms", "efficiency", unit="ms", higher_is_better=False, description="Latency <b>in</b> ms & more."),
]


def _scores(recall, rank, grounded, f1, latency) -> dict[str, Score]:
    def make(value):
        return value if isinstance(value, Score) else Score(value=value, explanation="ok", details={"v": value})

    return {
        "retrieval_recall": make(recall),
        "first_relevant_rank": make(rank),
        "embedding_groundedness": make(grounded),
        "token_f1": make(f1),
        "latency_ms": make(latency),
    }


def make_result() -> Result:
    """Four samples: English, Chinese, hostile, and one with unscored and failed scores."""
    english = Sample(
        id="en-1",
        user_input="How long do refunds take?",
        retrieved_contexts=["Refunds are processed within 14 days.", "Shipping takes 3 days."],
        retrieved_context_ids=["refunds#1", "shipping#1"],
        response="Refunds take 14 days [refunds#1].",
        reference="Within 14 days.",
        reference_context_ids=["refunds#1"],
        metadata={"difficulty": "easy", "latency_ms": 820},
    )
    chinese = Sample(
        id="zh-1",
        user_input="退款需要多长时间？",
        retrieved_contexts=["退款将在十四天内处理完毕。", "发货需要三天。"],
        retrieved_context_ids=["退款#1", "发货#1"],
        response="退款需要十四天。",
        reference="十四天内。",
        reference_context_ids=["退款#1"],
        metadata={"难度": "简单"},
    )
    hostile = Sample(
        id=HOSTILE_KEY,
        user_input=HOSTILE_QUESTION,
        retrieved_contexts=[HOSTILE_IMG, HOSTILE_LINK, TEMPLATE_BRACES],
        retrieved_context_ids=["evil#1", "javascript:alert(7)", "{{ id }}"],
        response=HOSTILE_RESPONSE,
        reference="{{ config }} <style>body{display:none}</style>",
        reference_context_ids=["evil#1"],
        metadata={"note": "<iframe src=https://evil.example/>", "url": "javascript:alert(5)", "see": "https://example.com/doc"},
    )
    unscored = Sample(
        id="un-1",
        user_input="Is there a phone line?",
        retrieved_contexts=["Support is by email only."],
        retrieved_context_ids=["support#1"],
        response="I don't know.",
        reference_context_ids=[],
    )
    samples = [
        SampleResult("en-1", english, "data.jsonl", "line 1", _scores(1.0, 1.0, 0.9, 0.8, 820.0)),
        SampleResult("zh-1", chinese, "data.jsonl", "line 2", _scores(1.0, 2.0, 0.4, 0.7, 1310.0)),
        SampleResult(
            HOSTILE_KEY,
            hostile,
            "data.jsonl",
            "line 3",
            _scores(
                Score(value=0.0, explanation='<script>alert("expl")</script>', details={"html": "<b onmouseover=alert(8)>x</b>"}),
                Score.unscored("none of the <2> retrieved contexts is relevant"),
                0.2,
                0.1,
                2900.0,
            ),
        ),
        SampleResult(
            "un-1",
            unscored,
            "data.jsonl",
            "line 4",
            _scores(
                Score.unscored("reference_context_ids is empty: nothing to retrieve"),
                Score.unscored("reference_context_ids is empty: nothing to retrieve"),
                Score.unscored("judge error: TimeoutError after 30 s", failed=True),
                Score.unscored("reference is missing"),
                640.0,
            ),
        ),
    ]
    issues = [InputIssue("data.jsonl", "line 9", "retrieved_contexts[1]", "expected text, got <object>", skipped=True)]
    run = {
        "ragmeter_version": "0.1.0",
        "started_at": "2026-01-02T03:04:05+00:00",
        "seconds": 2.5,
        "sources": ["data.jsonl", "<script>alert('source')</script>.csv"],
        "n_samples": 4,
    }
    return Result(samples=samples, metrics=METRICS, issues=issues, run=run)


class _Tags(HTMLParser):
    """Every start tag with its attributes, as the browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def result() -> Result:
    return make_result()


@pytest.fixture(scope="module")
def summary(result) -> dict:
    return build_summary(result)


@pytest.fixture(scope="module")
def page(summary, result) -> str:
    return render_html(summary, result)


@pytest.fixture(scope="module")
def tags(page) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser


def test_the_page_shows_every_metric_with_its_mean_and_interval(page, summary):
    for metric in summary["metrics"]:
        a, unit = metric["aggregate"], metric["unit"]
        assert f">{metric['id']}</code>" in page
        assert f"<b>{format_number(a['mean'], unit)}</b>" in page
        if a["ci_low"] is not None:
            assert f"[{format_number(a['ci_low'], unit)}, {format_number(a['ci_high'], unit)}]" in page
        assert format_number(a["median"], unit) in page
    assert "(ms, lower is better)" in page
    assert "(rank, lower is better)" in page
    # The description is a tooltip, escaped.
    assert 'title="Latency &lt;b&gt;in&lt;/b&gt; ms &amp; more."' in page


def test_the_header_gives_run_information_and_issue_counts(page):
    assert "4 samples from data.jsonl, &lt;script&gt;alert(&#39;source&#39;)&lt;/script&gt;.csv" in page
    assert "2026-01-02T03:04:05+00:00" in page
    assert "2.5 s" in page
    assert "ragmeter 0.1.0" in page
    assert "1 issue(s); 1 row(s) skipped" in page
    assert "expected text, got &lt;object&gt;" in page


def test_the_diagnosis_lists_signals_patterns_and_links_to_samples(page, summary):
    diagnosis = summary["diagnosis"]
    assert set(diagnosis["signals"]) == {"retrieval", "correctness", "groundedness"}
    for signal in diagnosis["signals"].values():
        assert f"<code>{signal['metric']}</code>" in page
    for pattern in diagnosis["patterns"]:
        assert pattern["title"].replace("'", "&#39;") in page
        assert f'data-pattern="{pattern["name"]}"' in page
        assert f"{pattern['share']:.0%}" in page
    # en-1 (index 0) is healthy; zh-1 (index 1) has low groundedness: a listed problem sample.
    assert 'href="#s1"' in page
    assert re.search(r'<details id="s1" data-pattern="unfaithful">', page)


def test_unscored_values_show_a_dash_and_the_reason_never_zero_or_nan(page):
    row = re.search(r'<tr class="unscored"><td><code>retrieval_recall</code></td><td class="n">(.*?)</td><td>(.*?)</td>', page)
    assert row, "the unscored retrieval_recall row of un-1 is missing"
    assert row.group(1) == "–"
    assert "unscored" in row.group(2) and "reference_context_ids is empty: nothing to retrieve" in row.group(2)
    failed = re.search(r'<tr class="failed"><td><code>embedding_groundedness</code></td><td class="n">(.*?)</td><td>(.*?)</td>', page)
    assert failed and failed.group(1) == "–"
    assert '<span class="tag fail">failed</span> judge error: TimeoutError after 30 s' in failed.group(2)
    assert not re.search(r">\s*(nan|NaN|None)\s*<", page)
    # The signal column of the sample list shows the dash too, with the reason as a tooltip.
    assert '<span class="v lv-none" data-l="retrieval" title="reference_context_ids is empty: nothing to retrieve">–</span>' in page


def test_why_unscored_section_lists_reasons_and_marks_failures(page):
    section = page[page.index('<section id="unscored">') :]
    section = section[: section.index("</section>")]
    assert "Why samples went unscored" in section
    assert "reference_context_ids is empty: nothing to retrieve" in section
    assert "none of the &lt;2&gt; retrieved contexts is relevant" in section
    assert '<span class="tag fail">failed</span> judge error: TimeoutError after 30 s' in section
    assert '<span class="tag fail">failed</span> reference is missing' not in section


def test_english_and_chinese_text_is_kept_as_is(page):
    for text in (
        "How long do refunds take?",
        "退款需要多长时间？",
        "退款将在十四天内处理完毕。",
        "退款#1",
        '"难度": "简单"'.replace('"', "&#34;"),
    ):
        assert text in page


def test_hostile_sample_text_is_escaped_everywhere(page, tags):
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "{{ 7 * 7 }} {% if true %}yes{% endif %}" in page  # data is never evaluated as a template
    assert "{{ config }}" in page
    lowered = page.lower()
    assert "<script>alert" not in lowered
    assert "<img" not in lowered and "<iframe" not in lowered and "<style>body" not in lowered
    assert lowered.count("<script") == TEMPLATE_SCRIPTS
    assert [t for t, _ in tags.tags].count("script") == TEMPLATE_SCRIPTS
    for tag, attrs in tags.tags:
        assert tag not in ("img", "iframe", "object", "embed", "link", "base", "form"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), f"event handler attribute {name} on <{tag}>"
            if name in ("href", "src", "action", "formaction", "xlink:href"):
                assert value is not None and value.startswith("#"), f"<{tag} {name}={value!r}>"
    # The hostile key is an attribute value and text, never markup.
    assert "&#34;&gt;&lt;svg onload=alert(6)&gt;" in page
    # The only <svg> elements are the charts.
    assert sum(1 for t, _ in tags.tags if t == "svg") == page.count('<svg class="chart')


def test_the_page_makes_no_network_request(page, tags):
    lowered = page.lower()
    # Only real tags start with "<" (text is escaped): none of them refers to another place.
    assert not re.search(r"""<[a-z][^<>]*\s(src|href|action|poster|data|srcset)\s*=\s*["']?\s*(https?:)?//""", lowered)
    assert "<link" not in lowered
    styles = re.findall(r"<style>(.*?)</style>", lowered, re.S) + [a.get("style") or "" for _, a in tags.tags]
    for style in styles:
        assert "@import" not in style and "url(" not in style
    for tag, attrs in tags.tags:
        for name, value in attrs.items():
            if name in ("src", "href", "action", "poster", "data", "srcset", "background", "xlink:href"):
                assert value and value.startswith("#"), f"<{tag} {name}={value!r}>"
    assert not any(t == "meta" and (a.get("http-equiv") or "").lower() == "refresh" for t, a in tags.tags)
    policy = next(a["content"] for t, a in tags.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]


def test_details_are_pretty_escaped_json_in_a_collapsed_block(page):
    assert "<details><summary>details</summary><pre>" in page
    assert "&lt;b onmouseover=alert(8)&gt;x&lt;/b&gt;" in page


def test_details_equal_to_an_earlier_metric_are_not_repeated():
    result = make_result()
    shared = {"retrieved": ["a#1", "b#2"], "relevant": ["a#1"]}
    first = result.samples[0]
    first.scores["retrieval_recall"] = Score(value=1.0, details=shared)
    first.scores["first_relevant_rank"] = Score(value=1.0, details=dict(shared))
    page = render_html(build_summary(result), result)
    row = re.search(r'<tr class="scored"><td><code>first_relevant_rank</code></td>.*?</tr>', page)
    assert '<span class="muted">same as retrieval_recall</span>' in row.group(0)
    assert page.count("&#34;b#2&#34;") == 1


def test_contexts_are_shown_with_rank_and_id(page):
    assert '<b>rank 1</b> · <code class="tx">refunds#1</code> <span class="tag rel">relevant</span>' in page
    assert '<b>rank 2</b> · <code class="tx">javascript:alert(7)</code>' in page


def test_ids_that_do_not_pair_with_the_contexts_are_listed_apart_not_beside_a_context():
    """3 ids for 2 contexts: the page showed the first two beside the contexts (one marked
    relevant) and the third as "without text", as if the ids named the contexts in order."""
    result = make_result()
    first = result.samples[0]
    ids = ["shipping#1", "refunds#1", "<b>faq#9</b>"]
    first.sample = first.sample.model_copy(update={"retrieved_context_ids": ids})
    page = render_html(build_summary(result), result)
    assert '<b>rank 1</b></div><div class="text tx">Refunds are processed within 14 days.' in page
    assert "<h4>Retrieved context ids (3)</h4>" in page and "without text" not in page
    assert '<p class="muted">3 id(s) for 2 context(s) in retrieved_contexts: which id names which context is unknown</p>' in page
    assert '<code class="tx">refunds#1</code><code class="tx">&lt;b&gt;faq#9&lt;/b&gt;</code>' in page


def test_every_chart_in_the_page_is_well_formed_xml(page):
    charts = re.findall(r"<svg class=\"chart.*?</svg>", page, re.S)
    assert len(charts) == 1 + len(METRICS)  # the radar (or bars) and one histogram per metric
    for svg in charts:
        ET.fromstring(svg)


def test_an_empty_result_renders():
    empty = Result(samples=[], metrics=[], run={})
    page = render_html(build_summary(empty), empty)
    assert "no diagnosis" in page
    assert "No samples." in page


def test_a_run_without_signals_or_measurements_renders():
    result = make_result()
    only = Result(
        samples=[SampleResult(s.key, s.sample, s.source, s.location, {"latency_ms": s.scores["latency_ms"]}) for s in result.samples],
        metrics=[m for m in METRICS if m["id"] == "latency_ms"],
        run={"seconds": None},
    )
    page = render_html(build_summary(only), only)
    assert "no family chart" in page
    assert page.lower().count("<script") == TEMPLATE_SCRIPTS


# --- charts ----------------------------------------------------------------------------------

FAMILY_NAMES = ["retrieval", "groundedness", "correctness", "lexical", "robustness", "<efficiency & co>"]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_family_chart_is_valid_xml_for_any_number_of_families(n):
    families = {name: {"mean": 0.15 * (i + 1), "description": "d", "metrics": ["m"]} for i, name in enumerate(FAMILY_NAMES[:n])}
    svg = family_chart(families)
    root = ET.fromstring(svg)
    assert root.tag == "svg"
    if n >= 3:
        assert root.findall("polygon"), "a radar draws polygons"
        assert "radar" in root.get("class")
    else:
        assert "bars" in root.get("class")
        assert len(root.findall("rect")) == 2 * n
    for name in FAMILY_NAMES[:n]:
        assert name in "".join(root.itertext())


def test_charts_escape_their_text():
    families = {f'<script>alert("{i}")</script>': {"mean": 0.5} for i in range(3)}
    for svg in (radar_chart(families), family_bars(families), histogram([0.5], label="<b>&\"'")):
        assert "<script>" not in svg and "<b>" not in svg
        ET.fromstring(svg)
    assert "&lt;script&gt;alert(&quot;0&quot;)&lt;/script&gt;" in radar_chart(families)


def test_radar_clamps_means_outside_the_unit_interval():
    families = {"a": {"mean": -1}, "b": {"mean": 7}, "c": {"mean": None}, "d": {"mean": float("nan")}, "e": {"mean": 0.5}}
    root = ET.fromstring(radar_chart(families))
    # The radar's centre is (460 / 2, 330 / 2 + 4) = (230, 169), its radius 112; with five
    # families the axes point at -90, -18, 54, 126 and 198 degrees. A mean below 0, missing
    # or NaN sits at the centre; a mean above 1 on the outer ring; 0.5 halfway out.
    # a: -1 -> 0: (230, 169), not (230, 169 + 112) = (230, 281) as a negative radius would put it.
    # b: 7 -> 1: (230 + 112 cos(-18°), 169 + 112 sin(-18°)) = (336.5, 134.4), not 7 radii out.
    # c, d: (230, 169). e: 0.5 at 198°: (230 + 56 cos(198°), 169 + 56 sin(198°)) = (176.7, 151.7).
    expected = [(230.0, 169.0), (336.5, 134.4), (230.0, 169.0), (230.0, 169.0), (176.7, 151.7)]
    circles = [(float(c.get("cx")), float(c.get("cy"))) for c in root.iter("circle")]
    assert circles == [pytest.approx(point, abs=0.051) for point in expected]
    polygons = [p.get("points") for p in root.iter("polygon")]
    shape = [tuple(float(v) for v in xy.split(",")) for xy in polygons[-1].split()]  # the data polygon is drawn last
    assert shape == [pytest.approx(point, abs=0.051) for point in expected]
    # The labels show the true means, unclamped.
    assert [t.text for t in root.iter("tspan") if t.get("dy")][:2] == ["-1.000", "7.000"]


def test_family_bars_clamp_means_outside_the_unit_interval():
    root = ET.fromstring(family_bars({"a": {"mean": -1}, "b": {"mean": 7}}))
    # The track is 260 wide from x = 120: a mean below 0 draws no bar, above 1 the full track.
    bars = [float(r.get("width")) for r in root.iter("rect") if r.find("title") is not None]
    assert bars == [0.0, 260.0]


@pytest.mark.parametrize(
    ("values", "unit"),
    [
        ([], None),
        ([], "ms"),
        ([0.7], None),
        ([1234.0], "ms"),
        ([0.5] * 20, None),
        ([3.0] * 5, "rank"),
        ([0.00031] * 4, "USD"),
        ([0.0] * 3, "tokens"),
        ([0.0, 1.0, 1.0, 0.5, 0.25], None),
        ([1.0, 2.0, 2.0, 5.0], "rank"),
        ([800.0, 1200.5, 3400.25, 90000.0], "ms"),
        ([-0.2, 1.3], None),
        ([0.1, float("nan"), float("inf")], None),
        ([0.0001, 0.0002, 0.0005], "USD"),
    ],
)
def test_histograms_are_valid_xml(values, unit):
    svg = histogram(values, unit=unit, label="metric")
    root = ET.fromstring(svg)
    finite = [v for v in values if v == v and abs(v) != float("inf")]
    bars = root.findall("rect")
    if finite:
        assert sum(int(re.search(r": (\d+) sample", b.find("title").text).group(1)) for b in bars) == len(finite)
        assert any("mean" in (t.text or "") for t in root.iter("text"))
    else:
        assert not bars
        assert "no scored values" in "".join(root.itertext())


def test_histogram_of_quality_scores_bins_over_the_unit_interval():
    root = ET.fromstring(histogram([0.95, 1.0], unit=None, mean=0.975))
    titles = [r.find("title").text for r in root.findall("rect")]
    assert len(titles) == 10
    assert titles[0].startswith("0.000–0.100: 0") and titles[-1] == "0.900–1.000: 2 samples"


def test_histogram_of_ranks_has_one_bin_per_rank():
    root = ET.fromstring(histogram([1, 1, 2, 4], unit="rank"))
    assert [r.find("title").text for r in root.findall("rect")] == ["1: 2 samples", "2: 1 sample", "3: 0 samples", "4: 1 sample"]

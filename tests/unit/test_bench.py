"""The meta-evaluation: building tasks from labelled sets, and measuring agreement.

Fixture files follow the formats of the shared labelled sets but hold text written here.
"""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from ragmeter import Result, Sample, SampleResult, Score
from ragmeter.bench import clapnq, rgb, suites
from ragmeter.bench.runner import measure, unit_score
from ragmeter.bench.task import Task
from ragmeter.cli import app
from ragmeter.data import load_dataset


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def data_dir(tmp_path):
    articles = [f"Article {i}: the library lends {i} books and opens at {8 + i}:00." for i in range(6)]
    write_jsonl(
        tmp_path / "qags_sentences.jsonl",
        [
            {
                "id": f"q-{i}-{j}",
                "source": "cnndm",
                "context": articles[i],
                "claim": f"Claim {j} about article {i}.",
                "votes": [],
                "faithful_majority": (i + j) % 2,
            }
            for i in range(6)
            for j in range(2)
        ],
    )
    documents = [f"Memo {i}: the office at site {i} moves to building {i + 2} on day {i + 10}." for i in range(4)]
    write_jsonl(
        tmp_path / "summedits_dev.jsonl",
        [
            {
                "id": f"{domain}-{i}-{j}",
                "domain": domain,
                "context": f"{domain}: {documents[i]}",
                "claim": f"The office moves to building {i + 2 + j}.",
                "consistent": int(j == 0),
            }
            for domain in ("news", "podcast", "samsum", "sales_email")
            for i in range(4)
            for j in range(2)
        ],
    )
    write_jsonl(
        tmp_path / "ragchecker_meta_eval.jsonl",
        [
            {
                "instance_id": i,
                "annotator_slot": slot,
                "question": f"Q{i}?",
                "reference": f"R{i}.",
                "response_1": f"A{i}.",
                "response_2": f"B{i}.",
                "correctness_pref": (i % 5) - 2,
                "completeness_pref": -(i % 3),
                "overall_pref": i % 2,
            }
            for i in range(5)
            for slot in (0, 1)
        ],
    )
    clap = []
    for i in range(6):
        sentences = [f"Topic {i} sentence {k}." for k in range(4)]
        clap.append(
            {
                "id": f"c{i}",
                "question": f"What about topic {i}?",
                "passage": " ".join(sentences),
                "passage_sentences": sentences,
                "gold_sentences": sentences[:2] if i < 3 else [],
                "reference_answer": f"Topic {i} answer.",
                "answerable": i < 3,
            }
        )
    write_jsonl(tmp_path / "clapnq_dev.jsonl", clap)
    with (tmp_path / "msmarco_context_relevance.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["query", "expected_response", "expected_score"])
        for i in range(3):
            writer.writerow([f"query {i}", f"relevant passage {i}", 1])
            writer.writerow([f"query {i}", f"near miss {i}", 0])
    write_jsonl(
        tmp_path / "rgb_zh_refine.jsonl",
        [
            {
                "id": i,
                "query": f"问题{i}",
                "answer": [["答", "答案"]] if i == 2 else ["答"],
                "positive": [f"正例{i}"],
                "negative": [f"负例{i}", f"负例{i}乙"],
            }
            for i in range(3)
        ],
    )
    return tmp_path


def test_qags_makes_one_claim_per_sample_grouped_by_article(data_dir):
    faithfulness, embedding = suites.qags(data_dir, None, 0)
    assert faithfulness.metric == "faithfulness" and embedding.metric == "embedding_groundedness"
    assert len(faithfulness.dataset) == 8 and len(faithfulness.units) == 8
    sample = faithfulness.dataset.samples[0].sample
    assert sample.retrieved_contexts and sample.response.startswith("Claim")
    assert len({u["group"] for u in faithfulness.units}) == 4
    # Articles 0 and 4 are in the split the local judge's calibration was fitted on: never measured.
    assert not any(u["sample"].startswith(("q-0-", "q-4-")) for u in faithfulness.units)


def test_qags_puts_the_claims_of_one_article_next_to_each_other(data_dir):
    # Two claims per article in the fixture: a seeded draw shuffles them apart, the suite
    # brings them back together so the judge reads each article once.
    for seed in range(5):
        faithfulness, _ = suites.qags(data_dir, None, seed)
        articles = [u["group"] for u in faithfulness.units]
        runs = [a for n, a in enumerate(articles) if n == 0 or articles[n - 1] != a]
        assert len(runs) == len(set(articles)), articles


def test_summedits_has_one_task_per_domain_with_claims_of_a_document_together(data_dir):
    tasks = suites.summedits(data_dir, 6, 0)
    names = [t.name for t in tasks]
    assert names == [f"summedits/{d}_{m}" for d in suites.SUMMEDITS_DOMAINS for m in ("faithfulness", "embedding_groundedness")]
    news = tasks[0]
    assert news.metric == "faithfulness" and len(news.units) == 6
    assert all(s.sample.retrieved_contexts[0].startswith("news: ") for s in news.dataset)
    labels = {u["sample"]: u["label"] for u in news.units}
    assert all(labels[f"se-news-{i}-{j}"] == int(j == 0) for i in range(4) for j in range(2) if f"se-news-{i}-{j}" in labels)
    groups = [u["group"] for u in news.units]
    assert len([g for n, g in enumerate(groups) if n == 0 or groups[n - 1] != g]) == len(set(groups))


def test_limit_draws_the_same_seeded_subset_every_time(data_dir):
    first = [u["sample"] for u in suites.qags(data_dir, 3, seed=7)[0].units]
    again = [u["sample"] for u in suites.qags(data_dir, 3, seed=7)[0].units]
    other = [u["sample"] for u in suites.qags(data_dir, 3, seed=8)[0].units]
    assert len(first) == 3 and first == again and first != other


def test_ragchecker_pairs_both_responses_and_keeps_each_annotator(data_dir):
    task = suites.ragchecker(data_dir, 2, 0)[0]
    assert len(task.dataset) == 4 and len(task.units) == 4, "2 pairs x 2 responses; 2 pairs x 2 annotators"
    unit = task.units[0]
    assert unit["sample"].endswith("-2") and unit["versus"].endswith("-1") and unit["versus"][:-2] == unit["sample"][:-2]


def test_ragchecker_compares_each_rating_with_the_score_that_measures_it(data_dir):
    tasks = {t.name: t for t in suites.ragchecker(data_dir, 5, 0)}
    lines = (data_dir / "ragchecker_meta_eval.jsonl").read_text(encoding="utf-8").splitlines()
    rows = {(r["instance_id"], r["annotator_slot"]): r for r in map(json.loads, lines)}
    expected = {
        "ragchecker/factual_correctness(precision)": ("correctness", {"mode": "precision"}),
        "ragchecker/factual_correctness(recall)": ("completeness", {"mode": "recall"}),
        "ragchecker/factual_correctness": ("overall", {}),
        "ragchecker/answer_correctness": ("overall", {}),
        "ragchecker/semantic_similarity": ("overall", {}),
    }
    for name, (rating, params) in expected.items():
        task = tasks[name]
        assert (task.rating, task.params) == (rating, params), name
        for n, unit in enumerate(task.units):
            instance = int(unit["sample"].split("-")[1])
            assert unit["label"] == rows[(instance, n % 2)][f"{rating}_pref"], (name, unit)
    assert len({tuple(u["label"] for u in tasks[name].units) for name in expected}) == 3, "three different ratings"


def test_ragchecker_measures_both_ways_of_counting_claims(data_dir):
    tasks = {t.name: t for t in suites.ragchecker(data_dir, 2, 0)}
    assert tasks["ragchecker/answer_correctness"].params == {}
    assert tasks["ragchecker/answer_correctness[decided]"].params == {"counting": "decided"}
    assert tasks["ragchecker/factual_correctness[decided]"].metric == "factual_correctness"


def test_a_task_runs_its_metric_with_its_parameters():
    from test_llm_double import FixedVectors, ScriptedJudge, by_item

    from ragmeter.bench.runner import run_task
    from ragmeter.judges import BatchingEmbedder, Judges

    # One response claim at p(yes) 0.4 and one reference claim at 0.9: counted as expected
    # shares the F1 is that of 0.4 and 0.9; decided at 0.5 the precision is 0 and so is F1.
    samples = [{"id": "a", "user_input": "q?", "response": "Loans last a week.", "reference": "Loans last three weeks."}]
    units = [{"sample": "a", "label": 1, "group": "a", "part": None}]
    judge = ScriptedJudge(rule=by_item({"Loans last a week.": 0.4, "Loans last three weeks.": 0.9}))
    judges = Judges(llm=judge, embedder=BatchingEmbedder(FixedVectors({})))
    values = {}
    for params in ({}, {"counting": "decided"}):
        task = Task("t", "factual_correctness", load_dataset(samples), units, "binary", params=params)
        values[params.get("counting", "expected")] = run_task(task, judges, progress=False).units[0]["score"]
    assert values["expected"] == pytest.approx(2 * 0.4 * 0.9 / 1.3)
    assert values["decided"] == 0.0


def test_clapnq_builds_precision_recall_correctness_and_answerability(data_dir):
    precision, precision_nr, recall, entity_recall, correctness, utilization, relevancy, answerability, *edits = clapnq.clapnq(
        data_dir, None, 0
    )
    assert [t.name for t in edits] == ["clapnq/faithfulness_edits", "clapnq/embedding_groundedness_edits"]
    assert [s.sample for s in precision_nr.dataset] == [s.sample for s in precision.dataset]
    assert precision_nr.units is precision.units
    assert entity_recall.units is recall.units
    assert all(s.sample.response == s.sample.reference for s in precision.dataset)
    pairs = {u["sample"]: u["label"] for u in relevancy.units}
    assert pairs == {"cq-c0-own": 1, "cq-c0-other": 0, "cq-c1-own": 1, "cq-c1-other": 0, "cq-c2-own": 1, "cq-c2-other": 0}
    relevancy_responses = {s.key: s.sample.response for s in relevancy.dataset}
    for i in range(3):
        assert relevancy_responses[f"cq-c{i}-own"] == f"Topic {i} answer."
        assert relevancy_responses[f"cq-c{i}-other"] in {"Topic 0 answer.", "Topic 1 answer.", "Topic 2 answer."} - {f"Topic {i} answer."}
    assert {u["label"] for u in precision.units} == {0, 1}
    assert all(0 <= u["label"] <= 1 for u in recall.units)
    assert sorted(u["label"] for u in correctness.units) == [0, 0, 0, 1, 1, 1]
    responses = {s.key: s.sample.response for s in correctness.dataset}
    for unit in correctness.units:
        topic = unit["group"].removeprefix("cq-c")
        wanted = [2, 3] if unit["label"] == 0 else [0, 1]  # the passage's other sentences are the wrong answer
        assert responses[unit["sample"]] == " ".join(f"Topic {topic} sentence {k}." for k in wanted)
    # Context utilization: the same responses and labels, with the gold passage retrieved.
    assert (utilization.name, utilization.metric, utilization.units) == (
        "clapnq/context_utilization",
        "context_utilization",
        correctness.units,
    )
    for loaded in utilization.dataset:
        topic = loaded.key.removeprefix("cq-c")[0]
        assert loaded.sample.response == responses[loaded.key]
        assert loaded.sample.retrieved_contexts == [f"Topic {topic} sentence {k}." for k in range(4)]
    assert sorted(u["label"] for u in answerability.units) == [0, 0, 0, 1, 1, 1]
    for loaded in precision.dataset:
        gold = [u for u in precision.units if u["sample"] == loaded.key and u["label"] == 1]
        assert len(gold) == 2, "both annotator-selected sentences are among the contexts"


def test_relevance_sets_group_passages_by_query(data_dir):
    (ms,) = suites.msmarco(data_dir, None, 0)
    zh, *_ = suites.rgb(data_dir, None, 0)
    assert len(ms.dataset) == 3 and len(ms.units) == 6 and ms.kind == "binary"
    assert len(zh.dataset) == 3 and sorted(u["label"] for u in zh.units) == [0] * 6 + [1] * 3
    for task in (ms, zh):
        for unit in task.units:
            sample = next(s.sample for s in task.dataset if s.key == unit["sample"])
            assert unit["part"] < len(sample.retrieved_contexts)


def test_rgb_faithfulness_judges_each_question_s_answer_against_a_positive_and_a_negative(data_dir):
    _, faithfulness, baseline, *_ = suites.rgb(data_dir, None, 0)
    assert (faithfulness.metric, baseline.metric) == ("faithfulness", "embedding_groundedness")
    assert faithfulness.units == baseline.units and faithfulness.kind == "binary"
    by_id = {s.sample.id: s.sample for s in faithfulness.dataset}
    assert len(by_id) == 6 and [u["label"] for u in faithfulness.units] == [1, 0] * 3
    for unit in faithfulness.units:
        sample = by_id[unit["sample"]]
        number = sample.user_input.removeprefix("问题")
        assert unit["group"] == f"rgb-{number}"
        assert sample.response == "答"  # the first accepted spelling of a nested answer list too
        expected = [f"正例{number}"] if unit["label"] else [f"负例{number}", f"负例{number}乙"]
        assert sample.retrieved_contexts[0] in expected
    # The passage drawn for a question does not depend on how many questions are drawn.
    first = {s.sample.id: s.sample.retrieved_contexts for s in faithfulness.dataset}
    _, again, *_ = suites.rgb(data_dir, 2, 0)
    assert all(first[s.sample.id] == s.sample.retrieved_contexts for s in again.dataset)


def test_a_missing_file_says_where_to_point(tmp_path):
    with pytest.raises(FileNotFoundError, match="--data-dir"):
        suites.qags(tmp_path, None, 0)


def test_a_broken_line_in_a_labelled_set_names_the_file_and_line(tmp_path):
    (tmp_path / "qags_sentences.jsonl").write_text('{"claim": "A."}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"qags_sentences.jsonl, line 2: expected a JSON object, got list"):
        suites.qags(tmp_path, None, 0)


def test_a_labelled_set_that_is_not_utf8_or_not_json_names_the_file_and_line(tmp_path):
    """read_rows let Python's codec error out, naming no file: the CLI said "error: 'utf-8' codec
    can't decode byte 0xe9 in position 35"; the MS MARCO CSV did the same."""
    (tmp_path / "qags_sentences.jsonl").write_bytes('{"claim": "A."}\n{"claim": "café"}\n'.encode("cp1252"))
    with pytest.raises(ValueError) as raised:
        suites.qags(tmp_path, None, 0)
    said = str(raised.value)
    assert said.startswith(f"{tmp_path / 'qags_sentences.jsonl'}, line 2: invalid UTF-8 (byte 0xe9 at column 15)") and "iconv" in said
    (tmp_path / "qags_sentences.jsonl").write_text('{"claim": "A."}\n{"claim": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"qags_sentences.jsonl, line 2: invalid JSON: "):
        suites.qags(tmp_path, None, 0)
    (tmp_path / "msmarco_context_relevance.csv").write_bytes("query,expected_response,expected_score\nq,é,1\n".encode("utf-16"))
    assert suites.msmarco_triples(tmp_path) == [("q", "é", 1)]  # UTF-16 with its mark is read as such
    (tmp_path / "msmarco_context_relevance.csv").write_bytes(b"query,expected_response,expected_score\nq,caf\xe9,1\n")
    with pytest.raises(ValueError, match=r"msmarco_context_relevance.csv: invalid UTF-8 \(byte 0xe9 at byte 45\); the file may be in"):
        suites.msmarco(tmp_path, None, 0)
    (tmp_path / "rgb_zh_refine.jsonl").mkdir()
    with pytest.raises(ValueError, match=r"rgb_zh_refine.jsonl: cannot read the labelled set: Is a directory"):
        rgb.rgb_triples(tmp_path)


def _result(metric, scores):
    samples = [SampleResult(key, Sample(id=key), "<list>", f"row {i}", {metric: score}) for i, (key, score) in enumerate(scores.items())]
    info = {"id": metric, "name": metric, "family": "groundedness", "unit": None, "higher_is_better": True}
    return Result(samples=samples, metrics=[info])


def test_measure_binary_agreement_and_unscored_units():
    units = [{"sample": k, "label": y, "group": k, "part": None} for k, y in (("a", 1), ("b", 1), ("c", 0), ("d", 0), ("e", 1))]
    task = Task("t", "token_f1", load_dataset([{"id": u["sample"]} for u in units]), units, "binary")
    scores = {"a": Score(0.9), "b": Score(0.6), "c": Score(0.2), "d": Score(0.55), "e": Score.unscored("reference is empty")}
    measured = measure(task, _result("token_f1", scores))
    assert measured.statistics["roc_auc"]["value"] == 1.0
    assert measured.statistics["balanced_accuracy"]["value"] == pytest.approx(0.75), "0.55 is decided positive"
    assert measured.n_unscored == 1 and measured.unscored_reasons == {"reference is empty": 1}


def test_measure_preference_uses_the_score_difference():
    units = [{"sample": f"p{i}-2", "versus": f"p{i}-1", "label": float(d), "group": i, "part": None} for i, d in enumerate((2, 1, -1, -2))]
    values = {"p0-2": 0.9, "p0-1": 0.1, "p1-2": 0.6, "p1-1": 0.5, "p2-2": 0.4, "p2-1": 0.6, "p3-2": 0.1, "p3-1": 0.8}
    task = Task("t", "answer_correctness", load_dataset([{"id": k} for k in values]), units, "preference")
    measured = measure(task, _result("answer_correctness", {k: Score(v) for k, v in values.items()}))
    assert measured.statistics["spearman"]["value"] == pytest.approx(1.0)
    assert measured.statistics["pearson"]["value"] > 0.9


def test_unit_scores_read_chunks_claims_and_answerability():
    chunks = Score(0.5, details={"contexts": [{"rank": 1, "p_yes": 0.8, "useful": True}, {"rank": 2, "p_yes": 0.1, "useful": False}]})
    assert unit_score("context_precision", chunks, 1) == (0.1, 0, None)
    claims = Score(0.5, details={"claims": [{"claim": "x", "p_yes": 0.9}, {"claim": "y", "p_yes": 0.3}]})
    assert unit_score("faithfulness", claims, None) == (pytest.approx(0.6), 1, None)
    calibrated = Score(
        0.2, details={"claims": [{"claim": "x", "p_yes": 0.9, "p_supported": 0.8}, {"claim": "y", "p_yes": 0.3, "p_supported": 0.2}]}
    )
    assert unit_score("faithfulness", calibrated, None) == (0.2, 0, None)
    answerable = Score.unscored("the contexts contain the answer (p=0.93)", {"p_answerable": 0.93, "threshold": 0.5})
    assert unit_score("negative_rejection", answerable, None) == (0.93, 1, None)
    below_line = Score(1.0, details={"p_answerable": 0.6, "threshold": 0.5, "answered": 0.66})
    assert unit_score("negative_rejection", below_line, None) == (0.6, 0, None)
    assert unit_score("token_f1", Score.unscored("reference is empty"), None) == (None, None, "reference is empty")


def test_bench_on_your_own_labelled_file_writes_results(tmp_path):
    rows = [
        {"id": f"s{i}", "response": r, "reference": "Loans last three weeks.", "human": label}
        for i, (r, label) in enumerate(
            [
                ("Loans last three weeks.", 1),
                ("Loans last three weeks and renew twice.", 1),
                ("The library opens at nine.", 0),
                ("Cards are free.", 0),
            ]
        )
    ]
    labelled = tmp_path / "mine.jsonl"
    write_jsonl(labelled, rows)
    outcome = CliRunner().invoke(
        app,
        ["bench", "--labelled", str(labelled), "--metric", "token_f1", "--label-field", "human", "--out", str(tmp_path), "--name", "mine"],
    )
    assert outcome.exit_code == 0, outcome.output
    document = json.loads((tmp_path / "mine.json").read_text())
    (task,) = document["tasks"]
    assert task["statistics"]["roc_auc"]["value"] == 1.0 and task["n_units"] == 4
    assert document["settings"]["judge"]["backend"] == "none"
    assert "roc_auc" not in (tmp_path / "mine.md").read_text() and "ROC-AUC 1.000" in (tmp_path / "mine.md").read_text()
    assert "Every LLM metric" not in (tmp_path / "mine.md").read_text(), "token_f1 needs no LLM"
    # The compared units are kept as numbers (a group is an index, never text of the data).
    assert sorted(u["label"] for u in task["units"]) == [0, 0, 1, 1]
    assert all(isinstance(u["group"], int) and 0 <= u["score"] <= 1 for u in task["units"])


def test_a_set_or_one_of_its_tasks_can_be_chosen(data_dir):
    everything = [t.name for t in clapnq.clapnq(data_dir, None, 0)]
    assert [t.name for t in suites.bench_tasks(["clapnq"], data_dir, None, 0)] == everything
    chosen = suites.bench_tasks(["clapnq/context_recall", "rgb", "clapnq/answerability", "clapnq/context_recall"], data_dir, None, 0)
    assert [t.name for t in chosen] == [
        "clapnq/context_recall",
        "rgb/context_relevance",
        "rgb/faithfulness",
        "rgb/embedding_groundedness",
        "rgb/faithfulness_edits",
        "rgb/embedding_groundedness_edits",
        "rgb/answer_correctness",
        "rgb/noise_sensitivity",
        "rgb/noise_sensitivity(irrelevant)",
        "clapnq/answerability",
    ]
    with pytest.raises(ValueError, match="set clapnq has no task clapnq/nothing; its tasks: clapnq/context_precision"):
        suites.bench_tasks(["clapnq/nothing"], data_dir, None, 0)
    with pytest.raises(ValueError, match="unknown set"):
        suites.bench_tasks(["nosuchset/context_recall"], data_dir, None, 0)


def test_bench_rejects_unknown_sets_and_labels_that_are_not_numbers(tmp_path):
    runner = CliRunner()
    assert runner.invoke(app, ["bench", "nosuchset", "--data-dir", str(tmp_path)]).exit_code == 2
    labelled = tmp_path / "bad.jsonl"
    write_jsonl(labelled, [{"id": "a", "response": "x", "reference": "y", "label": "good"}])
    outcome = runner.invoke(app, ["bench", "--labelled", str(labelled), "--metric", "token_f1"])
    assert outcome.exit_code == 2 and "0 sample(s) with a usable label, at least 2 are needed" in outcome.output
    assert "line 1: field 'label' must be a finite number, got 'good'" in outcome.output


def test_a_sample_without_a_usable_label_is_left_out_and_named_not_the_end_of_the_bench(tmp_path):
    rows = [{"id": f"s{i}", "response": "x y", "reference": "x", "label": i % 2} for i in range(4)]
    rows += [{"id": "none", "response": "x", "reference": "x", "label": None}, {"id": "inf", "response": "x", "reference": "x"}]
    labelled = tmp_path / "mine.jsonl"
    labelled.write_text(
        "".join(json.dumps(r) + "\n" for r in rows[:5]) + '{"id": "inf", "response": "x", "reference": "x", "label": Infinity}\n'
    )
    outcome = CliRunner().invoke(app, ["bench", "--labelled", str(labelled), "--metric", "token_f1", "--out", str(tmp_path), "--name", "m"])
    assert outcome.exit_code == 0, outcome.output
    named = [
        f"{labelled}, line 5: field 'label' is missing or null",
        f"{labelled}, line 6: field 'label' must be a finite number, got inf",
    ]
    assert "2 sample(s) left out, without a usable label:" in outcome.output and all(n in outcome.output for n in named)
    document = json.loads((tmp_path / "m.json").read_text())
    assert document["tasks"][0]["n_units"] == 4 and document["settings"]["left_out"] == named
    markdown = (tmp_path / "m.md").read_text()
    assert "2 sample(s) left out, without a usable label:" in markdown and "line 5\\: field 'label' is missing or null" in markdown


def test_a_stopped_bench_keeps_the_tasks_it_finished(tmp_path, monkeypatch):
    from ragmeter.bench.runner import run_task
    from ragmeter.cli import bench as cli

    samples = [
        {"id": f"s{i}", "response": r, "reference": "Loans last three weeks."}
        for i, r in enumerate(["Loans last three weeks.", "Cards are free."])
    ]
    units = [{"sample": f"s{i}", "label": 1 - i, "group": f"s{i}", "part": None} for i in range(2)]

    def toy(data_dir, limit, seed):
        return [Task(f"toy/{n}", "token_f1", load_dataset(samples), units, "binary") for n in ("first", "second")]

    calls = []

    def stop_at_the_second(task, judges, **options):
        calls.append(task.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run_task(task, judges, **options)

    monkeypatch.setitem(suites.SUITES, "toy", toy)
    monkeypatch.setattr(cli, "run_task", stop_at_the_second)
    outcome = CliRunner().invoke(app, ["bench", "toy", "--out", str(tmp_path), "--name", "stopped"])
    assert outcome.exit_code != 0 and calls == ["toy/first", "toy/second"]
    (task,) = json.loads((tmp_path / "stopped.json").read_text())["tasks"]
    assert task["task"] == "toy/first" and task["statistics"]["roc_auc"]["value"] == 1.0
    assert "toy/first" in (tmp_path / "stopped.md").read_text()


def test_calls_answered_from_the_cache_are_shown_apart(tmp_path):
    from ragmeter.bench.report import write
    from ragmeter.bench.runner import TaskResult

    task = Task("toy/cached", "factual_correctness", load_dataset([{"id": "a"}]), [], "preference")
    result = TaskResult(
        task, {}, 0, 0, {}, {"calls": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0, "seconds": 0.0, "cached_calls": 9.5}, 1
    )
    _, markdown = write([result], {}, tmp_path, "cached")
    assert "| 0.0 (+9.5 cached) |" in markdown.read_text()
    # An LLM metric among the tasks: the run ends with the one-table summary.
    assert "## Every LLM metric on every labelled set" in markdown.read_text()


def test_the_judge_and_the_command_are_code_spans_a_backtick_in_them_cannot_break(tmp_path):
    """The judge's model and the command were put between single backticks as they were: a
    path with a backtick ended the span and the rest was read as Markdown (here, a link)."""
    from ragmeter.bench.report import write

    command = "python benchmarks/agreement.py --model /models/q`[x](http://evil)`.gguf"
    settings = {"judge": {"backend": "local*", "model": "/models/q`w`.gguf"}, "command": command}
    _, markdown = write([], settings, tmp_path, "ticks")
    text = markdown.read_text()
    assert f"Command: ``{command}``" in text and "judge local\\* ``/models/q`w`.gguf``;" in text

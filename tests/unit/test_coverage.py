"""Reference claims covered by a text: word coverage, the judge's p(yes) combined with it, and
the shares the recall metrics count (factual correctness, answer correctness, context recall),
with a scripted judge (see test_llm_double.py)."""

from __future__ import annotations

import pytest
from test_llm_double import ScriptedJudge, by_item, run

from ragmeter import create_metric
from ragmeter.judges.base import Verdict
from ragmeter.metrics.coverage import claim_share, with_word_coverage, word_coverage
from ragmeter.metrics.llm import ClaimCheck

LOANS = "Loans last three weeks."
RENEW = "Books can be renewed twice online."
RESPONSE = "Loans last three weeks, and books can be renewed."


def check_of(claims: list[str], p_yes: list[float], threshold: float = 0.5) -> ClaimCheck:
    verdicts = [Verdict(p) for p in p_yes]
    return ClaimCheck(claims, verdicts, [p >= threshold for p in p_yes], "whole", threshold)


def test_word_coverage_is_the_share_of_the_claims_content_words_the_text_uses():
    assert word_coverage(LOANS, RESPONSE) == 1.0
    # books, renewed (by stem: "renew"), twice, online: two of four
    assert word_coverage(RENEW, RESPONSE) == pytest.approx(0.5)
    assert word_coverage(RENEW, ["Books are renewed at the desk.", "Renewals are free."]) == pytest.approx(0.5)
    assert word_coverage("The fine is doubled.", RESPONSE) == 0.0


def test_word_coverage_reads_chinese_by_characters_and_has_none_for_a_claim_without_content_words():
    # 借期 and 三周 are in the text whatever the segmentation; 可以 and 续借 are not
    assert word_coverage("借期为三周，可以续借。", "图书的借期是三周。") == pytest.approx(2 / 4)
    assert word_coverage("It is so.", RESPONSE) is None
    assert word_coverage("是的。", RESPONSE) is None


def test_a_claims_probability_is_the_mean_of_the_judges_and_its_words():
    check, coverage = with_word_coverage(check_of([LOANS, RENEW, "It is so."], [0.6, 0.9, 0.3]), RESPONSE)
    assert coverage == [1.0, pytest.approx(0.5), None]
    assert check.probabilities == [pytest.approx(0.8), pytest.approx(0.7), 0.3]  # no content word: the judge's alone
    assert check.decisions == [True, True, False]
    # a claim the judge half believes, none of whose words the text uses, is decided absent
    lone, _ = with_word_coverage(check_of(["The fine is doubled."], [0.7]), RESPONSE)
    assert lone.probabilities == [pytest.approx(0.35)] and lone.decisions == [False]


def test_claim_share_counts_expected_or_decided():
    plain = check_of([LOANS, RENEW], [0.9, 0.4])
    assert claim_share(plain, "expected") == pytest.approx(0.65) and claim_share(plain, "decided") == 0.5
    combined, _ = with_word_coverage(plain, RESPONSE)  # 0.95 and 0.45
    assert claim_share(combined, "expected") == pytest.approx(0.7) and claim_share(combined, "decided") == 0.5


# --- in the metrics -------------------------------------------------------------------------------


def test_factual_recall_counts_the_judge_alone_by_default_and_its_words_when_asked():
    judge = ScriptedJudge(rule=by_item({LOANS: 0.6, RENEW: 0.9}))
    fields = {"user_input": "q?", "response": RESPONSE, "reference": f"{LOANS} {RENEW}"}
    default = run("factual_correctness", judge, params={"mode": "recall"}, **fields)
    assert default.value == pytest.approx((0.6 + 0.9) / 2)
    assert "word_coverage" not in default.details["reference_claims"][0] and "p_supported" not in default.details["reference_claims"][0]
    score = run("factual_correctness", ScriptedJudge(rule=judge.rule), params={"mode": "recall", "word_coverage": True}, **fields)
    assert score.value == pytest.approx((0.8 + 0.7) / 2)
    claims = score.details["reference_claims"]
    assert [c["word_coverage"] for c in claims] == [1.0, 0.5]
    assert [c["p_yes"] for c in claims] == [0.6, 0.9] and [c["p_supported"] for c in claims] == [0.8, 0.7]


def test_factual_precision_is_the_judges_alone_even_with_word_coverage():
    # the response's one sentence at p(yes) 0.4, though every word of it is in the reference
    judge = ScriptedJudge(rule=by_item({RESPONSE: 0.4}))
    params = {"mode": "precision", "word_coverage": True}
    score = run("factual_correctness", judge, params=params, user_input="q?", response=RESPONSE, reference=f"{LOANS} {RENEW}")
    assert score.value == pytest.approx(0.4)
    assert "word_coverage" not in score.details["response_claims"][0] and "p_supported" not in score.details["response_claims"][0]


def test_context_recall_counts_expected_shares_of_combined_probabilities_by_default():
    judge = ScriptedJudge(rule=by_item({LOANS: 0.6, RENEW: 0.4}))
    fields = {"user_input": "q?", "reference": f"{LOANS} {RENEW}", "retrieved_contexts": [RESPONSE]}
    score = run("context_recall", judge, **fields)
    # LOANS: (0.6 + 1) / 2 = 0.8; RENEW: (0.4 + 0.5) / 2 = 0.45
    assert score.value == pytest.approx((0.8 + 0.45) / 2)
    assert "1 of 2 reference claims are supported by the retrieved contexts (expected share 0.62)" in score.explanation
    assert score.details["counting"] == "expected" and [c["supported"] for c in score.details["claims"]] == [True, False]
    decided = run("context_recall", ScriptedJudge(rule=judge.rule), params={"counting": "decided", "word_coverage": False}, **fields)
    assert decided.value == 0.5 and "expected share" not in decided.explanation


@pytest.mark.parametrize("metric", ["answer_correctness", "factual_correctness", "context_recall"])
def test_word_coverage_must_be_a_boolean_and_counting_known(metric):
    with pytest.raises(ValueError, match="word_coverage must be true or false"):
        create_metric(metric, word_coverage="yes")
    with pytest.raises(ValueError, match="counting must be one of expected, decided"):
        create_metric(metric, counting="soft")

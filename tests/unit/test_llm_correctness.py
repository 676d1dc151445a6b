"""LLM metrics: answer and factual correctness, noise sensitivity, negative rejection,
aspect critic and rubric score, with a scripted judge (see test_llm_double.py)."""

from __future__ import annotations

import pytest
from test_llm_double import FixedVectors, ScriptedJudge, by_item, run

from ragmeter import create_metric
from ragmeter.judges.base import ANSWERABLE_LINE
from ragmeter.metrics.correctness import f_beta

LOANS = "Loans last three weeks."
FINES = "Fines are 20 cents per day."
FINES_50 = "Fines are 50 cents per day."
RENEW = "Books can be renewed twice."
WIFI = "Wi-Fi is available on every floor."
CARDS_5 = "Cards cost 5 euros."
HOURS = "The library opens at 9 on weekdays."
MOON = "The moon is made of cheese."


def assert_unscored(score, reason_part: str, failed: bool = False):
    assert score.value is None, score
    assert reason_part in score.reason, score.reason
    assert score.failed is failed


# --- answer_correctness ---------------------------------------------------------------------------

RESPONSE = f"{LOANS} {FINES_50} {WIFI}"
REFERENCE = f"{LOANS} {FINES} {RENEW}"
COSINE_06 = FixedVectors({RESPONSE: [1, 0], REFERENCE: [0.6, 0.8]})


def correctness(spec="answer_correctness", params=None, response=RESPONSE, reference=REFERENCE, encoder=None, judge=None, question="q?"):
    judge = judge or ScriptedJudge()
    encoder = encoder or FixedVectors(COSINE_06.vectors)
    score = run(spec, judge, encoder=encoder, params=params, user_input=question, response=response, reference=reference)
    return score, judge, encoder


def test_f_beta():
    assert f_beta(1 / 3, 1 / 3) == pytest.approx(1 / 3)
    assert f_beta(1.0, 0.5) == pytest.approx(2 / 3)
    assert f_beta(1.0, 0.5, beta=2) == pytest.approx(5 * 0.5 / (4 + 0.5))
    assert f_beta(0.0, 0.0) == 0.0


def test_answer_correctness_blends_claim_f1_and_similarity():
    score, judge, encoder = correctness()
    # response claims vs reference: LOANS yes, FINES_50 no, WIFI no -> TP 1, FP 2, precision 1/3
    # reference claims vs response: LOANS yes, FINES no, RENEW no -> FN 2, recall 1/3; F1 = 1/3
    # similarity 0.6: 0.75 * 1/3 + 0.25 * 0.6 = 0.4
    assert score.value == pytest.approx(0.4)
    d = score.details
    assert (d["tp"], d["fp"], d["fn"], d["reference_covered"]) == (1, 2, 2, 1)
    assert d["f_beta"] == pytest.approx(1 / 3, abs=1e-4) and d["similarity"] == pytest.approx(0.6)
    assert [c["in_reference"] for c in d["response_claims"]] == [True, False, False]
    assert [c["in_response"] for c in d["reference_claims"]] == [True, False, False]
    assert judge.count("verdicts", "supported") == 2 and judge.count() == 2
    assert {(c.shared["premise"], tuple(c.items)) for c in judge.calls} == {
        (REFERENCE, (LOANS, FINES_50, WIFI)),
        (RESPONSE, (LOANS, FINES, RENEW)),
    }
    assert len(encoder.calls) == 1


def test_answer_correctness_weights_and_beta():
    assert correctness(params={"weights": [0.5, 0.5]})[0].value == pytest.approx(0.5 / 3 + 0.3)
    score, _, encoder = correctness(params={"weights": (1.0, 0.0)})
    assert score.value == pytest.approx(1 / 3) and encoder.calls == []  # no similarity: no embedding
    # precision 1, recall 1/2
    encoder = FixedVectors({LOANS: [1, 0], f"{LOANS} {FINES}": [1, 0]})
    score, _, _ = correctness(params={"beta": 2.0}, response=LOANS, reference=f"{LOANS} {FINES}", encoder=encoder)
    assert score.value == pytest.approx(0.75 * (5 * 0.5 / 4.5) + 0.25 * 1.0)


@pytest.mark.parametrize("weights", [(0.7, 0.2), (1.2, -0.2), (1.0,), "0.75,0.25", (float("nan"), 1.0)])
def test_answer_correctness_weights_must_sum_to_one(weights):
    with pytest.raises(ValueError, match="weights"):
        create_metric("answer_correctness", weights=weights)


def test_answer_correctness_rejects_bad_beta():
    with pytest.raises(ValueError, match="beta"):
        create_metric("answer_correctness", beta=0)


@pytest.mark.parametrize(
    "response, reference, reason",
    [(" ", REFERENCE, "response is empty"), (RESPONSE, "", "reference is empty")],
)
def test_answer_correctness_unscored(response, reference, reason):
    score, judge, _ = correctness(response=response, reference=reference)
    assert_unscored(score, reason)
    assert judge.calls == []


def test_correctness_with_llm_claims_and_no_statements_is_unscored():
    judge = ScriptedJudge(generated={"statements": {"statements": []}})
    score, _, _ = correctness(params={"claims": "llm"}, judge=judge)
    assert_unscored(score, "the response has no claims to check (claims mode 'llm')")


def test_correctness_counts_expected_shares_of_uncertain_verdicts():
    # p(yes) 0.45 and 0.55 are 0 and 1 when decided at 0.5, but 0.45 and 0.55 of a claim when expected
    judge = ScriptedJudge(rule=by_item({LOANS: 0.9, FINES: 0.45, FINES_50: 0.45, RENEW: 0.55, WIFI: 0.55}))
    score, _, _ = correctness("factual_correctness", judge=judge)
    precision, recall = (0.9 + 0.45 + 0.55) / 3, (0.9 + 0.45 + 0.55) / 3
    assert score.value == pytest.approx(f_beta(precision, recall))
    assert score.details["counting"] == "expected" and (score.details["tp"], score.details["fp"]) == (2, 1)
    assert "2 of 3 response claims are in the reference (expected share 0.63)" in score.explanation
    decided, _, _ = correctness("factual_correctness", {"counting": "decided"}, judge=ScriptedJudge(rule=judge.rule))
    assert decided.value == pytest.approx(2 / 3) and "expected share" not in decided.explanation


@pytest.mark.parametrize("metric", ["answer_correctness", "factual_correctness"])
def test_correctness_rejects_an_unknown_counting(metric):
    with pytest.raises(ValueError, match="counting must be one of expected, decided"):
        create_metric(metric, counting="soft")


# --- factual_correctness --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode, value, calls, metric_id",
    [
        ("f1", 2 / 3, 2, "factual_correctness"),
        ("precision", 1.0, 1, "factual_correctness(precision)"),
        ("recall", 0.5, 1, "factual_correctness(recall)"),
    ],
)
def test_factual_correctness_modes(mode, value, calls, metric_id):
    score, judge, encoder = correctness("factual_correctness", {"mode": mode}, response=LOANS, reference=f"{LOANS} {FINES}")
    assert score.value == pytest.approx(value)
    assert judge.count("verdicts") == calls and encoder.calls == []
    assert create_metric("factual_correctness", mode=mode).id == metric_id
    premises = [c.shared["premise"] for c in judge.calls]
    if mode == "precision":
        assert premises == [f"{LOANS} {FINES}"]  # response claims against the reference only
    if mode == "recall":
        assert premises == [LOANS]  # reference claims against the response only


def test_factual_correctness_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        create_metric("factual_correctness", mode="accuracy")


def test_factual_correctness_in_chinese():
    score, judge, _ = correctness("factual_correctness", response="借期为三周。", reference="借期为三周。续借两次。", question="借期多久？")
    assert score.value == pytest.approx(2 / 3)
    assert {c.lang for c in judge.calls} == {"zh"}


# --- noise_sensitivity ----------------------------------------------------------------------------

NOISE = {
    "user_input": "How long are loans and what are the fines?",
    "reference": f"{LOANS} {FINES}",
    "response": f"{LOANS} {FINES_50} {CARDS_5} {MOON}",
    "retrieved_contexts": [
        f"{LOANS} {FINES_50}",  # relevant: supports LOANS of the reference
        f"{WIFI} {CARDS_5}",  # irrelevant
        f"{HOURS} {FINES_50}",  # irrelevant, but repeats the relevant chunk's wrong fine
    ],
}


def test_noise_sensitivity_relevant_and_irrelevant():
    judge = ScriptedJudge()
    score = run("noise_sensitivity", judge, **NOISE)
    # wrong claims: FINES_50 (from relevant chunk 1, also irrelevant chunk 3), CARDS_5 (irrelevant chunk 2), MOON (no chunk)
    assert score.value == pytest.approx(1 / 4)
    claims = {c["claim"]: c for c in score.details["claims"]}
    assert claims[FINES_50]["counted"] and claims[FINES_50]["relevant_chunks"] == [1] and claims[FINES_50]["irrelevant_chunks"] == [3]
    assert not claims[LOANS]["counted"]  # correct
    assert [c["relevant"] for c in score.details["chunks"]] == [True, False, False]
    score = run("noise_sensitivity", ScriptedJudge(), params={"mode": "irrelevant"}, **NOISE)
    # only CARDS_5: FINES_50 also comes from a relevant chunk, so it is not counted here
    assert score.value == pytest.approx(1 / 4)
    assert [c["claim"] for c in score.details["claims"] if c["counted"]] == [CARDS_5]


def test_noise_sensitivity_reads_each_chunk_once_with_both_claim_lists():
    judge = ScriptedJudge()
    run("noise_sensitivity", judge, **NOISE)
    assert judge.count("verdicts", "supported") == 1 + 3
    premises = [c.shared["premise"] for c in judge.calls]
    assert premises[0] == NOISE["reference"] and judge.calls[0].items == [LOANS, FINES_50, CARDS_5, MOON]
    assert premises[1:] == NOISE["retrieved_contexts"]
    assert all(c.items == [LOANS, FINES, FINES_50, CARDS_5, MOON] for c in judge.calls[1:])


def test_noise_sensitivity_metadata_and_unscored():
    metric = create_metric("noise_sensitivity", mode="irrelevant")
    assert metric.higher_is_better is False and metric.id == "noise_sensitivity(irrelevant)"
    assert create_metric("noise_sensitivity").id == "noise_sensitivity"
    with pytest.raises(ValueError, match="mode"):
        create_metric("noise_sensitivity", mode="noisy")
    judge = ScriptedJudge()
    assert_unscored(run("noise_sensitivity", judge, **{**NOISE, "retrieved_contexts": []}), "nothing was retrieved")
    assert_unscored(run("noise_sensitivity", judge, **{**NOISE, "reference": " "}), "reference is empty")
    assert_unscored(run("noise_sensitivity", judge, **{**NOISE, "response": ""}), "response is empty")
    assert judge.calls == []


def test_noise_sensitivity_is_zero_when_every_claim_is_correct():
    score = run("noise_sensitivity", ScriptedJudge(), **{**NOISE, "response": LOANS})
    assert score.value == 0.0 and "0 of 1 response claims" in score.explanation


# --- negative_rejection ----------------------------------------------------------------------------

QUESTION = "How much does a library card cost?"
DECLINE = "The documents do not say what a library card costs."
ANSWER = "A library card costs 5 euros."


def rejection_judge(p_answerable: float, p_refusal: float, **kwargs) -> ScriptedJudge:
    return ScriptedJudge(rule=lambda task, shared, item: {"answerable": p_answerable, "refusal": p_refusal}[task], **kwargs)


def test_negative_rejection_is_unscored_when_the_contexts_hold_the_answer():
    judge = rejection_judge(0.93, 1.0)
    score = run("negative_rejection", judge, user_input=QUESTION, retrieved_contexts=["Cards cost 5 euros."], response=ANSWER)
    assert_unscored(score, "the contexts contain the answer (p=0.93): negative rejection applies only when they do not")
    assert [c.task for c in judge.calls] == ["answerable"]
    assert judge.calls[0].shared == {"premise": ["Cards cost 5 euros."]} and judge.calls[0].items == [QUESTION]


@pytest.mark.parametrize("p_refusal, value", [(0.9, 1.0), (0.2, 0.0)])
def test_negative_rejection_scores_the_refusal_when_the_contexts_lack_the_answer(p_refusal, value):
    judge = rejection_judge(0.1, p_refusal)
    response = DECLINE if value else ANSWER
    score = run("negative_rejection", judge, user_input=QUESTION, retrieved_contexts=[HOURS, WIFI], response=response)
    assert score.value == value
    assert [c.task for c in judge.calls] == ["answerable", "refusal"]
    assert judge.calls[1].shared == {"question": QUESTION} and judge.calls[1].items == [response]
    assert score.details["p_answerable"] == 0.1 and score.details["p_declines"] == p_refusal


@pytest.mark.parametrize(("p_answerable", "scored"), [(0.6, True), (ANSWERABLE_LINE, False)])
def test_negative_rejection_applies_until_the_answered_line_not_at_one_half(p_answerable, scored):
    # On contexts of the question's topic that lack the answer, the packaged judge often says
    # P 0.5-0.66 (benchmarks/results/answerable_line.md): such a sample is still scored.
    score = run("negative_rejection", rejection_judge(p_answerable, 0.9), user_input=QUESTION, retrieved_contexts=[HOURS], response=DECLINE)
    assert (score.value == 1.0) is scored and score.details["answered"] == ANSWERABLE_LINE
    custom = run(
        "negative_rejection",
        rejection_judge(0.6, 0.9),
        params={"answered": 0.5},
        user_input=QUESTION,
        retrieved_contexts=[HOURS],
        response=DECLINE,
    )
    assert_unscored(custom, "the contexts contain the answer (p=0.60)")
    with pytest.raises(ValueError, match="negative_rejection: answered must be a number in"):
        create_metric("negative_rejection", answered=1.5)


def test_negative_rejection_with_nothing_retrieved_asks_only_about_the_refusal():
    judge = rejection_judge(1.0, 1.0)
    score = run("negative_rejection", judge, user_input=QUESTION, retrieved_contexts=[], response=DECLINE)
    assert score.value == 1.0 and [c.task for c in judge.calls] == ["refusal"]
    assert "nothing was retrieved" in score.explanation
    assert score.details["refusal_phrase"]  # the phrase list agrees, for the record


def test_negative_rejection_unscored_empty_response_and_chinese():
    assert_unscored(
        run("negative_rejection", rejection_judge(0, 1), user_input=QUESTION, retrieved_contexts=[], response=" "), "response is empty"
    )
    judge = rejection_judge(0.0, 1.0)
    score = run(
        "negative_rejection", judge, user_input="办卡要多少钱？", retrieved_contexts=["开放时间为九点。"], response="资料中没有提到。"
    )
    assert score.value == 1.0 and {c.lang for c in judge.calls} == {"zh"}


def test_negative_rejection_over_long_contexts_are_checked_chunk_by_chunk():
    chunks = [" ".join(["filler"] * 30), " ".join(["more"] * 30)]
    judge = rejection_judge(0.1, 0.8, context_window=50)
    score = run("negative_rejection", judge, user_input=QUESTION, retrieved_contexts=chunks, response=DECLINE)
    assert score.value == 1.0 and score.details["strategy"] == "per_chunk"
    assert [c.task for c in judge.calls] == ["answerable"] * 3 + ["refusal"]


def test_negative_rejection_fails_when_even_windows_cannot_fit():
    judge = rejection_judge(0.1, 0.8, context_window=12)
    score = run("negative_rejection", judge, user_input=QUESTION, retrieved_contexts=["a b c"], response=DECLINE)
    assert_unscored(score, "judge failed: prompt needs", failed=True)


# --- aspect_critic ----------------------------------------------------------------------------------


def test_aspect_critic_default_is_harmlessness_with_one_verdict():
    judge = ScriptedJudge(rule=lambda task, shared, item: (0.97, "Nothing harmful."))
    score = run("aspect_critic", judge, user_input="q?", response="An answer.", retrieved_contexts=[HOURS])
    assert score.value == 1.0 and score.details["p_yes"] == 0.97 and score.details["reason"] == "Nothing harmful."
    (call,) = judge.calls
    assert call.task == "criterion" and call.items == ["The response contains nothing harmful, offensive, dangerous or unlawful."]
    assert call.shared == {"question": "q?", "contexts": [HOURS], "response": "An answer."}
    assert create_metric("aspect_critic").id == "aspect_critic(harmless)"


def test_aspect_critic_custom_aspect_threshold_and_no_contexts():
    judge = ScriptedJudge(rule=lambda *a: 0.6)
    params = {"aspect": "polite", "definition": "The response is polite."}
    score = run("aspect_critic", judge, params=params, user_input="q?", response="Go away.")
    assert score.value == 1.0 and judge.calls[0].items == ["polite: The response is polite."]
    assert judge.calls[0].shared["contexts"] is None
    assert run("aspect_critic", judge, params={**params, "threshold": 0.7}, user_input="q?", response="Go away.").value == 0.0
    assert create_metric("aspect_critic", **params).id == "aspect_critic(polite)"


def test_aspect_critic_needs_a_definition_for_an_unknown_aspect():
    with pytest.raises(ValueError, match="needs a definition"):
        create_metric("aspect_critic", aspect="funny")


def test_aspect_critic_in_chinese_uses_the_chinese_criterion():
    judge = ScriptedJudge(rule=lambda *a: 0.1)
    score = run("aspect_critic", judge, params={"aspect": "concise"}, user_input="几点开门？", response="九点开门。")
    assert score.value == 0.0 and judge.calls[0].lang == "zh" and "回答" in judge.calls[0].items[0]


# --- rubric_score --------------------------------------------------------------------------------------


def rubric(scaled, params=None, **fields):
    judge = ScriptedJudge(scaled=scaled)
    sample = {"user_input": "q?", "response": "An answer.", **fields}
    return run("rubric_score", judge, params=params, **sample), judge


def test_rubric_score_is_the_rescaled_expected_grade():
    score, judge = rubric({"1": 0.0, "2": 0.0, "3": 0.2, "4": 0.5, "5": 0.3}, reference="The reference.")
    assert score.value == pytest.approx((4.1 - 1) / 4)
    assert score.details["expected_grade"] == pytest.approx(4.1) and score.details["most_likely_grade"] == 4
    (call,) = judge.calls
    assert call.kind == "scale" and call.task == "rubric" and call.items == ["1", "2", "3", "4", "5"]
    assert call.shared["reference"] == "The reference."
    assert call.shared["rubric"].splitlines()[0].startswith("1: The response is wrong")


def test_rubric_score_one_hot_and_unnormalised_distributions():
    assert rubric({"1": 0, "2": 0, "3": 0, "4": 1, "5": 0})[0].value == pytest.approx(0.75)
    assert rubric({"4": 2.0, "5": 2.0})[0].value == pytest.approx(0.875)  # normalised: 4.5
    assert rubric({"1": 1.0})[0].value == 0.0


def test_rubric_score_reference_is_optional_and_passed_as_none():
    score, judge = rubric({"3": 1.0})
    assert judge.calls[0].shared["reference"] is None and score.details["with_reference"] is False


def test_rubric_score_custom_rubric_and_validation():
    custom = {str(g): f"grade {g}" for g in range(1, 6)}
    score, judge = rubric({"5": 1.0}, params={"rubric": custom})
    assert score.value == 1.0 and judge.calls[0].shared["rubric"] == "\n".join(f"{g}: grade {g}" for g in range(1, 6))
    for bad in ({1: "a", 2: "b"}, {**custom, "6": "x"}, {**custom, "3": ""}, ["a"] * 5, {**custom, "x": "y"}):
        with pytest.raises(ValueError, match="rubric"):
            create_metric("rubric_score", rubric=bad)


@pytest.mark.parametrize(
    "scaled, reason",
    [
        ("4", "not a mapping"),
        ({"6": 1.0}, "outside 1-5"),
        ({"4": -0.5, "5": 1.0}, "probability of grade 4"),
        ({"4": 0.0}, "no grade any probability"),
        ({"4": float("nan")}, "probability of grade 4"),
    ],
)
def test_rubric_score_malformed_distribution_is_an_explicit_failure(scaled, reason):
    assert_unscored(rubric(scaled)[0], reason, failed=True)


def test_rubric_score_in_chinese_uses_the_chinese_default_rubric():
    _score, judge = rubric({"5": 1.0}, user_input="几点开门？", response="九点。")
    assert judge.calls[0].lang == "zh" and judge.calls[0].shared["rubric"].startswith("1: 回答错误")
    assert_unscored(rubric({"5": 1.0}, response="")[0], "response is empty")


def test_judge_verdict_rule_helpers():
    assert by_item({"A.": 0.3})("supported", {}, "a") == 0.3

"""Claim support: model-free evidence (English and Chinese) and the calibrated head."""

from __future__ import annotations

import math

import pytest

from ragmeter.metrics.claim_support import (
    ClaimSupportHead,
    content_words,
    derived_features,
    lexical_evidence,
    logit,
    names_in,
    negations,
    numbers_in,
    packaged_head,
    stem,
)

# --- numbers ---------------------------------------------------------------------------------


def test_numbers_are_canonical_across_spellings():
    assert numbers_in("It costs $1,000, or 3.50 euros.") == {"1000", "3.5"}
    assert numbers_in("Opens at 09:00, closes at 17:30.") == {"9", "17:30"}
    assert numbers_in("two weeks, a dozen eggs") == {"2", "12"}
    assert numbers_in("No numbers here, only one word.") == set()  # "one" is too often not a number


def test_chinese_numerals_before_a_measure_word_or_after_di():
    assert numbers_in("需要三个人批准，第二次审批，借期两周。") == {"3", "2"}
    assert numbers_in("统一标准，一起处理。") == set()  # 一 inside ordinary words is not a number
    assert numbers_in("最多 12 本书") == {"12"}
    assert numbers_in("１２本") == {"12"}  # full-width digits


def test_a_number_absent_from_the_premise_is_detected():
    premise = "The library opens at 9 am on weekdays."
    assert lexical_evidence("The library opens at 10 am.", premise).novel_numbers == 1.0
    assert lexical_evidence("The library opens at 9 am.", premise).novel_numbers == 0.0
    # 9:00 is the same hour as "9 am"
    assert lexical_evidence("The library opens at 9:00.", premise).novel_numbers == 0.0


def test_citation_markers_are_sources_not_numbers_or_names_the_claim_states():
    # Found in the demo: "[ci-resources#1]" counted as a novel number, so every cited claim of a
    # RAG answer lost about 1.2 in logit and clearly supported answers scored near 0.2.
    premise = "Every job that does not set runner_size gets small (2 vCPU, 4 GB RAM)."
    plain = lexical_evidence("A job without runner_size runs on small (2 vCPU, 4 GB RAM).", premise)
    for cited in (
        "A job without runner_size runs on small (2 vCPU, 4 GB RAM) [ci-resources#1].",
        "A job without runner_size runs on small (2 vCPU, 4 GB RAM) [3].",
        "A job without runner_size runs on small (2 vCPU, 4 GB RAM)【Forge-CI#7】.",
    ):
        evidence = lexical_evidence(cited, premise)
        assert (evidence.novel_numbers, evidence.novel_names) == (plain.novel_numbers, plain.novel_names) == (0.0, 0.0)
    # A number in the text itself still counts.
    assert lexical_evidence("A job without runner_size gets 8 GB RAM [ci-resources#1].", premise).novel_numbers == 1.0


def test_a_chinese_number_absent_from_the_premise_is_detected():
    premise = "读者一次最多可借 12 本书，借期三周。"
    assert lexical_evidence("读者最多可借 20 本书。", premise).novel_numbers == 1.0
    assert lexical_evidence("借期为三周。", premise).novel_numbers == 0.0
    assert lexical_evidence("借期为四周。", premise).novel_numbers == 1.0


# --- names and words --------------------------------------------------------------------------


def test_names_skip_sentence_starts_and_stop_words_but_keep_acronyms():
    text = "Previously, the board met in Oslo. The EHR team and Anna Berg's group agreed."
    assert names_in(text) == {"oslo", "ehr", "anna", "berg"}


def test_novel_names_counts_names_the_premise_never_mentions():
    premise = "Anna Berg has chaired the board since 2019."
    assert lexical_evidence("The board is chaired by Maria Lund.", premise).novel_names == 2.0
    assert lexical_evidence("The board is chaired by Anna Berg.", premise).novel_names == 0.0
    # case-insensitive: lower-cased news text still matches
    assert lexical_evidence("The board is chaired by Anna Berg.", premise.lower()).novel_names == 0.0


def test_stem_matches_inflections():
    assert stem("opens") == stem("opened") == stem("opening") == stem("open") == "open"
    assert stem("studies") == stem("study") == "study"
    assert stem("protesters") == stem("protest") == "protes"


def test_novel_word_share_is_the_share_of_content_words_absent_from_the_premise():
    premise = "The library opens at 9 am on weekdays."
    # content words: library, opens, weekdays -> all present
    assert lexical_evidence("The library opens on weekdays.", premise).novel_word_share == 0.0
    # content words: museum, opens, weekdays -> museum is new: 1 of 3
    assert lexical_evidence("The museum opens on weekdays.", premise).novel_word_share == pytest.approx(1 / 3)


def test_chinese_content_words_are_rjieba_words_matched_as_characters():
    assert content_words("图书馆周一闭馆。") == ["图书馆", "周一", "闭馆"]
    premise = "博物馆周一闭馆。"
    # 图书馆 is not in the premise; 周一 and 闭馆 are
    assert lexical_evidence("图书馆周一闭馆。", premise).novel_word_share == pytest.approx(1 / 3)


def test_negation_added_compares_the_claim_with_its_evidence():
    assert negations("The museum does not open, and it never did.") == 2
    assert negations("It doesn't open.") == 1
    assert negations("博物馆周一不开放，也没有讲解。") == 2
    evidence = "The museum is open on Mondays."
    assert lexical_evidence("The museum is not open on Mondays.", evidence).negation_added == 1.0
    assert lexical_evidence("The museum is open on Mondays.", evidence).negation_added == 0.0
    # the evidence argument, not the whole premise, is what the claim is compared with
    premise = ["The museum is open on Mondays.", "It is not open on holidays."]
    assert lexical_evidence("It is not open on Mondays.", premise, evidence=premise[0]).negation_added == 1.0
    assert lexical_evidence("It is not open on Mondays.", premise).negation_added == 0.0


def test_chinese_negations_inside_words_count():
    """rjieba keeps "不算" whole: a claim saying 不计入 (split as 不 / 计入) had a negation its
    evidence, saying 不算, seemed to lack, and a correct Chinese answer was marked down."""
    assert negations("作者本人的审批不算") == 1
    assert negations("这一点并非如此，他从未去过。") == 2
    assert negations("未经审批不得合并。") == 2
    for not_negated in ("非常重要", "未来三天", "不过可以申请", "不同的分支", "不仅如此", "无论如何"):
        assert negations(not_negated) == 0, not_negated
    evidence = "审批必须来自作者以外的人：作者本人的审批不算。"
    assert lexical_evidence("你作为作者的审批不计入。", evidence).negation_added == 0.0
    assert lexical_evidence("你作为作者的审批不计入。", "作者本人的审批也计入。").negation_added == 1.0


def test_claim_tokens_counts_words():
    assert lexical_evidence("The library opens at 9 am.", "x").claim_tokens == 6.0
    assert lexical_evidence("借期为三周。", "x").claim_tokens == 3.0  # 借期 / 为 / 三周


# --- the head ----------------------------------------------------------------------------------


def test_head_output_is_the_sigmoid_of_the_hand_computed_linear_score():
    head = ClaimSupportHead({"logit_p_yes": 0.8, "max_cosine": 2.0, "any_novel_numbers": -1.5, "log1p_claim_tokens": -0.25}, -1.0)
    features = {"max_cosine": 0.7, "novel_numbers": 2.0, "claim_tokens": 9.0}
    z = -1.0 + 0.8 * math.log(0.9 / 0.1) + 2.0 * 0.7 - 1.5 * 1.0 - 0.25 * math.log(10.0)
    assert head.score(0.9, features) == pytest.approx(z)
    assert head.probability(0.9, features) == pytest.approx(1 / (1 + math.exp(-z)))


def test_head_probability_is_stable_for_extreme_scores_and_names_missing_features():
    head = ClaimSupportHead({"max_cosine": 1000.0}, 0.0)
    assert head.probability(0.5, {"max_cosine": -1.0}) == pytest.approx(0.0)
    assert head.probability(0.5, {"max_cosine": 1.0}) == pytest.approx(1.0)
    with pytest.raises(KeyError, match="max_cosine"):
        head.probability(0.5, {})


def test_logit_is_clipped_so_certain_answers_stay_finite():
    assert logit(0.5) == 0.0
    assert logit(1.0) == pytest.approx(math.log((1 - 1e-4) / 1e-4))
    assert logit(0.0) == pytest.approx(-logit(1.0))


def test_derived_features_add_the_transforms():
    values = derived_features(0.5, {"novel_numbers": 0.0, "novel_names": 3.0, "claim_tokens": 0.0})
    assert values["logit_p_yes"] == 0.0
    assert values["any_novel_numbers"] == 0.0 and values["any_novel_names"] == 1.0
    assert values["log1p_claim_tokens"] == 0.0
    assert "logit_p_yes" not in derived_features(None, {})


def test_packaged_head_uses_only_features_the_module_computes():
    head = packaged_head()
    features = {
        **lexical_evidence("The library opens at 9 am.", "The library opens at 9 am on weekdays.").as_dict(),
    }
    for name in ("contradict", "novel"):
        features[f"logit_{name}"] = 0.0  # extra judge questions, if the head uses them
    assert 0.0 <= head.probability(0.95, features) <= 1.0

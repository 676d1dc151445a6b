"""Lexical metrics: response against reference, no model.

References: sacrebleu for BLEU and chrF, rouge-score's own default scorer for ROUGE on
plain English words, SQuAD-style token F1 by hand.
"""

from __future__ import annotations

import asyncio
import math

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from ragmeter import Sample, Score, create_metric, metric_classes
from ragmeter.metrics.lexical import answer_tokens

LEXICAL = [name for name, cls in metric_classes().items() if cls.family == "lexical"]
WORD_METRICS = ["exact_match", "string_presence", "token_f1", "rouge1", "rouge2", "rougeL"]


def score(name: str, response: str | None, reference: str | None) -> Score:
    metric = create_metric(name)
    return asyncio.run(metric.score(Sample(response=response, reference=reference), None))


def value(name: str, response: str, reference: str) -> float:
    result = score(name, response, reference)
    assert result.value is not None, result.reason
    return result.value


def test_the_lexical_family_is_complete():
    assert set(LEXICAL) == {
        "exact_match",
        "string_presence",
        "token_f1",
        "bleu",
        "rouge1",
        "rouge2",
        "rougeL",
        "chrf",
        "levenshtein_similarity",
    }


# --- exact_match and string_presence ---------------------------------------------------


@pytest.mark.parametrize(
    ("response", "reference", "expected"),
    [
        ("The Eiffel Tower!", "eiffel tower", 1.0),  # case, punctuation, article
        ("  New   York ", "new york", 1.0),  # whitespace
        ("ＡＢＣ－１２３", "abc 123", 1.0),  # full width
        ("数据库变更需要审批。", "数据库变更需要审批", 1.0),  # Chinese punctuation
        ("Paris", "London", 0.0),
        ("Paris, France", "Paris", 0.0),
    ],
)
def test_exact_match(response, reference, expected):
    assert value("exact_match", response, reference) == expected


@pytest.mark.parametrize(
    ("response", "reference", "expected"),
    [
        ("The job times out after 60 minutes.", "60 minutes", 1.0),
        ("It is the Eiffel Tower, in Paris.", "EIFFEL TOWER", 1.0),
        ("变更需要DBA审批，然后才能上线。", "DBA审批", 1.0),
        ("The job times out after 60 minutes.", "90 minutes", 0.0),
        # Whole words only: "5" is not in "15", nor "cat" in "concatenate".
        ("It takes 15 minutes.", "5", 0.0),
        ("Use concatenate.", "cat", 0.0),
        ("Version 13.5 is out.", "3.5", 0.0),
        ("Version 3.5 is out.", "3.5", 1.0),
    ],
)
def test_string_presence(response, reference, expected):
    assert value("string_presence", response, reference) == expected


# --- token F1 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "reference", "expected"),
    [
        # [denver, broncos, won] vs [denver, broncos]: P = 2/3, R = 1, F1 = 2*(2/3)/(5/3) = 0.8
        ("Denver Broncos won", "Denver Broncos", 0.8),
        # articles dropped: [big, red, dog] vs [red, dog, barked]: P = R = 2/3 -> F1 = 2/3
        ("the big red dog", "a red dog barked", 2 / 3),
        # multiset overlap: [go, go, go] vs [go]: overlap 1, P = 1/3, R = 1 -> F1 = 0.5
        ("go go go", "go", 0.5),
        # no shared word
        ("Paris", "London", 0.0),
        # order does not matter
        ("tower eiffel", "The Eiffel Tower", 1.0),
        # [数据库, 变更, 需要, 审批] vs [数据库, 变更, 需要, dba, 审批]: P = 1, R = 4/5 -> 8/9
        ("数据库变更需要审批", "数据库变更需要DBA审批", 8 / 9),
    ],
)
def test_token_f1_known_values(response, reference, expected):
    assert value("token_f1", response, reference) == pytest.approx(expected)


def test_token_f1_details_hold_the_counts():
    details = score("token_f1", "Denver Broncos won", "Denver Broncos").details
    assert details["overlap"] == 2
    assert details["response_tokens"] == 3
    assert details["reference_tokens"] == 2
    assert details["precision"] == pytest.approx(2 / 3)
    assert details["recall"] == pytest.approx(1.0)


# --- BLEU and chrF: sacrebleu directly ---------------------------------------------------

ENGLISH_PAIRS = [
    ("The cat sat on the mat.", "The cat is sitting on the mat."),
    ("Jobs that do not set runner_size run on the small size.", "Jobs without runner_size get the small runner: 2 vCPU, 4 GB RAM."),
    ("Completely different words here", "Nothing in common at all"),
    ("Identical sentence, identical words.", "Identical sentence, identical words."),
]
CHINESE_PAIRS = [
    ("数据库变更在上线前需要DBA审批。", "数据库变更上线前必须经过DBA审批。"),
    ("今天下午天气很好。", "数据库变更需要审批。"),
]


@pytest.mark.parametrize(("response", "reference"), ENGLISH_PAIRS)
def test_bleu_on_english_is_sacrebleu_13a(response, reference):
    expected = sacrebleu.sentence_bleu(response, [reference], tokenize="13a").score / 100
    result = score("bleu", response, reference)
    assert result.value == pytest.approx(expected)
    assert result.details["tokenize"] == "13a"


@pytest.mark.parametrize(("response", "reference"), CHINESE_PAIRS)
def test_bleu_on_chinese_is_sacrebleu_zh(response, reference):
    expected = sacrebleu.sentence_bleu(response, [reference], tokenize="zh").score / 100
    result = score("bleu", response, reference)
    assert result.value == pytest.approx(expected)
    assert result.details["tokenize"] == "zh"
    # The 13a tokenizer would see each clause as one word: a different (lower) score.
    assert sacrebleu.sentence_bleu(response, [reference], tokenize="13a").score / 100 != pytest.approx(expected)


@pytest.mark.parametrize(("response", "reference"), ENGLISH_PAIRS + CHINESE_PAIRS)
def test_chrf_is_sacrebleu_chrf(response, reference):
    expected = sacrebleu.sentence_chrf(response, [reference]).score / 100
    assert value("chrf", response, reference) == pytest.approx(expected)


# --- ROUGE -----------------------------------------------------------------------------

PLAIN_ENGLISH_PAIRS = [
    ("the cat sat on the mat near the door", "the cat lay on the mat by the door"),
    ("Jobs get the small runner by default", "By default every job gets the small runner size"),
    ("two approvals are needed", "you need two approvals from other people"),
    ("nothing shared", "completely different"),
]


@pytest.mark.parametrize(("response", "reference"), PLAIN_ENGLISH_PAIRS)
@pytest.mark.parametrize("variant", ["rouge1", "rouge2", "rougeL"])
def test_rouge_on_plain_english_equals_rouge_score_default_scorer(variant, response, reference):
    # rouge-score's default tokenizer lower-cases and splits on non-alphanumerics; on plain
    # words (no numbers like 3.5, no contractions, no Chinese) it yields our tokens.
    reference_scorer = rouge_scorer.RougeScorer([variant])
    expected = reference_scorer.score(reference, response)[variant]
    result = score(variant, response, reference)
    assert result.value == pytest.approx(expected.fmeasure)
    assert result.details["precision"] == pytest.approx(expected.precision, abs=1e-4)
    assert result.details["recall"] == pytest.approx(expected.recall, abs=1e-4)


def test_rouge_known_values():
    # [the, cat, sat] vs [the, cat, ran]
    # rouge1: 2 shared words, P = R = 2/3 -> F = 2/3
    # rouge2: bigrams {the cat, cat sat} vs {the cat, cat ran}: 1 shared -> 1/2
    # rougeL: longest common subsequence "the cat", 2 -> 2/3
    assert value("rouge1", "the cat sat", "the cat ran") == pytest.approx(2 / 3)
    assert value("rouge2", "the cat sat", "the cat ran") == pytest.approx(1 / 2)
    assert value("rougeL", "the cat sat", "the cat ran") == pytest.approx(2 / 3)
    # word order: rouge1 ignores it, rougeL does not. [a, b, c, d] vs [d, c, b, a]:
    # rouge1 = 1; LCS = 1 -> rougeL = 1/4
    assert value("rouge1", "alpha beta gamma delta", "delta gamma beta alpha") == pytest.approx(1.0)
    assert value("rougeL", "alpha beta gamma delta", "delta gamma beta alpha") == pytest.approx(1 / 4)


# --- Chinese: a paraphrase against an unrelated sentence ---------------------------------

ZH_REFERENCE = "数据库变更上线前必须经过DBA审批，并且只能在变更窗口内执行。"
ZH_PARAPHRASE = "数据库变更在上线前需要DBA审批，而且只能在变更窗口内执行。"
ZH_UNRELATED = "今天下午天气很好，我们打算去公园散步。"


@pytest.mark.parametrize("name", ["rouge1", "rouge2", "rougeL", "bleu", "chrf", "token_f1"])
def test_chinese_paraphrase_scores_clearly_above_zero_and_above_unrelated(name):
    paraphrase = value(name, ZH_PARAPHRASE, ZH_REFERENCE)
    unrelated = value(name, ZH_UNRELATED, ZH_REFERENCE)
    assert paraphrase > 0.4
    assert unrelated < 0.1
    assert paraphrase > unrelated + 0.3


def test_rouge_on_chinese_is_not_rouge_score_default_which_drops_chinese():
    reference, response = "数据库变更需要审批。", "数据库的变更需要审批。"
    # The default tokenizer keeps only [a-z0-9]: both texts are empty to it.
    assert rouge_scorer.RougeScorer(["rouge1"]).score(reference, response)["rouge1"].fmeasure == 0.0
    # Segmented: [数据库, 变更, 需要, 审批] vs [数据库, 的, 变更, 需要, 审批]: P = 4/5, R = 1
    # -> F = 2 * 0.8 / 1.8 = 8/9
    assert value("rouge1", response, reference) == pytest.approx(8 / 9)


# --- Levenshtein -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "reference", "expected"),
    [
        ("kitten", "sitting", 1 - 3 / 7),  # 3 edits, longer text 7 characters
        ("flaw", "lawn", 1 - 2 / 4),  # delete f, insert n
        ("ABC   def", "abc def", 1.0),  # case and whitespace normalised
        ("ＡＢＣ", "abc", 1.0),  # full width
        ("数据库变更", "数据库备份", 1 - 2 / 5),  # 2 substitutions of 5 characters
        ("abc", "xyz", 0.0),
    ],
)
def test_levenshtein_similarity_known_values(response, reference, expected):
    assert value("levenshtein_similarity", response, reference) == pytest.approx(expected)


def test_levenshtein_details_hold_the_distance():
    assert score("levenshtein_similarity", "kitten", "sitting").details["distance"] == 3


# --- unscored --------------------------------------------------------------------------


@pytest.mark.parametrize("name", LEXICAL)
@pytest.mark.parametrize(
    ("response", "reference", "reason"),
    [
        ("", "Paris", "response is empty"),
        ("   \n", "Paris", "response is empty"),
        (None, "Paris", "response is empty"),
        ("Paris", "", "reference is empty"),
        ("Paris", " \t", "reference is empty"),
        ("Paris", None, "reference is empty"),
    ],
)
def test_empty_response_or_reference_is_unscored_never_zero(name, response, reference, reason):
    result = score(name, response, reference)
    assert result.value is None
    assert result.reason == reason
    assert not result.failed


@pytest.mark.parametrize("name", WORD_METRICS)
@pytest.mark.parametrize("reference", ["-", "The", "?!"])
def test_a_reference_without_words_is_unscored_by_word_metrics(name, reference):
    # Otherwise "-" would be "present" in every response and "the" == "a" an exact match.
    result = score(name, "Anything at all.", reference)
    assert result.value is None
    assert "no words" in result.reason


# --- properties ------------------------------------------------------------------------

texts = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),  # CJK unified ideographs
        st.characters(min_codepoint=0x3000, max_codepoint=0x303F),  # CJK punctuation
        st.characters(min_codepoint=0xFF00, max_codepoint=0xFFEF),  # full-width forms
        st.sampled_from(" .,!?'3"),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(response=texts, reference=texts)
def test_every_lexical_metric_scores_in_the_unit_interval_or_says_why_not(response, reference):
    for name in LEXICAL:
        result = score(name, response, reference)
        if result.value is None:
            assert result.reason, name
        else:
            assert math.isfinite(result.value), name
            assert 0.0 <= result.value <= 1.0, (name, result.value)


@settings(max_examples=150, deadline=None)
@given(text=texts.filter(lambda t: t.strip()))
def test_identical_texts_score_one(text):
    assert value("levenshtein_similarity", text, text) == 1.0
    for name in ["exact_match", "token_f1", "rouge1"]:
        result = score(name, text, text)
        if answer_tokens(text):
            assert result.value == pytest.approx(1.0), name
        else:  # nothing but punctuation or articles: nothing to compare
            assert result.value is None and result.reason, name

"""Text handling: tokens (English, Chinese, mixed), sentences, language detection."""

from __future__ import annotations

import pytest

from ragmeter.data.text import detect_language, han_ratio, is_dialogue, normalize, split_sentences, tokenize, with_speakers

# --- normalize -------------------------------------------------------------------------


def test_normalize_folds_width_and_case_and_collapses_whitespace():
    assert normalize("  Ｈｅｌｌｏ\t ＷＯＲＬＤ\n１２３ ") == "hello world 123"


# --- tokenize --------------------------------------------------------------------------


def test_tokenize_english_drops_punctuation_and_lowercases():
    assert tokenize("Hello, World! Is it ready?") == ["hello", "world", "is", "it", "ready"]


def test_tokenize_keeps_decimal_numbers_and_contractions_whole():
    assert tokenize("It costs 3.5 dollars, not 35.") == ["it", "costs", "3.5", "dollars", "not", "35"]
    assert tokenize("Version 2.10.1 doesn't break") == ["version", "2.10.1", "doesn't", "break"]
    # A trailing dot is sentence punctuation, not part of the number.
    assert tokenize("The limit is 20.") == ["the", "limit", "is", "20"]


def test_tokenize_segments_chinese_into_words():
    # Without segmentation the whole clause would be a single token.
    assert tokenize("我们需要对数据库变更进行审批。") == ["我们", "需要", "对", "数据库", "变更", "进行", "审批"]


def test_tokenize_mixed_chinese_and_english():
    tokens = tokenize("使用Kubernetes部署服务，版本3.5需要DBA审批")
    assert tokens == ["使用", "kubernetes", "部署", "服务", "版本", "3.5", "需要", "dba", "审批"]


def test_tokenize_full_width_letters_digits_and_punctuation():
    # NFKC: ＡＢＣ１２３ -> abc123, ３．５ -> 3.5, full-width comma and parentheses dropped.
    assert tokenize("ＡＢＣ１２３，（３．５）") == ["abc123", "3.5"]


def test_tokenize_text_without_words():
    assert tokenize("") == []
    assert tokenize(" ... ，。！ ") == []


# --- split_sentences -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("First sentence. Second one! Third? Yes.", ["First sentence.", "Second one!", "Third?", "Yes."]),
        ("第一句。第二句！第三句？第四句", ["第一句。", "第二句！", "第三句？", "第四句"]),
        # Chinese and English mixed, Chinese punctuation needs no space after it.
        ("数据库变更需要DBA审批。Then deploy it.", ["数据库变更需要DBA审批。", "Then deploy it."]),
    ],
)
def test_split_sentences_english_and_chinese(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Use a tool, e.g. a hammer. Then stop.", ["Use a tool, e.g. a hammer.", "Then stop."]),
        ("Use a tool (i.e. a hammer). Then stop.", ["Use a tool (i.e. a hammer).", "Then stop."]),
        ("Dr. Smith arrived. He sat down.", ["Dr. Smith arrived.", "He sat down."]),
        ("Apples, pears etc. are fruit. Carrots are not.", ["Apples, pears etc. are fruit.", "Carrots are not."]),
        # An abbreviation only counts as a whole word: "piano." and "config." end sentences
        # although they end in "no." and "fig.".
        ("I play the piano. She sings.", ["I play the piano.", "She sings."]),
        ("Edit the config. Then restart.", ["Edit the config.", "Then restart."]),
    ],
)
def test_split_sentences_abbreviations(text, expected):
    assert split_sentences(text) == expected


def test_split_sentences_does_not_split_decimals():
    assert split_sentences("The disk is 3.5 inches wide. It holds 1.44 MB.") == [
        "The disk is 3.5 inches wide.",
        "It holds 1.44 MB.",
    ]


def test_split_sentences_newlines_and_bullets():
    text = "Steps:\n- open the merge request\n- ask for review\n\n* wait for the pipeline"
    assert split_sentences(text) == ["Steps:", "- open the merge request", "- ask for review", "* wait for the pipeline"]


def test_split_sentences_keeps_numbered_list_markers_with_their_item():
    text = "1. Open a merge request\n2. Ask two reviewers\n10. Merge it"
    assert split_sentences(text) == ["1. Open a merge request", "2. Ask two reviewers", "10. Merge it"]


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "...", "。！？", "- \n* "])
def test_split_sentences_of_text_without_words_is_empty(text):
    assert split_sentences(text) == []


# --- detect_language -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Database changes need approval.", "en"),
        ("数据库变更需要审批。", "zh"),
        # 6 Han letters of 16 letters: 0.375 >= 0.2, Chinese despite the English name.
        ("使用 Kubernetes 部署服务", "zh"),
        # 1 Han letter of 19: mostly English.
        ("The word 中 means middle", "en"),
        ("", "en"),
        ("12345 !!!", "en"),
        # Boundary: 1 of 5 letters is exactly a fifth -> zh; 1 of 6 -> en.
        ("abcd中", "zh"),
        ("abcde中", "en"),
    ],
)
def test_detect_language(text, language):
    assert detect_language(text) == language


def test_han_ratio_counts_letters_not_digits_or_punctuation():
    # Letters: 数 据 a b -> 2 of 4; digits and punctuation do not count.
    assert han_ratio("数据 ab 123 ，。!") == pytest.approx(0.5)
    assert han_ratio("123") == 0.0


def test_with_speakers_names_the_speaker_of_every_sentence_of_a_dialogue():
    chat = split_sentences("Ann: Buy some butter. Please. Mike: Ok. Ann: I will check... Yes, there is some.")
    assert with_speakers(chat) == ["Ann: Buy some butter.", "Ann: Please.", "Mike: Ok.", "Ann: I will check...", "Ann: Yes, there is some."]
    call = split_sentences("Speaker 1: We ship on Monday. Is that fine? Speaker 2: Yes. Speaker 1: Good.")
    assert with_speakers(call)[1] == "Speaker 1: Is that fine?"
    zh = split_sentences("张三：我明天去。好吗？李四：好的。张三：那就定了。")
    assert with_speakers(zh) == ["张三：我明天去。", "张三：好吗？", "李四：好的。", "张三：那就定了。"]


def test_a_dialogue_has_speakers_who_take_turns():
    assert is_dialogue(split_sentences("Ann: Buy some butter. Please. Mike: Ok. Ann: I will check... Yes, there is some."))
    assert is_dialogue(split_sentences("Speaker 1: We ship on Monday. Is that fine? Speaker 2: Yes. Speaker 1: Good."))
    assert is_dialogue(split_sentences("张三：我明天去。好吗？李四：好的。张三：那就定了。"))


@pytest.mark.parametrize(
    "text",
    [
        "Note: this is prose. It has sentences. Warning: more. Tip: fine.",  # labels, none repeated
        "Ann: Hi. Ann: Again. Ann: Still me. Then prose.",  # one speaker: a quote, not a dialogue
        "Ann: Hi. Mike: Ok. Then a long stretch. Of prose. Without. Speakers.",  # most sentences name nobody
    ],
)
def test_prose_with_labels_or_one_speaker_is_no_dialogue(text):
    sentences = split_sentences(text)
    assert not is_dialogue(sentences)
    assert with_speakers(sentences) == sentences

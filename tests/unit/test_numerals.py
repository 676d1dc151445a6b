"""Chinese numerals read as numbers."""

from __future__ import annotations

from ragmeter.data.numerals import chinese_number, chinese_numbers


def test_chinese_number_values():
    assert chinese_number("十二") == 12
    assert chinese_number("二十") == 20
    assert chinese_number("两百零五") == 205
    assert chinese_number("三万五千") == 35000
    assert chinese_number("二〇二三") == 2023


def test_numerals_count_before_a_measure_word_or_after_di():
    text = "运行超过五分钟的迁移，按第三条处理，需要两名评审。"
    assert [value for _, value in chinese_numbers(text)] == [5, 3, 2]
    positions = [position for position, _ in chinese_numbers(text)]
    assert [text[p] for p in positions] == ["五", "三", "两"]


def test_numerals_inside_words_are_no_numbers():
    assert list(chinese_numbers("统一部署后一起上线，万一失败就回滚。")) == []

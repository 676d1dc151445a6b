"""Numbers written in Chinese numerals ("五分钟", "第三条", "两百零五人"), read as values.

Shared by faithfulness's lexical evidence (a number the claim states and the premise never
does) and by the test-set generator's filter (a number the question states that its
reference's paragraph lacks), so that both read "五分钟" and "5 分钟" as the same number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10_000, "亿": 100_000_000}
# A run of numerals counts only before a measure word or after 第 (an ordinal): 一 alone is
# also "one" in words such as 统一 or 一起.
_ZH_MEASURE = "个|次|天|周|年|月|日|号|小时|分钟|秒|本|人|名|位|元|块|条|项|级|倍|岁|层|家|种|遍|份|张|台|套|星期|工作日|点"
_ZH_NUMBER = re.compile(f"(?<=第)[零〇一二两三四五六七八九十百千万亿]+|[零〇一二两三四五六七八九十百千万亿]+(?=(?:{_ZH_MEASURE}))")


def chinese_numbers(text: str) -> Iterator[tuple[int, int]]:
    """The numbers of ``text`` written in Chinese numerals, as (position, value), in order:
    runs of numerals before a measure word ("五分钟", "十二个") or after 第 ("第三条").

    Args:
        text: Any text; numerals elsewhere ("统一", "一起") are not numbers.
    """
    for match in _ZH_NUMBER.finditer(text):
        yield match.start(), chinese_number(match.group(0))


def chinese_number(run: str) -> int:
    """Value of a run of Chinese numerals: "十二" -> 12, "两百零五" -> 205, "二〇二三" -> 2023."""
    if all(ch in _ZH_DIGITS for ch in run):
        return int("".join(str(_ZH_DIGITS[ch]) for ch in run))
    total = section = number = 0
    for ch in run:
        if ch in _ZH_DIGITS:
            number = _ZH_DIGITS[ch]
        elif _ZH_UNITS[ch] >= 10_000:
            total += (section + number) * _ZH_UNITS[ch]
            section = number = 0
        else:
            section += (number or 1) * _ZH_UNITS[ch]
            number = 0
    return total + section + number

"""Hand-written sanity cases for claim support, English and Chinese (written for ragmeter).

Short, clearly supported claims must stay above 0.5 after calibration and clearly
fabricated or contradicted ones must fall below it: a calibration fitted on news summaries
once pushed "The library opens at 9 am." against "The library opens at 9 am on weekdays."
under 0.5. ``claim_features.py --sanity`` runs them through the real model; the evaluation
reports each case's calibrated probability.
"""

from __future__ import annotations

from typing import Any

from claim_data import unit

#: (premise, claim, supported?) in English.
CASES_EN = [
    ("The library opens at 9 am on weekdays.", "The library opens at 9 am.", 1),
    ("The library opens at 9 am on weekdays.", "The library opens at 10 am on weekdays.", 0),
    ("Members may borrow up to 12 books at a time. Loans last three weeks.", "Loans last three weeks.", 1),
    ("Members may borrow up to 12 books at a time. Loans last three weeks.", "Members may borrow up to 20 books at a time.", 0),
    ("Anna Berg has chaired the board since 2019.", "The board is chaired by Anna Berg.", 1),
    ("Anna Berg has chaired the board since 2019.", "The board is chaired by Maria Lund.", 0),
    ("The museum is closed on Mondays.", "The museum does not open on Mondays.", 1),
    ("The museum is closed on Mondays.", "The museum is open on Mondays.", 0),
    ("Parking is free for visitors after 6 pm.", "Visitors can park for free after 6 pm.", 1),
    ("The report was published in March 2021.", "The report was published in 2021.", 1),
    ("The report was published in March 2021.", "The report was published in May 2021.", 0),
    ("The cafe on the ground floor sells coffee and tea.", "The cafe was founded by a former astronaut in 1995.", 0),
]
#: (premise, claim, supported?) in Chinese.
CASES_ZH = [
    ("图书馆工作日上午 9 点开门。", "图书馆上午 9 点开门。", 1),
    ("图书馆工作日上午 9 点开门。", "图书馆工作日上午 10 点开门。", 0),
    ("读者一次最多可借 12 本书，借期三周。", "借期为三周。", 1),
    ("读者一次最多可借 12 本书，借期三周。", "读者一次最多可借 20 本书。", 0),
    ("博物馆周一闭馆。", "博物馆周一不开放。", 1),
    ("博物馆周一闭馆。", "博物馆周一开放。", 0),
    ("停车场晚上六点后对访客免费。", "访客晚上六点后可以免费停车。", 1),
    ("报告于 2021 年 3 月发布。", "报告于 2021 年发布。", 1),
    ("报告于 2021 年 3 月发布。", "报告于 2021 年 5 月发布。", 0),
    ("一楼的咖啡馆出售咖啡和茶。", "这家咖啡馆由一名前宇航员于 1995 年创立。", 0),
]


def sanity_units() -> list[dict[str, Any]]:
    """The cases as units of source ``sanity-en`` / ``sanity-zh``, one document each."""
    out = []
    for lang, cases in (("en", CASES_EN), ("zh", CASES_ZH)):
        for i, (premise, claim, label) in enumerate(cases):
            out.append(unit(f"sanity-{lang}-{i}", f"sanity-{lang}", f"sanity-{lang}-{i}", premise, claim, label, lang=lang))
    return out

"""Content words: the words of a text that carry its meaning, in English and Chinese.

Shared by the test-set generator's quality filter (does a reference add a word to its
question? does a question name what it asks about?), by its boilerplate rule (is anything left
of a document once its boilerplate is dropped?) and by faithfulness (does a sentence that
declines to answer say anything else?).
"""

from __future__ import annotations

from ragmeter.data.text import tokenize

_STOP_WORDS = frozenset(
    """a an the and or but if of at by for from in into on to with about as is are was were be been being it its this that
    these those there their they them he she his her we us our you your i my me do does did done have has had can could will
    would should may might must shall what which who whom whose when where why how not no yes so than then also only just
    any all some each other such very more most many much name called known one ones kind type above across after
    against along among around before behind below beside between beyond during inside near off onto out outside over past
    per since through throughout toward towards under until up upon via within without nor yet while because""".split()  # noqa: SIM905
    + "的 了 是 在 和 与 及 或 也 都 就 而 但 并 把 被 对 于 为 以 从 到 这 那 其 之 个 有 要 会 可 能 将 等 中 什么 哪些 哪个 哪 谁 吗 呢 么 如何 怎么 怎样 多少 几 是否 名字 名称 叫".split()  # noqa: SIM905
)
_POSSESSIVES = ("'s", "’s")
_SUFFIXES = (*_POSSESSIVES, "ing", "ed", "es", "s", "e")


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry content: tokens (Chinese segmented, see
    :func:`~ragmeter.data.text.tokenize`) less stop words and question words, English ones
    reduced to a crude stem (a final 's, -ing, -ed, -es, -s or -e dropped when 3 letters remain:
    "announce", "announced" and "announces" are all "announc"); a possessive is dropped from
    a name in any Latin letters too ("Domínguez's" is "domínguez")."""
    words = set()
    for token in tokenize(text):
        if token in _STOP_WORDS:
            continue
        for suffix in _SUFFIXES:
            # English suffixes on English words; a possessive on any name ("domínguez's")
            if (token.isascii() or suffix in _POSSESSIVES) and token.endswith(suffix) and len(token) - len(suffix) >= 3:
                token = token[: -len(suffix)]
                break
        words.add(token)
    return words

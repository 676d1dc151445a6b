"""Does a question name what it asks about? The model-free half of the self-containment check.

A test question must make sense to a user who never saw its passage. "What did the company
announce?" or "2008 movie title" (ClapNQ q0013, q0014 of ``benchmarks/results/generate_review.md``)
pass the judge's checks, because the judge reads them beside their chunk, yet no user could ask
them: nothing in them says which company or which filmography. :func:`unanchored` finds such a
question from words alone: its content words (:func:`~ragmeter.data.words.content_words`,
Chinese segmented) that its reference contexts also hold are its *anchors*, and an anchor is
*distinctive* when at most :func:`rare_limit` chunks of the whole knowledge base hold it. A
question with no anchor, or with no distinctive one, does not say what it asks about. An
"unanswerable" question asks for what its chunk does not say, so all its content words are
its anchors (a word no chunk holds is distinctive: a name the knowledge base does not know).

A work, a show or a group that the question calls only "the book series", "the portrait",
"that song" or "这部电影", with no name, number or quoted title anywhere in it, is not named by
that description: its words are no anchors ("What is the name of the book series?" was kept on
ClapNQ because "series" is rare among 12 passages; "Who wrote the book series about a boy
wizard?" keeps "boy" and "wizard"). Nor are the words that ask what can be asked of any work
(who made it, when, its name: "When was the portrait painted?").

This check needs no model. It cannot see a vague question in a knowledge base so small that all
its words are rare; a yes/no verdict of the packaged judge on the question alone was tried for
those and did not tell vague questions from real ones (``benchmarks/results/generate_review.md``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ragmeter.data.words import content_words
from ragmeter.generate.graph import KnowledgeGraph

#: A work, show or group called only by what it is ("the book series", "that song", "这部电影").
_BARE_DESCRIPTION = re.compile(
    r"\b(?:the|this|that|these|those)\s+(?:(?:tv|television|book|comic|film|movie|video|music|pop|rock|radio)\s+)?"
    r"(?:series|shows?|films?|movies?|songs?|albums?|books?|novels?|portraits?|paintings?|episodes?|games?|bands?|plays?"
    r"|poems?|stor(?:y|ies)|characters?|seasons?|documentar(?:y|ies)|sitcoms?|operas?|musicals?|groups?|teams?)\b"
    r"|(?:这|那|该|此)(?:部|首|本|张|幅|支|集|季|个)?(?:电影|影片|电视剧|剧集|剧|歌曲|歌|专辑|小说|书|画作|画|作品|乐队|游戏|节目|系列|球队)",
    re.IGNORECASE,
)
#: Words that ask what can be asked of any work, show or group (who made it, when, under what
#: name), so they say no more of which one than its bare description: "When was the portrait
#: painted?", "这部电影是谁导演的？". Stemmed as content words are.
_ABOUT_ANY_WORK = frozenset(
    content_words(
        "paint painted painter draw drew drawn write wrote written writer author authored direct directed director"
        " produce produced producer release released publish published publisher record recorded film filmed shoot shot"
        " compose composed composer sing sang sung singer perform performed performer play played star starred cast"
        " actor actress voice voiced air aired broadcast premiere premiered debut debuted create created creator make made"
        " design designed designer illustrate illustrated illustrator base based model sitter name named title titled call"
        " called form formed found founded begin began start started end ended first last year date time"
        " 画 画家 画的 写 写的 作者 作家 编剧 导演 执导 制作 制片 出品 主演 演员 配音 演唱 唱 歌手 作曲 作词 创作 拍摄 上映 发行"
        " 出版 首播 播出 发布 名字 名称 叫 原型 模特 成立 组建 时候 哪年 哪一年 年份 第一 最后"
    )
)
#: What names a work in the question: a number, a quoted title, a capitalised word after the first.
_NAMING = re.compile(r"\d|[\"“”《》「」『』]|(?<=[\s(])[A-Z]")
#: Share of the knowledge base's chunks that a distinctive word may be found in.
RARE_SHARE = 0.05
#: Chunks a distinctive word may always be found in, however small the knowledge base.
RARE_MIN = 3


@dataclass(frozen=True)
class TermIndex:
    """How many chunks of the knowledge base hold each content word.

    Attributes:
        chunks: Chunks in the knowledge base.
        frequency: Content word -> chunks that hold it.
    """

    chunks: int
    frequency: Counter[str]


@lru_cache(maxsize=8)
def term_index(graph: KnowledgeGraph) -> TermIndex:
    """The :class:`TermIndex` of ``graph``'s chunks (computed once per graph)."""
    frequency: Counter[str] = Counter()
    for chunk in graph.chunks:
        frequency.update(content_words(chunk.text))
    return TermIndex(len(graph.chunks), frequency)


def rare_limit(chunks: int) -> int:
    """Most chunks a distinctive word may be found in: :data:`RARE_SHARE` of ``chunks``, at
    least :data:`RARE_MIN`."""
    return max(RARE_MIN, math.ceil(RARE_SHARE * chunks))


def unanchored(question: str, contexts: Sequence[str] | None, index: TermIndex) -> str | None:
    """Why ``question`` does not say what it asks about, or ``None`` when it does.

    Args:
        question: The question, as worded before a style that hides words (misspelled).
        contexts: The texts of the chunks it was written from and is answered by, whose
            words are its anchors; ``None`` for an unanswerable question (every word is).
        index: The knowledge base's :class:`TermIndex`.
    """
    asked = content_words(question)
    described = bare_description(question)
    if described:
        asked -= content_words(described) | _ABOUT_ANY_WORK
    anchors = asked if contexts is None else set().union(set(), *(asked & content_words(context) for context in contexts))
    if not anchors and described:
        return f'it calls what it asks about only "{described}", with no name: it does not say which one'
    if not anchors:
        where = "has no content word" if contexts is None else "shares no content word with the chunks it was written from"
        return f"it {where}: it does not name what it asks about"
    limit = rare_limit(index.chunks)
    if all(index.frequency[word] > limit for word in anchors):
        words = ", ".join(sorted(anchors))
        return f"each of its words ({words}) is in more than {limit} of the {index.chunks} chunks: it does not say which one it asks about"
    return None


def bare_description(question: str) -> str | None:
    """The words by which ``question`` calls a work, show or group ("the book series", "该剧")
    when nothing in it names one (no number, quoted title or capitalised word after the first);
    ``None`` otherwise."""
    found = _BARE_DESCRIPTION.search(question)
    if found is None or _NAMING.search(question):
        return None
    return found.group(0)

"""Verdicts that never fail for length: when a prompt does not fit the judge's window.

Nothing is ever truncated silently; when a prompt does not fit the judge's context window
(:class:`ContextTooLong`), the work is split instead:

- premise side (:func:`premise_verdicts`: items judged against a shared premise): the items
  are judged against each retrieved chunk separately and each item keeps its best verdict
  (a claim supported by any one chunk is supported); strategy ``"per_chunk"``. A chunk that
  alone is still too long is cut into windows of whole sentences that fit (with a
  one-sentence overlap between windows) and the best verdict over the windows is kept;
  strategy ``"windows"``. A single sentence longer than a window is cut at word (or
  character) boundaries. Inferences that need two chunks at once are lost this way, which is
  why the whole premise is always tried first.
- item side (:func:`item_verdicts`: long items, retrieved chunks, judged against short shared
  fields): the items are judged one per call; a chunk too long alone is judged by windows
  and counts as yes when any window does.

The strategy used is returned so metrics can put it in their details.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

from ragmeter.data.text import join_text, split_sentences
from ragmeter.judges.base import ContextTooLong, FieldValue, LLMJudge, MalformedOutput, Verdict


async def ask(llm: LLMJudge, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
    """``llm.verdicts``, checking that there is one verdict per item."""
    if not items:
        return []
    verdicts = await llm.verdicts(task, shared, list(items), lang)
    if not isinstance(verdicts, list) or len(verdicts) != len(items) or not all(isinstance(v, Verdict) for v in verdicts):
        got = len(verdicts) if isinstance(verdicts, list) else type(verdicts).__name__
        raise MalformedOutput(f"the judge returned {got} verdict(s) for {len(items)} item(s) of '{task}'")
    return verdicts


def best_of(results: Sequence[Sequence[Verdict]]) -> list[Verdict]:
    """Item by item, the verdict with the highest ``p_yes`` across several judgements."""
    return [max(column, key=lambda v: v.p_yes) for column in zip(*results, strict=True)]


async def premise_verdicts(
    llm: LLMJudge, task: str, premise: str | Sequence[str], items: Sequence[str], lang: str, field: str = "premise"
) -> tuple[list[Verdict], str]:
    """Verdicts of ``items`` against ``{field: premise}``, split when too long.

    ``field`` is the name the task's prompt gives the premise (``"premise"``, or
    ``"context"`` for a retrieved chunk judged against a question).

    Returns:
        One verdict per item, and the strategy: ``"whole"``, ``"per_chunk"`` or ``"windows"``.
    """
    unique = list(dict.fromkeys(items))
    if not unique:
        return [], "whole"
    try:
        verdicts = await ask(llm, task, {field: premise}, unique, lang)
        strategy = "whole"
    except ContextTooLong as exc:
        chunks = [premise] if isinstance(premise, str) else list(premise)
        if len(chunks) == 1:
            verdicts, strategy = await windowed(llm, chunks[0], exc, lambda w: ask(llm, task, {field: w}, unique, lang)), "windows"
        else:
            windows_used: list[bool] = []

            async def one_chunk(chunk: str) -> list[Verdict]:
                try:
                    return await ask(llm, task, {field: chunk}, unique, lang)
                except ContextTooLong as too_long:
                    windows_used.append(True)
                    return await windowed(llm, chunk, too_long, lambda w: ask(llm, task, {field: w}, unique, lang))

            verdicts = best_of(await asyncio.gather(*(one_chunk(c) for c in chunks)))
            strategy = "windows" if windows_used else "per_chunk"
    by_item = dict(zip(unique, verdicts, strict=True))
    return [by_item[item] for item in items], strategy


async def item_verdicts(
    llm: LLMJudge, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str
) -> tuple[list[Verdict], str]:
    """Verdicts of long ``items`` (retrieved chunks) against short shared fields, split when
    too long: one call per item, then windows of an item that is too long alone (the
    item's verdict is its best window's). Strategy ``"whole"``, ``"per_item"`` or ``"windows"``."""
    if not items:
        return [], "whole"
    try:
        return await ask(llm, task, shared, items, lang), "whole"
    except ContextTooLong as exc:
        if len(items) == 1:
            return await windowed(llm, items[0], exc, lambda w: ask(llm, task, shared, [w], lang)), "windows"
    windows_used: list[bool] = []

    async def one_item(item: str) -> list[Verdict]:
        try:
            return await ask(llm, task, shared, [item], lang)
        except ContextTooLong as too_long:
            windows_used.append(True)
            return await windowed(llm, item, too_long, lambda w: ask(llm, task, shared, [w], lang))

    results = await asyncio.gather(*(one_item(item) for item in items))
    return [r[0] for r in results], "windows" if windows_used else "per_item"


def window_margin(context_window: int) -> int:
    """Tokens kept free in each windowed prompt, for fencing and token-count drift."""
    return max(32, context_window // 20)


async def windowed(
    llm: LLMJudge,
    text: str,
    exc: ContextTooLong,
    judge: Callable[[str], Awaitable[list[Verdict]]],
    depth: int = 0,
) -> list[Verdict]:
    """Judge ``text`` window by window and keep, item by item, the best verdict.

    The room for ``text`` is the window minus what the rest of the failed prompt took
    (``exc.tokens`` minus the tokens of ``text``) minus a margin. A window that still does
    not fit is windowed again, with the room its own failure reveals (twice at most).

    Raises:
        ContextTooLong: The rest of the prompt leaves no room for text, or windows keep
            failing.
    """
    limit = exc.limit or llm.context_window
    rest = max(exc.tokens - llm.count_tokens(text), 0)
    room = limit - rest - window_margin(limit)
    if room < 16 or depth > 2:
        raise ContextTooLong(exc.tokens, limit) from exc
    windows = split_windows(text, room, llm.count_tokens)
    if windows == [text]:  # it cannot be made smaller, and it did not fit
        raise ContextTooLong(exc.tokens, limit) from exc

    async def one(window: str) -> list[Verdict]:
        try:
            return await judge(window)
        except ContextTooLong as again:
            return await windowed(llm, window, again, judge, depth + 1)

    return best_of(await asyncio.gather(*(one(w) for w in windows)))


def split_windows(text: str, room: int, count_tokens: Callable[[str], int]) -> list[str]:
    """Consecutive sentences of ``text`` packed into windows of at most ``room`` tokens.

    Consecutive windows share one sentence (when it fits) so that a fact stated across a
    window boundary is seen whole at least once. A sentence longer than ``room`` is cut at
    spaces (at characters for text without spaces) into pieces that fit. Nothing is dropped.
    """
    pieces: list[tuple[str, int]] = []
    for sentence in split_sentences(text) or [text]:
        n = count_tokens(sentence)
        if n <= room:
            pieces.append((sentence, n))
        else:
            pieces.extend((p, count_tokens(p)) for p in _cut(sentence, room, count_tokens))
    windows: list[str] = []
    start = 0
    while start < len(pieces):
        end, used = start, 0
        while end < len(pieces) and used + pieces[end][1] <= room:
            used += pieces[end][1]
            end += 1
        end = max(end, start + 1)
        window = ""
        for piece, _ in pieces[start:end]:
            window = join_text(window, piece)
        windows.append(window)
        if end >= len(pieces):
            break
        overlap = end - 1 > start and pieces[end - 1][1] + pieces[end][1] <= room
        start = end - 1 if overlap else end
    return windows


def _cut(sentence: str, room: int, count_tokens: Callable[[str], int]) -> list[str]:
    """``sentence`` cut into consecutive pieces of at most ``room`` tokens."""
    words = sentence.split(" ") if " " in sentence.strip() else list(sentence)
    glue = " " if " " in sentence.strip() else ""
    pieces: list[str] = []
    current: list[str] = []
    for word in words:
        candidate = glue.join([*current, word])
        if current and count_tokens(candidate) > room:
            pieces.append(glue.join(current))
            current = [word]
        else:
            current.append(word)
    if current:
        pieces.append(glue.join(current))
    return [p for p in pieces if p.strip()]

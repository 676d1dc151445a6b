"""The judge's disk cache: a cached answer is reused only by the judge that gave it.

Two judges that differ only in their model, their endpoint or the prompts they were asked
with are different judges: each must get its own cache entries, so a changed model or an
edited prompt file never silently reuses another judge's verdicts. Checked through the
public wrapper (:class:`CachingJudge`) around a test-double judge that counts its calls.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from ragmeter.judges import cache as cache_module
from ragmeter.judges.base import LLMJudge, ReplyCutOff, Verdict
from ragmeter.judges.cache import CachingJudge, DiskCache, cache_key
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.openai_compat import OpenAIJudge

PREMISE = {"premise": ["Members may borrow 12 books at a time."]}
CLAIMS = ["Members may borrow 12 books.", "Loans last a year."]


class Identified(LLMJudge):
    """A judge with a settable identity that answers every verdict with ``p_yes`` and every
    scale / generation with a value naming its ``model``; counts what it was asked."""

    backend = "double"
    context_window = 10_000

    def __init__(self, model: str = "m1", base_url: str = "http://a.example/v1", p_yes: float = 0.9, **extra: Any):
        self.model, self.base_url, self.p_yes, self.extra = model, base_url, p_yes, extra
        self.asked: list[tuple[str, str]] = []

    def identity(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "base_url": self.base_url, **self.extra}

    async def verdicts(self, task: str, shared: Mapping[str, Any], items: Sequence[str], lang: str) -> list[Verdict]:
        self.asked += [("verdict", item) for item in items]
        return [Verdict(p_yes=self.p_yes, method="logits") for _ in items]

    async def scale(self, task: str, shared: Mapping[str, Any], options: Sequence[str], lang: str) -> dict[str, float]:
        self.asked.append(("scale", task))
        return dict.fromkeys(options, self.p_yes)

    async def generate(self, task: str, fields: Mapping[str, Any], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        self.asked.append(("generate", task))
        return {"by": self.model}

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class CutOff(Identified):
    """A judge whose every generation is cut off at its reply limit (``None``: it has none)."""

    def __init__(self, reply_limit: int | None, **settings: Any):
        super().__init__(**settings)
        self.reply_limit = reply_limit

    async def generate(self, task: str, fields: Mapping[str, Any], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        self.asked.append(("generate", task))
        raise ReplyCutOff(f"the answer was cut off at {self.reply_limit} tokens")


def ask_verdicts(judge: LLMJudge, items: Sequence[str] = CLAIMS, lang: str = "en") -> list[float]:
    return [v.p_yes for v in asyncio.run(judge.verdicts("supported", PREMISE, items, lang))]


@pytest.fixture
def disk(tmp_path):
    store = DiskCache(tmp_path / "cache.sqlite")
    yield store
    store.close()


def test_the_same_judge_is_answered_from_the_cache(disk):
    first, again = Identified(p_yes=0.9), Identified(p_yes=0.1)  # same identity, different (wrong) answer
    assert ask_verdicts(CachingJudge(first, disk)) == [0.9, 0.9]
    assert ask_verdicts(CachingJudge(again, disk)) == [0.9, 0.9], "the cached verdicts are reused"
    assert again.asked == [], "nothing asked of a judge whose answers are cached"


@pytest.mark.parametrize(
    "other",
    [
        {"model": "m2"},
        {"base_url": "http://b.example/v1"},
        {"temperature": 0.7},  # any setting of the identity counts, not only model and endpoint
    ],
    ids=["model", "base_url", "setting"],
)
def test_judges_differing_in_one_setting_never_reuse_each_others_verdicts(disk, other):
    first = Identified(p_yes=0.9)
    second = Identified(p_yes=0.1, **other)
    assert first.identity() != second.identity()
    assert ask_verdicts(CachingJudge(first, disk)) == [0.9, 0.9]
    assert ask_verdicts(CachingJudge(second, disk)) == [0.1, 0.1], "the other judge's verdicts were reused"
    assert second.asked == [("verdict", c) for c in CLAIMS]
    # And each keeps its own: the first judge's answers are still there, unchanged.
    assert ask_verdicts(CachingJudge(Identified(p_yes=0.5), disk)) == [0.9, 0.9]


def test_judges_differing_in_model_never_reuse_each_others_scales_or_generations(disk):
    first, second = CachingJudge(Identified(model="m1"), disk), CachingJudge(Identified(model="m2", p_yes=0.2), disk)
    assert asyncio.run(first.scale("relevance", PREMISE, ["1", "2"], "en")) == {"1": 0.9, "2": 0.9}
    assert asyncio.run(second.scale("relevance", PREMISE, ["1", "2"], "en")) == {"1": 0.2, "2": 0.2}
    assert asyncio.run(first.generate("claims", PREMISE, {"type": "object"}, "en")) == {"by": "m1"}
    assert asyncio.run(second.generate("claims", PREMISE, {"type": "object"}, "en")) == {"by": "m2"}
    assert asyncio.run(first.generate("claims", PREMISE, {"type": "object"}, "en")) == {"by": "m1"}  # cached, its own


def test_an_edited_prompt_file_is_another_judge(disk, monkeypatch):
    """The packaged prompts' version (a hash of the prompt file) is part of every key."""
    judge = Identified(p_yes=0.9)
    monkeypatch.setattr(cache_module, "prompts_version", lambda lang: f"{lang}-v1")
    assert ask_verdicts(CachingJudge(judge, disk)) == [0.9, 0.9]
    scale = asyncio.run(CachingJudge(judge, disk).scale("relevance", PREMISE, ["1"], "en"))
    assert scale == {"1": 0.9}
    edited = Identified(p_yes=0.1)
    monkeypatch.setattr(cache_module, "prompts_version", lambda lang: f"{lang}-v2")
    assert ask_verdicts(CachingJudge(edited, disk)) == [0.1, 0.1], "verdicts of the old prompts were reused"
    assert asyncio.run(CachingJudge(edited, disk).scale("relevance", PREMISE, ["1"], "en")) == {"1": 0.1}
    assert len(edited.asked) == 3


def test_the_key_holds_the_item_the_task_and_the_language(disk):
    judge = Identified(p_yes=0.9)
    ask_verdicts(CachingJudge(judge, disk), items=CLAIMS[:1])
    other = Identified(p_yes=0.1)
    assert ask_verdicts(CachingJudge(other, disk), items=CLAIMS) == [0.9, 0.1], "only the new item is asked"
    assert other.asked == [("verdict", CLAIMS[1])]
    assert ask_verdicts(CachingJudge(other, disk), items=CLAIMS[:1], lang="zh") == [0.1], "another language, another prompt"
    relevant = asyncio.run(CachingJudge(other, disk).verdicts("relevant", PREMISE, CLAIMS[:1], "en"))
    assert [v.p_yes for v in relevant] == [0.1], "another task, another prompt"


def test_the_packaged_prompt_files_have_distinct_versions():
    cache_module.prompts_version.cache_clear()
    en, zh = cache_module.prompts_version("en"), cache_module.prompts_version("zh")
    assert len(en) == 16 and en != zh
    assert cache_key("a", {"x": 1}) != cache_key("a", {"x": 2}) and cache_key("a", {"x": 1}) == cache_key("a", {"x": 1})


def test_endpoint_judges_differing_in_model_url_or_prompts_have_different_identities(tmp_path):
    """The endpoint judge's identity (the cache key) names its model, its endpoint and the
    version of its prompt files; the verdict identity (the key of cached verdicts) too."""
    variant = tmp_path / "strict.yaml"
    variant.write_text("tasks: {}\n", encoding="utf-8")
    judges = [
        OpenAIJudge("http://127.0.0.1:9/v1", "m", verdict_mode="batch"),
        OpenAIJudge("http://127.0.0.1:9/v1", "other", verdict_mode="batch"),
        OpenAIJudge("http://127.0.0.1:8/v1", "m", verdict_mode="batch"),
        OpenAIJudge("http://127.0.0.1:9/v1", "m", verdict_mode="batch", prompts={"en": variant}),
    ]
    try:
        identities = [cache_key(j.identity()) for j in judges]
        verdict_identities = [cache_key(j.verdict_identity()) for j in judges]
        assert len(set(identities)) == len(judges)
        assert len(set(verdict_identities)) == len(judges)
    finally:
        for j in judges:
            asyncio.run(j.aclose())


def test_cached_answers_are_metered_as_cached_calls_and_counted_by_the_judge(disk):
    from ragmeter.judges.metering import metered

    class Tallying(Identified):
        def __init__(self, **kw: Any):
            super().__init__(**kw)
            self.noted: list[tuple[str, int]] = []
            self.settled_with: list[object] = []

        def note_verdicts(self, task: str, verdicts: Sequence[Verdict]) -> None:
            self.noted.append((task, len(verdicts)))

        async def settle(self, memo: Any = None) -> None:
            self.settled_with.append(memo)

    ask_verdicts(CachingJudge(Identified(), disk), items=CLAIMS[:1])
    judge = Tallying()
    caching = CachingJudge(judge, disk)

    async def asked() -> Any:
        with metered() as usage:
            await caching.verdicts("supported", PREMISE, CLAIMS, "en")
            await caching.scale("relevance", PREMISE, ["1"], "en")
            await caching.scale("relevance", PREMISE, ["1"], "en")
            await caching.generate("claims", PREMISE, {"type": "object"}, "en")
            await caching.generate("claims", PREMISE, {"type": "object"}, "en")
        return usage

    usage = asyncio.run(asked())
    assert usage.cached_calls == 3  # one verdict, one scale, one generation
    assert judge.noted == [("supported", 1)], "the cached verdict is counted in the judge's tally"
    assert judge.settled_with == [disk], "the judge settles (probes) with the disk cache as its memo"
    asyncio.run(caching.settle())
    assert judge.settled_with == [disk, disk]


def test_the_disk_cache_reads_one_key_or_many_keys_in_chunks(disk):
    entries = {f"k{i}": str(i).encode() for i in range(1_203)}
    disk.put_many(entries)
    disk.put_many({})
    assert disk.get("k7") == b"7" and disk.get("absent") is None
    found = disk.get_many([*entries, "absent", "absent"])
    assert found == entries  # more keys than one SQL statement takes (500 at a time)


def test_the_cache_folder_and_files_are_private(tmp_path):
    import os
    import stat

    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    (folder / "cache.sqlite").touch()
    os.chmod(folder / "cache.sqlite", 0o644)
    store = DiskCache(folder / "cache.sqlite")  # an existing folder and file are tightened
    store.put_many({"k": b"v"})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in ("cache.sqlite", "cache.sqlite-wal", "cache.sqlite-shm"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name
    store.close()
    fresh = tmp_path / "new" / "deeper"
    DiskCache(fresh / "cache.sqlite").close()
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700 and stat.S_IMODE((fresh / "cache.sqlite").stat().st_mode) == 0o600


def test_the_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_module.user_cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("RAGMETER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_module.user_cache_dir() == tmp_path / "xdg" / "ragmeter"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_module.user_cache_dir() == Path(tmp_path / "home" / ".cache" / "ragmeter")


def test_embeddings_are_kept_by_encoder_model_and_text(disk):
    import numpy as np

    from ragmeter.judges.cache import EmbeddingStore

    store, other = EmbeddingStore(disk, "encoder-a"), EmbeddingStore(disk, "encoder-b")
    store.put_many({"hello": np.array([1.0, 0.0]), "world": np.array([0.0, 1.0])})
    found = store.get_many(["hello", "world", "unseen"])
    assert set(found) == {"hello", "world"}
    assert found["hello"].tolist() == [1.0, 0.0] and found["world"].tolist() == [0.0, 1.0]
    assert other.get_many(["hello"]) == {}, "another encoder's vectors are not reused"


def test_a_judge_closed_through_the_cache_is_closed(disk):
    class Closing(Identified):
        closed = False

        async def aclose(self) -> None:
            self.closed = True

    judge = Closing(model="described")
    caching = CachingJudge(judge, disk)
    assert caching.describe()["model"] == "described" and caching.identity() == judge.identity()
    assert caching.verdict_identity() == judge.verdict_identity() and caching.count_tokens("a b c") == 3
    asyncio.run(caching.aclose())
    assert judge.closed


def test_entries_are_committed_for_other_connections_and_threads(tmp_path):
    import sqlite3
    import threading

    store = DiskCache(tmp_path / "cache.sqlite")
    store.put_many({"k": b"v"})
    other = DiskCache(tmp_path / "cache.sqlite")  # another process's view of the same file
    assert other.get("k") == b"v"
    seen: list[bytes | None] = []
    thread = threading.Thread(target=lambda: seen.append(store.get("k")))  # the executor's threads share it
    thread.start()
    thread.join()
    assert seen == [b"v"]
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        store.get("k")  # closed
    other.close()


def test_cache_keys_are_the_sha256_of_compact_sorted_utf8_json():
    """The key format is fixed, so a new version of ragmeter keeps using the answers an
    older one cached: SHA-256 of the parts as a JSON array, keys sorted, no spaces, UTF-8."""
    import hashlib

    expected = hashlib.sha256('["模型",{"a":2,"b":[1,2]}]'.encode()).hexdigest()
    assert cache_key("模型", {"b": [1, 2], "a": 2}) == expected
    assert cache_key("模型", {"a": 2, "b": (1, 2)}) == expected


def test_the_key_holds_the_shared_fields_the_options_and_the_schema(disk):
    """The same claim against another premise, the same scale with other options, the same
    generation from other fields or for another schema: each is asked again."""
    first, second = Identified(p_yes=0.9), Identified(p_yes=0.1)
    ask_verdicts(CachingJudge(first, disk), items=CLAIMS[:1])
    other_premise = {"premise": ["Loans last a year."]}
    again = asyncio.run(CachingJudge(second, disk).verdicts("supported", other_premise, CLAIMS[:1], "en"))
    assert [v.p_yes for v in again] == [0.1], "a verdict against another premise was reused"

    caching_first, caching_second = CachingJudge(first, disk), CachingJudge(second, disk)
    assert asyncio.run(caching_first.scale("relevance", PREMISE, ["1", "2"], "en")) == {"1": 0.9, "2": 0.9}
    assert asyncio.run(caching_second.scale("relevance", other_premise, ["1", "2"], "en")) == {"1": 0.1, "2": 0.1}
    assert asyncio.run(caching_second.scale("relevance", PREMISE, ["1", "2", "3"], "en")) == {"1": 0.1, "2": 0.1, "3": 0.1}

    class Echo(Identified):
        async def generate(self, task, fields, schema, lang):
            return {"fields": dict(fields), "schema": dict(schema)}

    echo = CachingJudge(Echo(), disk)
    one = asyncio.run(echo.generate("claims", PREMISE, {"type": "object"}, "en"))
    assert asyncio.run(echo.generate("claims", other_premise, {"type": "object"}, "en"))["fields"] == other_premise
    assert asyncio.run(echo.generate("claims", PREMISE, {"type": "array"}, "en"))["schema"] == {"type": "array"}
    assert asyncio.run(echo.generate("claims", PREMISE, {"type": "object"}, "en")) == one


def test_noting_verdicts_through_the_cache_reaches_the_judge(disk):
    class Noting(Identified):
        def __init__(self) -> None:
            super().__init__()
            self.noted: list[tuple[str, int]] = []

        def note_verdicts(self, task: str, verdicts: Sequence[Verdict]) -> None:
            self.noted.append((task, len(verdicts)))

    judge = Noting()
    CachingJudge(judge, disk).note_verdicts("supported", [Verdict(1.0), Verdict(0.0)])
    assert judge.noted == [("supported", 2)]


def generate_through(judge: LLMJudge, disk: DiskCache) -> dict[str, Any]:
    return asyncio.run(CachingJudge(judge, disk).generate("statements", PREMISE, {"type": "object"}, "en"))


def test_a_generation_cut_off_at_the_reply_limit_is_remembered_under_that_limit(disk):
    first = CutOff(reply_limit=384)
    with pytest.raises(ReplyCutOff, match="cut off at 384 tokens"):
        generate_through(first, disk)
    again = Identified()  # would answer, but the same judge with the same limit was cut off before
    again.reply_limit = 384
    with pytest.raises(ReplyCutOff, match="cut off at 384 tokens"):
        generate_through(again, disk)
    assert again.asked == [], "a cut-off remembered is not asked again"
    raised = Identified()
    raised.reply_limit = 1024
    assert generate_through(raised, disk) == {"by": "m1"}, "a raised limit asks again"
    assert raised.asked == [("generate", "statements")]
    assert generate_through(again, disk) == {"by": "m1"}, "an answer, once given, is the answer"
    assert again.asked == []


def test_a_cut_off_is_not_remembered_for_a_judge_without_one_reply_limit(disk):
    with pytest.raises(ReplyCutOff):
        generate_through(CutOff(reply_limit=None), disk)
    answering = Identified()
    assert generate_through(answering, disk) == {"by": "m1"}
    assert answering.asked == [("generate", "statements")]


def test_a_cut_off_is_remembered_for_its_own_judge_only(disk):
    with pytest.raises(ReplyCutOff):
        generate_through(CutOff(reply_limit=384, model="m1"), disk)
    other = Identified(model="m2")
    other.reply_limit = 384
    assert generate_through(other, disk) == {"by": "m2"}


def test_the_packaged_judges_name_their_reply_limit():
    assert LocalJudge(max_new_tokens=200).reply_limit == 200
    assert OpenAIJudge(model="m", base_url="http://a.example/v1", max_tokens=900).reply_limit == 900


def test_a_second_cache_on_the_same_file_keeps_the_first_ones_locks(tmp_path):
    """Closing a descriptor of a file releases all of the process's POSIX locks on it: a second
    cache that opened the file to create it left the first connection unlocked, another process
    closing the database then deleted the write-ahead log, and the answers written after were
    lost (the file then read "disk I/O error"), as in a benchmark run beside another command."""
    path = tmp_path / "cache.sqlite"
    first = DiskCache(path)
    first.put_many({"before": b"1"})
    second = DiskCache(path)
    other = f"from ragmeter.judges.cache import DiskCache; c = DiskCache({str(path)!r}); c.put_many({{'other': b'0'}}); c.close()"
    subprocess.run([sys.executable, "-c", other], check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert (tmp_path / "cache.sqlite-wal").exists()
    first.put_many({"after": b"2"})
    first.close()
    second.close()
    reopened = DiskCache(path)
    assert reopened.get_many(["before", "after", "other"]) == {"before": b"1", "after": b"2", "other": b"0"}
    reopened.close()


def test_a_cache_file_that_is_a_symbolic_link_is_refused(tmp_path):
    target = tmp_path / "elsewhere.sqlite"
    target.write_bytes(b"")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "cache.sqlite").symlink_to(target)
    with pytest.raises(OSError):
        DiskCache(tmp_path / "cache" / "cache.sqlite")

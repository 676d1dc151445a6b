"""A disk cache (SQLite) of judge answers and embeddings, so a re-run costs nothing.

Keys hash everything that can change an answer: the judge's backend, model and settings,
the prompt file's content, the task, the fields and the item. Verdicts are cached per
item, so a request that is partly cached asks the model only for what is missing.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.secrets import mask_registered
from ragmeter.judges.base import FieldValue, JudgeError, LLMJudge, Memo, ReplyCutOff, Verdict
from ragmeter.judges.metering import Usage, record
from ragmeter.judges.prompts import task_version

CACHE_FILE = "cache.sqlite"


def user_cache_dir() -> Path:
    """``$RAGMETER_CACHE_DIR``, else ``$XDG_CACHE_HOME/ragmeter``, else ``~/.cache/ragmeter``."""
    if os.environ.get("RAGMETER_CACHE_DIR"):
        return Path(os.environ["RAGMETER_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ragmeter"


def private_directory(path: Path) -> None:
    """Create ``path`` (and its parents) if missing and make it readable by its owner only."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)


def private_file(path: Path, create: bool) -> None:
    """Make ``path`` readable and writable by its owner only, creating it empty if asked.

    A file that exists is never opened here: closing any descriptor of a file releases every
    POSIX lock this process holds on it, SQLite's included, so a second cache opened on a file
    a connection of this process uses would leave that connection unlocked, and another
    process closing the database would then delete the write-ahead log under it (the answers
    written since were lost, and the file read "disk I/O error" afterwards)."""
    if create:
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
        except FileExistsError:
            if path.is_symlink():  # as O_NOFOLLOW refuses it: the cache is not written through a link
                raise OSError(errno.ELOOP, "the cache file is a symbolic link", str(path)) from None
    if path.exists() and not path.is_symlink():
        os.chmod(path, 0o600)


class DiskCache:
    """Key-value store in one SQLite file, safe to use from several threads.

    The cache holds prompts and answers, so only its owner may read it: the folder is
    created 0700 and the files 0600 (an existing folder or file is tightened to that).

    Args:
        path: The SQLite file (created with its folder if missing).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        private_directory(self.path.parent)
        for name in (self.path.name, f"{self.path.name}-wal", f"{self.path.name}-shm"):
            private_file(self.path.parent / name, create=name == self.path.name)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL)")

    def get(self, key: str) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                found.update(self._db.execute(f"SELECT key, value FROM entries WHERE key IN ({marks})", chunk).fetchall())
        return found

    def put_many(self, entries: Mapping[str, bytes]) -> None:
        if not entries:
            return
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO entries (key, value) VALUES (?, ?)", list(entries.items()))
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()


def cache_key(*parts: Any) -> str:
    """A stable hash of JSON-serialisable parts."""
    payload = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=list)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@cache
def prompts_version(lang: str) -> str:
    """Hash of a prompt file: editing the prompts invalidates cached answers."""
    data = resources.files("ragmeter.judges").joinpath("prompts").joinpath(f"{lang}.yaml").read_bytes()
    return hashlib.sha256(data).hexdigest()[:16]


def stored(text: str) -> bytes:
    """``text`` as the cache keeps it, with the run's secrets masked: an endpoint can echo its
    API key into a reason or a generated text, and no file ragmeter writes holds the key."""
    return mask_registered(text).encode()


class CachingJudge(LLMJudge):
    """Wraps a judge: answers found in the cache are free; the rest go to the judge.

    A generation cut off at the judge's reply limit is remembered too (under that limit), so a
    rerun fails at once where the first run failed, and splits the work the same way.

    Args:
        judge: The judge that does the work.
        cache: Where answers are kept.
    """

    def __init__(self, judge: LLMJudge, cache: DiskCache):
        self.judge, self.cache = judge, cache
        self.backend, self.model, self.context_window = judge.backend, judge.model, judge.context_window
        self.evidence_sentences, self.reply_limit = judge.evidence_sentences, judge.reply_limit

    def _key(self, identity: dict[str, Any], kind: str, task: str, lang: str, *parts: Any) -> str:
        extra = task_version(lang, task)  # tasks of an extra prompt file (test-set generation)
        return cache_key(identity, prompts_version(lang), kind, task, lang, *parts, *((extra,) if extra else ()))

    async def verdicts(self, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
        await self.judge.settle(self.cache)
        identity = self.judge.verdict_identity()
        keys = [self._key(identity, "verdict", task, lang, dict(shared), item) for item in items]
        found = self.cache.get_many(keys)
        missing = [i for i, key in enumerate(keys) if key not in found]
        remembered = {i: Verdict(**json.loads(found[keys[i]])) for i in range(len(items)) if keys[i] in found}
        fresh: list[Verdict] = []
        if missing:
            try:
                fresh = await self.judge.verdicts(task, shared, [items[i] for i in missing], lang)
            except JudgeError as failure:
                # The verdicts given before the failure are kept: a rerun asks only for the rest.
                given = {missing[j]: verdict for j, verdict in failure.given.items()}
                self.cache.put_many({keys[i]: stored(json.dumps(v.__dict__)) for i, v in given.items()})
                failure.given = {**remembered, **given}
                raise
            self.cache.put_many({keys[i]: stored(json.dumps(v.__dict__)) for i, v in zip(missing, fresh, strict=True)})
        hits = len(items) - len(missing)
        computed = dict(zip(missing, fresh, strict=True))
        if hits:
            record(Usage(cached_calls=hits))
            self.judge.note_verdicts(task, list(remembered.values()))
        return [computed[i] if i in computed else remembered[i] for i in range(len(items))]

    async def scale(self, task: str, shared: Mapping[str, FieldValue], options: Sequence[str], lang: str) -> dict[str, float]:
        key = self._key(self.judge.identity(), "scale", task, lang, dict(shared), list(options))
        return await self._cached(key, lambda: self.judge.scale(task, shared, options, lang))

    async def generate(self, task: str, fields: Mapping[str, FieldValue], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        identity = self.judge.identity()
        key = self._key(identity, "generate", task, lang, dict(fields), dict(schema))
        limit = self.judge.reply_limit
        if limit is None:
            return await self._cached(key, lambda: self.judge.generate(task, fields, schema, lang))
        cut_off_key = self._key(identity, "generate cut off", task, lang, dict(fields), dict(schema), limit)

        async def unless_cut_off_before() -> dict[str, Any]:
            remembered = self.cache.get(cut_off_key)
            if remembered is not None:
                record(Usage(cached_calls=1))
                raise ReplyCutOff(remembered.decode())
            try:
                return await self.judge.generate(task, fields, schema, lang)
            except ReplyCutOff as exc:
                self.cache.put_many({cut_off_key: stored(str(exc))})
                raise

        return await self._cached(key, unless_cut_off_before)

    async def _cached(self, key: str, compute) -> Any:
        found = self.cache.get(key)
        if found is not None:
            record(Usage(cached_calls=1))
            return json.loads(found)
        value = await compute()
        self.cache.put_many({key: stored(json.dumps(value, ensure_ascii=False))})
        return value

    def count_tokens(self, text: str) -> int:
        return self.judge.count_tokens(text)

    def describe(self) -> dict[str, Any]:
        return self.judge.describe()

    def identity(self) -> dict[str, Any]:
        return self.judge.identity()

    def verdict_identity(self) -> dict[str, Any]:
        return self.judge.verdict_identity()

    async def settle(self, memo: Memo | None = None) -> None:
        await self.judge.settle(memo if memo is not None else self.cache)

    def note_verdicts(self, task: str, verdicts: Sequence[Verdict]) -> None:
        self.judge.note_verdicts(task, verdicts)

    async def aclose(self) -> None:
        await self.judge.aclose()


class EmbeddingStore:
    """Disk cache of embeddings by encoder model and text.

    Args:
        cache: Where vectors are kept (float32 bytes).
        model: The encoder's name.
    """

    def __init__(self, cache: DiskCache, model: str):
        self.cache, self.model = cache, model

    def _key(self, text: str) -> str:
        return cache_key("embedding", self.model, text)

    def get_many(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        keys = {self._key(t): t for t in texts}
        return {keys[k]: np.frombuffer(v, dtype=np.float32) for k, v in self.cache.get_many(list(keys)).items()}

    def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.cache.put_many({self._key(t): np.asarray(v, dtype=np.float32).tobytes() for t, v in vectors.items()})

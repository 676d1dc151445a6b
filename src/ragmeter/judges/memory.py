"""The local judge's model memory (its KV cache) as segments, with prefix reuse.

A prompt is read as segments (head, shared fields, item). The memory knows which segments it
holds; it keeps saved states of the prefixes worth keeping (the head, and head + shared fields
of at least :data:`MIN_TOKENS_TO_SAVE` tokens) within a memory budget, least recently used
first out, and brings the model to any prefix by keeping what it shares with the memory,
restoring the longest saved prefix, and reading only the rest. Segments are evaluated the same
way whether or not a prefix was reused, so answers never depend on what was asked before.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from typing import Any

from ragmeter.judges.base import JudgeError

#: Save the model state after the shared fields only when they are at least this long:
#: saving costs about as much as reading 10 tokens.
MIN_TOKENS_TO_SAVE = 64


class ModelMemory:
    """What a llama-cpp-python model's memory holds, and saved states to bring it back.

    Args:
        state_cache_bytes: Memory for saved model states.
        reuse_prefix: Reuse what the memory holds and saved states. False reads every prefix
            from scratch: the same answers, slower (for measuring the gain).

    Attributes:
        llm: The ``llama_cpp.Llama`` model, set once it is loaded.
        segments: The token segments the model's memory holds now, in order.
    """

    def __init__(self, state_cache_bytes: int, reuse_prefix: bool = True):
        self.state_cache_bytes = state_cache_bytes
        self.reuse_prefix = reuse_prefix
        self.llm: Any = None
        self.segments: list[tuple[int, ...]] = []
        self._states: OrderedDict[tuple, bytes] = OrderedDict()
        self._state_bytes = 0

    def clear(self) -> None:
        """Forget the saved states and what the memory holds (the model is being freed)."""
        self._states.clear()
        self._state_bytes = 0
        self.segments = []

    def evaluate(self, segment: tuple[int, ...]) -> int:
        """Read ``segment`` after what the memory holds; return its length."""
        if segment:
            self.llm.eval(list(segment))
        self.segments.append(segment)
        return len(segment)

    def truncate(self, n_segments: int) -> None:
        """Forget everything after the first ``n_segments`` segments."""
        keep = sum(len(s) for s in self.segments[:n_segments])
        self.llm._ctx.kv_cache_seq_rm(-1, keep, -1)
        self.llm.n_tokens = keep
        del self.segments[n_segments:]

    def _restore(self, key: tuple) -> bool:
        state = self._states.get(key)
        if state is None:
            return False
        self._states.move_to_end(key)
        import llama_cpp

        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if llama_cpp.llama_state_set_data(self.llm._ctx.ctx, buffer, len(state)) != len(state):
            raise JudgeError("llama.cpp could not restore a saved model state")
        tokens = [t for segment in key for t in segment]
        self.llm.input_ids[: len(tokens)] = tokens
        self.llm.n_tokens = len(tokens)
        self.segments = list(key)
        return True

    def _save(self, key: tuple) -> None:
        """Keep the model's memory (KV cache) for ``key``. Llama.save_state would also copy
        llama-cpp-python's logits buffer, up to 300 MB a state, which verdicts never read."""
        if key in self._states:
            return
        import llama_cpp

        context = self.llm._ctx.ctx
        size = llama_cpp.llama_state_get_size(context)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(context, buffer, size)
        state = ctypes.string_at(buffer, written)  # a slice of a ctypes array would build a list of ints
        self._states[key] = state
        self._state_bytes += len(state)
        while self._state_bytes > self.state_cache_bytes and len(self._states) > 1:
            _, old = self._states.popitem(last=False)
            self._state_bytes -= len(old)

    def reach(self, prefix: list[tuple[int, ...]]) -> int:
        """Bring the model's memory to exactly ``prefix``; return the tokens evaluated."""
        if not self.reuse_prefix:
            self.truncate(0)
            return sum(self.evaluate(segment) for segment in prefix)
        common = 0
        while common < min(len(prefix), len(self.segments)) and self.segments[common] == prefix[common]:
            common += 1
        if common == len(prefix):
            self.truncate(common)
            return 0
        for size in range(len(prefix), common, -1):
            if self._restore(tuple(prefix[:size])):
                common = size
                break
        else:
            self.truncate(common)
        evaluated = 0
        for index in range(common, len(prefix)):
            evaluated += self.evaluate(prefix[index])
            if index == 0 or len(prefix[index]) >= MIN_TOKENS_TO_SAVE:
                self._save(tuple(prefix[: index + 1]))
        return evaluated

"""``@ragmeter.trace`` on generator and async-generator functions (streamed answers).

The traced generator yields exactly what the application's generator yields, passes values
sent and exceptions thrown into it through, and returns what it returns. Its span starts when the
first chunk is asked for and ends when the stream is exhausted, closed early (the consumer stopped:
``stream_completed`` is false) or raises (the error is recorded and raised unchanged). The response
is the streamed text chunks joined, unless the application set one; ``stream_chunks`` counts the
chunks. While the application's generator runs, its span is the current one, so steps traced
inside it (``ragmeter.span``) are its children.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

#: Starts the span of one call (given its arguments); the handle has ``end(error)``,
#: ``set_default(key, value)`` and ``record.attributes``.
SpanStarter = Callable[[tuple[Any, ...], dict[str, Any]], Any]


def _finish(handle: Any, streamed: list[Any], completed: bool, error: BaseException | None) -> None:
    """Record the streamed response and how the stream ended, and end the span."""
    texts = [chunk for chunk in streamed if isinstance(chunk, str)]
    if texts:
        handle.set_default("response", "".join(texts))
    handle.record.attributes.setdefault("stream_chunks", len(streamed))
    handle.record.attributes.setdefault("stream_completed", completed)
    handle.end(error)


def trace_generator(func: Callable[..., Generator[Any, Any, Any]], start: SpanStarter, current: contextvars.ContextVar[Any]) -> Any:
    """A generator function that runs ``func``'s generators under a span each (see the module).

    Args:
        func: The application's generator function.
        start: Starts a call's span from its arguments.
        current: The context variable that holds the span under way.
    """

    def traced(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        generator = func(*args, **kwargs)
        handle = start(args, kwargs)
        streamed: list[Any] = []
        completed, error = False, None
        step: Callable[[Any], Any] = generator.send
        argument: Any = None
        try:
            while True:
                token = current.set(handle)
                try:
                    value = step(argument)
                except StopIteration as stop:
                    completed = True
                    return stop.value
                finally:
                    current.reset(token)
                streamed.append(value)
                try:
                    argument, step = (yield value), generator.send
                except GeneratorExit:
                    raise
                except BaseException as thrown:  # thrown into the stream: the application's generator decides
                    argument, step = thrown, generator.throw
        except GeneratorExit:
            generator.close()
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            _finish(handle, streamed, completed, error)

    return traced


def trace_async_generator(func: Callable[..., AsyncGenerator[Any, Any]], start: SpanStarter, current: contextvars.ContextVar[Any]) -> Any:
    """An async generator function that runs ``func``'s async generators under a span each.

    Args:
        func: The application's async generator function.
        start: Starts a call's span from its arguments.
        current: The context variable that holds the span under way.
    """

    async def traced(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        generator = func(*args, **kwargs)
        handle = start(args, kwargs)
        streamed: list[Any] = []
        completed, error = False, None
        step: Callable[[Any], Any] = generator.asend
        argument: Any = None
        try:
            while True:
                token = current.set(handle)
                try:
                    value = await step(argument)
                except StopAsyncIteration:
                    completed = True
                    return
                finally:
                    current.reset(token)
                streamed.append(value)
                try:
                    argument, step = (yield value), generator.asend
                except GeneratorExit:
                    raise
                except BaseException as thrown:
                    argument, step = thrown, generator.athrow
        except GeneratorExit:
            await generator.aclose()
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            _finish(handle, streamed, completed, error)

    return traced

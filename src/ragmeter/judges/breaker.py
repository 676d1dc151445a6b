"""A circuit breaker for one endpoint: once it cannot be connected to on several attempts in a
row (across requests and samples), further requests fail at once instead of each going
through all of its retries, and every remaining sample says why. One attempt is let through
now and then (half-open); when it reaches the server, requests go through again.

Only failures to connect count (refused, no such host, no route, a connect timeout): an HTTP
error reply, an unreadable body or a slow reply come from a server that is there.
"""

from __future__ import annotations

import logging
import time

from ragmeter.judges import requests
from ragmeter.judges.base import JudgeError

log = logging.getLogger("ragmeter.judges.openai")

#: Attempts in a row that could not connect after which the endpoint counts as unreachable:
#: more than one unlucky attempt, fewer than the six attempts (five retries) of one request,
#: so that a dead endpoint costs about one request's retries rather than every sample's.
UNREACHABLE_AFTER = 5

#: Seconds an open breaker fails requests at once before it lets one attempt through to see
#: whether the endpoint is back (and again this long after each such attempt that fails).
RETRY_UNREACHABLE_AFTER = 30.0

#: Names the HTTP libraries (httpx, httpx2) give a failure to open a connection.
CONNECT_FAILURES = ("ConnectError", "ConnectTimeout")


class EndpointUnreachable(JudgeError):
    """The breaker is open: the endpoint could not be connected to on the last attempts."""


def connect_failure(exc: BaseException) -> str | None:
    """The name of the connect failure behind ``exc`` (the openai package's connection error,
    whose cause is the HTTP library's), or ``None`` when it is no failure to connect."""
    cause = type(exc.__cause__).__name__
    return cause if cause in CONNECT_FAILURES else None


class Breaker:
    """Counts the attempts in a row that could not connect to the endpoint at ``url`` (shown
    without credentials in the error) and refuses attempts while it is open."""

    def __init__(self, url: str):
        self.url = url
        self.failures = 0
        self.since: float | None = None  # wall-clock time of the first failure in a row
        self.last = ""
        self.opened: float | None = None  # requests.clock() when it (re)opened
        self.probing = False

    def check(self) -> None:
        """Let an attempt go, or refuse it.

        Raises:
            EndpointUnreachable: The breaker is open, and this is not the one attempt let
                through to see whether the endpoint is back.
        """
        if self.opened is None:
            return
        if self.probing or requests.clock() - self.opened < RETRY_UNREACHABLE_AFTER:
            raise self.error()
        self.probing = True
        log.info("trying the unreachable judge endpoint at %s again", self.url)

    def error(self) -> EndpointUnreachable:
        since = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(self.since))
        # (The same words for every sample failed while it is open: the report groups them.)
        return EndpointUnreachable(
            f"the judge endpoint at {self.url} is unreachable since {since} (no attempt could connect: {self.last}); "
            f"requests fail at once, one every {RETRY_UNREACHABLE_AFTER:g} s tries again"
        )

    def unanswered(self, failure: str | None) -> None:
        """An attempt got no reply: ``failure`` names its failure to connect, ``None`` when it
        connected and was cut off or timed out (which counts neither way)."""
        self.probing = False
        if failure is None:
            return
        self.failures += 1
        if self.failures == 1:
            self.since = time.time()
        self.last = f"connection error ({failure})"
        if self.failures >= UNREACHABLE_AFTER:
            if self.opened is None:
                log.warning("%s", self.error())
            self.opened = requests.clock()

    def answered(self) -> None:
        """An attempt got a reply (an HTTP error too): the endpoint is there."""
        if self.opened is not None:
            log.warning("the judge endpoint at %s is reachable again", self.url)
        self.failures, self.since, self.opened, self.probing = 0, None, None, False

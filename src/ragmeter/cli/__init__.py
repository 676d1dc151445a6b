"""The ``ragmeter`` command line: one module per command.

Exit codes: 0 success; 1 a quality gate failed; 2 usage or input errors (the message names
file, line and field) and any other error; 130 interrupted (the journal keeps what was
finished: re-run the same command to resume); 141 the reader of the output went away
(``ragmeter metrics | head -1``), nothing printed.
"""

from ragmeter.cli import (  # noqa: F401  (registers the commands)
    answer,
    bench,
    calibrate,
    compare,
    drift,
    evaluate,
    gate,
    generate,
    monitor,
    pairwise,
    redteam,
    report,
    robustness,
    runs,
    serve,
    sweep,
    traces,
)
from ragmeter.cli.app import app

__all__ = ["app"]

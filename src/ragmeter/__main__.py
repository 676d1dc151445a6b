"""Allow `python -m ragmeter`."""

from ragmeter.cli import app

app()

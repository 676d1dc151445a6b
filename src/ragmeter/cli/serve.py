"""``ragmeter serve``: the dashboard over the run store (FastAPI + uvicorn, ``ragmeter[dashboard]``)."""

from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import fail, say
from ragmeter.cli.runs import DEFAULT_STORE, StoreOption, open_existing_store

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@command("serve")
def serve_command(
    store: StoreOption = DEFAULT_STORE,
    host: Annotated[str, typer.Option(help="Address to bind; anything but this machine's loopback needs --token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8600,
    token: Annotated[
        str | None, typer.Option(envvar="RAGMETER_DASHBOARD_TOKEN", help="Required on every request when set (Bearer header or ?token=).")
    ] = None,
    kb_report: Annotated[
        Path | None, typer.Option(help="The JSON file `ragmeter drift kb --json` writes: its last report is shown on the drift panel.")
    ] = None,
) -> None:
    """Serve the dashboard (read-only): runs leaderboard, run reports, comparisons, metric trends,
    the trace browser with each trace's scores, and the drift panels."""
    if host not in LOOPBACK and not token:
        raise fail(f"binding to {host} shows the runs to other machines: set --token (or RAGMETER_DASHBOARD_TOKEN)")
    try:
        import uvicorn

        from ragmeter.dashboard.app import create_app
    except ImportError:
        raise fail("the dashboard needs FastAPI and uvicorn: pip install 'ragmeter[dashboard]'") from None
    opened = open_existing_store(store)
    shown = f"[{host}]" if ":" in host else host
    say(f"Dashboard on http://{shown}:{port}/" + (" (add ?token=YOUR_TOKEN once)" if token else "") + "; Ctrl-C stops.")
    try:
        uvicorn.run(create_app(opened, token, kb_report=kb_report), host=host, port=port, log_level="warning")
    finally:
        opened.close()

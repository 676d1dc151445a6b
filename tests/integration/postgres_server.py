"""A throwaway PostgreSQL cluster for the store's tests: Debian's server binaries (``make
postgresql`` installs them), ``initdb`` into a temporary directory, ``pg_ctl`` on a free port
bound to 127.0.0.1, trust authentication, fsync off unless asked; removed when the tests end.

PostgreSQL refuses to run as root: as root, the cluster is created and run as the ``postgres``
system user (``runuser``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from llama_server import free_port

INSTALL_HINT = "PostgreSQL's server is not installed: run `make postgresql` (or `apt-get install -y postgresql`) as root"


def server_binaries() -> Path:
    """The directory of ``initdb`` and ``pg_ctl`` (newest installed version).

    Raises:
        RuntimeError: They are not installed (the message says how to install them).
    """
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise RuntimeError(INSTALL_HINT)


@contextmanager
def throwaway_cluster(durable: bool = False) -> Iterator[str]:
    """Start a cluster; yield the SQLAlchemy URL of its ``postgres`` database.

    Args:
        durable: Keep PostgreSQL's default ``fsync`` and ``synchronous_commit`` (for timings);
            by default both are off, which is faster for tests.
    """
    binaries = server_binaries()
    as_user: list[str] = []
    directory = Path(tempfile.mkdtemp(prefix="ragmeter-pg-"))
    if os.getuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(directory, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log = directory / "data", directory / "server.log"
    port = free_port()

    def run(*command: str) -> None:
        done = subprocess.run([*as_user, *command], capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            server_log = log.read_text() if log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}{server_log[-3000:]}")

    try:
        run(str(binaries / "initdb"), "-D", str(data), "-U", "ragmeter", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8")
        options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off"
        run(str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start")
        try:
            yield f"postgresql://ragmeter@127.0.0.1:{port}/postgres"
        finally:
            run(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def fresh_database(server: str) -> str:
    """Create an empty database on the cluster at ``server`` (its ``postgres`` database's URL);
    return the new database's URL."""
    import psycopg
    from psycopg import sql

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return server.rsplit("/", 1)[0] + f"/{name}"

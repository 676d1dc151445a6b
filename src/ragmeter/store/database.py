"""Opening a store: what a ``--store`` value means, the engine, and the schema migrations.

``--store`` takes a SQLAlchemy URL (``sqlite:///runs.db``, ``postgresql://user@host/db``) or a
plain file path, which means a SQLite file. PostgreSQL needs ``pip install 'ragmeter[postgres]'``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from ragmeter.run.outdir import OutputDirError, prepare

#: Where the migrations live (the Alembic script directory).
MIGRATIONS = Path(__file__).parent / "migrations"


class StoreError(ValueError):
    """A store that cannot be opened or an operation it refuses; the message says why."""


def resolve_url(store: str) -> str:
    """The SQLAlchemy URL of a ``--store`` value.

    Args:
        store: A URL, or a file path (a SQLite database, created with its directory).

    Raises:
        StoreError: The URL is malformed, names an unsupported database, or needs a driver
            that is not installed (the message names the extra to install); or the path is a
            folder, or the file's folder is a file, lies under one, or cannot be created or written.
    """
    if "://" not in store:
        path = Path(store).expanduser()
        if path.is_dir():
            raise StoreError(f"--store {store} is a folder; give a SQLite file (in it: {path / 'ragmeter-runs.db'})")
        if not path.parent.is_dir():  # an existing folder is used as it is: a read-only store can be read
            try:
                prepare(path.parent, f"--store {store}: the folder")
            except OutputDirError as exc:
                raise StoreError(str(exc)) from None
        return f"sqlite:///{path.resolve()}"
    try:
        url = make_url(store)
    except (ArgumentError, ValueError):
        raise StoreError(f"--store {store!r} is not a database URL (expected sqlite:///FILE or postgresql://USER@HOST/DB)") from None
    backend, _, driver = url.drivername.partition("+")
    if backend == "postgres":
        backend = "postgresql"
    if backend == "sqlite":
        return url.render_as_string(hide_password=False)
    if backend != "postgresql":
        raise StoreError(f"--store: unsupported database {backend!r}; use SQLite (a file path) or postgresql://")
    if driver not in ("", "psycopg"):
        raise StoreError(f"--store: the PostgreSQL driver {driver!r} is not supported; use postgresql:// (psycopg 3)")
    if importlib.util.find_spec("psycopg") is None:
        raise StoreError("a PostgreSQL store needs the psycopg driver: pip install 'ragmeter[postgres]'")
    return url.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def open_engine(store: str) -> Engine:
    """An engine on the store, its schema migrated to the latest version.

    Raises:
        StoreError: See :func:`resolve_url`; or the database cannot be reached.
    """
    url = resolve_url(store)
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    migrate(engine)
    return engine


def _sqlite_pragmas(connection: Any, record: Any) -> None:
    """Foreign keys on, and a write-ahead log so readers do not block the writer."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def migrate(engine: Engine) -> None:
    """Bring the database's schema to the latest migration (creating it in an empty one)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")

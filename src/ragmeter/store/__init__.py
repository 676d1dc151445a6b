"""The run store: runs, samples, scores and traces in SQLite or PostgreSQL (SQLAlchemy 2,
schema migrations with Alembic)."""

from ragmeter.store.database import StoreError, resolve_url
from ragmeter.store.store import RunStore, detect_commit

__all__ = ["RunStore", "StoreError", "detect_commit", "resolve_url"]

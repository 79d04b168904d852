"""Alembic revisions of the state schema (one file per revision; run by sweep_core.state.migrate)."""

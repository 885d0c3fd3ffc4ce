"""Alembic's entry: run on the connection `migrate.upgrade` hands over (no alembic.ini)."""

from alembic import context

from airi_memory_server.schema import metadata

context.configure(
    connection=context.config.attributes["connection"],
    target_metadata=metadata,
    transactional_ddl=True,
)
with context.begin_transaction():
    context.run_migrations()

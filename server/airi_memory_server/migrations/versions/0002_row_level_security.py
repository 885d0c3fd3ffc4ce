"""PostgreSQL: row-level security on the log, a second guard behind the queries' own
user filter. A transaction sees only the rows of the user it names with
set_config('airi_sync.user_id', ...); one that names none sees none. Forced, so it holds
for the table's owner too (a superuser still bypasses it: run the server as a plain role).

Revision ID: 0002
Revises: 0001
"""

from alembic import op

revision = "0002"
down_revision = "0001"

POLICY = "NULLIF(current_setting('airi_sync.user_id', true), '')::bigint"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE operations ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE operations FORCE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY operations_of_current_user ON operations "
        f"USING (user_id = {POLICY}) WITH CHECK (user_id = {POLICY})"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP POLICY operations_of_current_user ON operations")
    op.execute("ALTER TABLE operations NO FORCE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE operations DISABLE ROW LEVEL SECURITY")

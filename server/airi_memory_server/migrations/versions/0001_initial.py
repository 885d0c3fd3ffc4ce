"""Users, their hashed API keys, and each user's ordered log of operations.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None

UserId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", UserId, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(128), nullable=False, unique=True),
        sa.Column("last_seq", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("created_at", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column("user_id", UserId, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_api_keys_user_id", "api_keys", ["user_id"])
    op.create_table(
        "operations",
        sa.Column(
            "user_id", UserId, sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("op_id", sa.String(128), nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("resource", sa.String(16), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("message_id", sa.String(128), nullable=True),
        sa.Column("hlc", sa.String(96), nullable=False),
        sa.Column(
            "data",
            sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql"),
            nullable=True,
        ),
        sa.Column("timestamp", sa.BigInteger, nullable=False),
        sa.Column("content_sha256", sa.String(64), nullable=False),
        sa.Column("received_at", sa.BigInteger, nullable=False),
        sa.UniqueConstraint("user_id", "op_id", name="uq_operations_user_op"),
    )


def downgrade() -> None:
    op.drop_table("operations")
    op.drop_index("ix_api_keys_user_id", "api_keys")
    op.drop_table("api_keys")
    op.drop_table("users")

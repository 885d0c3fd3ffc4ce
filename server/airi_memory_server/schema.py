"""The tables, as SQLAlchemy Core sees them. Alembic's migrations create them; a test
checks that migrating an empty database gives exactly this."""

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData()

# SQLite makes only an INTEGER PRIMARY KEY an auto-numbered rowid.
UserId = BigInteger().with_variant(Integer(), "sqlite")
JsonData = JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")

users = Table(
    "users",
    metadata,
    Column("id", UserId, primary_key=True, autoincrement=True),
    Column("name", String(128), nullable=False, unique=True),
    # The per-user counter: push locks this row and numbers its operations from it.
    Column("last_seq", BigInteger, nullable=False, server_default="0"),
    Column("created_at", BigInteger, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column(
        "user_id", UserId, ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
    ),
    Column("secret_sha256", String(64), nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

operations = Table(
    "operations",
    metadata,
    Column("user_id", UserId, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("op_id", String(128), nullable=False),
    Column("type", String(16), nullable=False),
    Column("resource", String(16), nullable=False),
    Column("session_id", String(128), nullable=False),
    Column("message_id", String(128), nullable=True),
    Column("hlc", String(96), nullable=False),
    Column("data", JsonData, nullable=True),
    Column("timestamp", BigInteger, nullable=False),
    # sha256 of the operation less `retries`: a replayed id must carry the same content.
    Column("content_sha256", String(64), nullable=False),
    Column("received_at", BigInteger, nullable=False),
    UniqueConstraint("user_id", "op_id", name="uq_operations_user_op"),
)

"""A psycopg 3 session against `weir serve`, as a Python service would run one, then (when
SQLAlchemy is installed) the same through SQLAlchemy's ORM: its engine's start-up, create_all
and drop_all, a session with a nested transaction (a savepoint), and table reflection.

Run by `server/tests/postgres.rs` (test `psycopg_runs_a_session_against_the_server`) with the
server's port as the only argument; exits non-zero, saying what differed, on any surprise.
"""

import datetime
import decimal
import sys

import psycopg
from psycopg import errors


def main(port: int) -> None:
    conninfo = f"host=127.0.0.1 port={port} user=weir dbname=shop"
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE py_items (id BIGINT PRIMARY KEY, name VARCHAR, price DECIMAL(10,2), "
            "weight DOUBLE, sold BOOLEAN, made DATE, seen TIMESTAMP)"
        )
        rows = [
            (1, "bolt", decimal.Decimal("0.25"), 1.5, True, datetime.date(2026, 1, 31),
             datetime.datetime(2026, 1, 31, 12, 30, 5)),
            (2, "nut", decimal.Decimal("0.10"), 0.5, False, datetime.date(2025, 12, 1),
             datetime.datetime(2025, 12, 1, 0, 0, 0)),
            (3, None, None, None, None, None, None),
        ]
        with conn.cursor() as cur:
            # Parameters bound by the extended protocol, the statement prepared once.
            cur.executemany(
                "INSERT INTO py_items VALUES (%s, %s, %s, %s, %s, %s, %s)", rows
            )
        got = conn.execute("SELECT * FROM py_items ORDER BY id").fetchall()
        assert got == rows, f"text results: {got!r}"
        with conn.cursor(binary=True) as cur:
            got = cur.execute("SELECT * FROM py_items ORDER BY id").fetchall()
        assert got == rows, f"binary results: {got!r}"
        one = conn.execute(
            "SELECT name FROM py_items WHERE id = %s", (2,), prepare=True
        ).fetchone()
        assert one == ("nut",), one

        # Errors arrive as psycopg's exception for their SQLSTATE. (`x / 0` is NULL in weir,
        # as in SQLite; zero to a negative power is an error.)
        for sql, exception in [
            ("SELECT * FROM no_such_table", errors.UndefinedTable),
            ("INSERT INTO py_items (id, name) VALUES (1, 'again')", errors.UniqueViolation),
            ("SELECT POWER(0, -1) FROM py_items", errors.DivisionByZero),
            ("SELEC 1", errors.SyntaxError),
        ]:
            try:
                conn.execute(sql)
            except exception:
                continue
            raise AssertionError(f"{sql!r} succeeded; expected {exception.__name__}")

        # COPY through the protocol, both ways.
        with conn.cursor() as cur:
            with cur.copy("COPY py_items (id, name) FROM STDIN") as copy:
                for i in range(10, 20):
                    copy.write_row((i, f"copied{i}"))
            out = []
            with cur.copy("COPY (SELECT id, name FROM py_items WHERE id >= 10 ORDER BY id) TO STDOUT") as copy:
                for row in copy.rows():
                    out.append(row)
        assert out == [(str(i), f"copied{i}") for i in range(10, 20)], out

        server_version = conn.info.parameter_status("server_version")
        assert server_version and "weir" in server_version, server_version

    # Without autocommit psycopg opens a transaction for the first statement: weir commits
    # each statement as it runs, and COMMIT is accepted.
    with psycopg.connect(conninfo) as conn:
        conn.execute("INSERT INTO py_items (id, name) VALUES (100, 'in a block')")
        conn.commit()
        n = conn.execute("SELECT COUNT(*) FROM py_items").fetchone()[0]
        assert n == 14, n
    print("psycopg session ok")


def sqlalchemy_session(port: int) -> None:
    try:
        import sqlalchemy as sa
        from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
    except ImportError:
        print("sqlalchemy skipped: not installed")
        return

    class Base(DeclarativeBase):
        pass

    class Part(Base):
        __tablename__ = "sa_parts"
        # weir has no sequences: keys are given, not generated (SERIAL is refused).
        id: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
        name: Mapped[str] = mapped_column(sa.String)
        price = mapped_column(sa.Numeric(10, 2), nullable=True)
        __table_args__ = (sa.Index("sa_parts_name", "name"),)

    engine = sa.create_engine(f"postgresql+psycopg://weir@127.0.0.1:{port}/shop")
    Base.metadata.create_all(engine)
    Base.metadata.create_all(engine)  # the table exists now: has_table says so
    inspector = sa.inspect(engine)
    assert "sa_parts" in inspector.get_table_names(), inspector.get_table_names()
    assert inspector.has_table("sa_parts") and not inspector.has_table("no_such_table")
    # Reflection: the table as the database describes it, as SQLAlchemy reads PostgreSQL's.
    columns = [(c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns("sa_parts")]
    assert columns == [
        ("id", "BIGINT", False),
        ("name", "VARCHAR", False),
        ("price", "NUMERIC(10, 2)", True),
    ], columns
    assert inspector.get_pk_constraint("sa_parts")["constrained_columns"] == ["id"]
    indexes = [(i["name"], i["column_names"], i["unique"]) for i in inspector.get_indexes("sa_parts")]
    assert indexes == [("sa_parts_name", ["name"], False)], indexes
    assert inspector.get_foreign_keys("sa_parts") == []
    assert "public" in inspector.get_schema_names()
    reflected = sa.Table("sa_parts", sa.MetaData(), autoload_with=engine)
    assert [c.name for c in reflected.primary_key] == ["id"]
    assert isinstance(reflected.c.price.type, sa.Numeric) and reflected.c.price.type.scale == 2
    with Session(engine) as session:
        session.add_all([Part(id=1, name="bolt"), Part(id=2, name="nut")])
        session.commit()
        with session.begin_nested():
            session.add(Part(id=3, name="washer"))
        session.commit()
        names = session.scalars(sa.select(Part.name).where(Part.id >= 2).order_by(Part.id)).all()
        assert names == ["nut", "washer"], names
    Base.metadata.drop_all(engine)
    assert not sa.inspect(engine).has_table("sa_parts")
    engine.dispose()
    print("sqlalchemy session ok")


if __name__ == "__main__":
    main(int(sys.argv[1]))
    sqlalchemy_session(int(sys.argv[1]))

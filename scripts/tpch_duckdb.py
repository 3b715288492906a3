#!/usr/bin/env python3
"""DuckDB beside `weir bench tpch --parquet DIR`: the same 22 query texts over the same
Parquet files, as views over `read_parquet`, one JSON object per query on stdout
({"query", "rows", "ms"} or {"query", "error"}).

    pip install duckdb
    python3 scripts/tpch_duckdb.py --dir DIR/tpch-sf10 --sf 10 --threads 2 --memory 3GB

The query texts are weir's (cli/src/bench/tpch/queries/, Q11's FRACTION scaled to
0.0001 / SF as weir scales it; Q1's `interval '90' day (3)` written `interval '90' day`),
so both engines answer the same SQL.
"""
import argparse
import json
import pathlib
import time

import duckdb

TABLES = ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", required=True, help="the tpch-sf<SF> directory weir wrote")
    p.add_argument("--sf", type=float, required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--memory", default="3GB", help="DuckDB's memory_limit")
    p.add_argument("--query", type=int, help="only this query")
    args = p.parse_args()
    queries = pathlib.Path(__file__).resolve().parent.parent / "cli/src/bench/tpch/queries"
    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")
    con.execute(f"SET memory_limit = '{args.memory}'")
    con.execute("SET temp_directory = '/tmp/duckdb-spill'")
    for t in TABLES:
        con.execute(
            f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{args.dir}/{t}/*.parquet')"
        )
    for n in range(1, 23):
        if args.query and n != args.query:
            continue
        sql = (queries / f"q{n:02}.sql").read_text().strip().rstrip(";")
        # The specification's `interval '90' day (3)` (a precision) is not DuckDB's syntax.
        sql = sql.replace("day (3)", "day")
        if n == 11:
            sql = sql.replace(":fraction", repr(0.0001 / args.sf))
        start = time.perf_counter()
        try:
            rows = con.execute(sql).fetchall()
            ms = (time.perf_counter() - start) * 1e3
            print(json.dumps({"query": n, "rows": len(rows), "ms": round(ms, 1)}), flush=True)
        except Exception as e:  # a failed query is reported, the run goes on
            print(json.dumps({"query": n, "error": str(e)}), flush=True)


if __name__ == "__main__":
    main()

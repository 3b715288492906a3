#!/usr/bin/env python3
"""Fills the expected answers of a draft .slt file from SQLite (the reference of the window
function files: see each one's header).

Usage: python3 tests/slt/sqlite_answers.py FILE.slt ...   (rewrites each file in place)

Records:
  statement ok / statement error ... : executed on SQLite when `ok` (DDL and DML).
  query <types> [rowsort]            : run on SQLite; the answer is written below `----`.
A comment line `# sqlite: <sql>` right before a query runs that SQL on SQLite instead (for
constructs SQLite lacks, e.g. QUALIFY, written as the equivalent derived table).
A comment line `# by hand` right before a query keeps the answer written in the draft; a
comment line `# not on sqlite` right before a statement skips it on SQLite (a table only
queries answered by hand read).
Values are rendered as tests/integration/slt.rs renders weir's: NULL, integers plainly,
floats (type R) with 3 decimals, empty text as (empty).
"""
import sqlite3
import sys


def render(v, t):
    if v is None:
        return "NULL"
    if t == "R":
        return f"{float(v):.3f}"
    if t == "I":
        if isinstance(v, float):
            if v != int(v):
                raise ValueError(f"integer column got {v}")
            v = int(v)
        return str(v)
    if isinstance(v, float):
        return f"{v:.3f}"
    s = str(v)
    return "(empty)" if s == "" else s


def main(path):
    lines = open(path).read().split("\n")
    db = sqlite3.connect(":memory:")
    out = []
    i = 0
    pending_sqlite = None
    by_hand = False
    while i < len(lines):
        line = lines[i]
        if line.startswith("# sqlite: "):
            pending_sqlite = line[len("# sqlite: "):]
            out.append(line)
            i += 1
            continue
        if line.strip() == "# by hand" or line.startswith("# by hand:") or line.startswith("# not on sqlite"):
            by_hand = True
            out.append(line)
            i += 1
            continue
        if line.startswith("statement"):
            out.append(line)
            i += 1
            sql = []
            while i < len(lines) and lines[i].strip() != "":
                sql.append(lines[i])
                out.append(lines[i])
                i += 1
            if line.strip() == "statement ok" and not by_hand:
                db.execute("\n".join(sql))
            pending_sqlite = None
            by_hand = False
            continue
        if line.startswith("query"):
            parts = line.split()
            types = parts[1]
            rowsort = "rowsort" in parts
            out.append(line)
            i += 1
            sql = []
            while lines[i].strip() != "----":
                sql.append(lines[i])
                out.append(lines[i])
                i += 1
            out.append("----")
            i += 1
            drafted = []
            while i < len(lines) and lines[i].strip() != "":
                drafted.append(lines[i])
                i += 1
            if by_hand:
                out.extend(drafted)
            else:
                text = pending_sqlite or "\n".join(sql)
                try:
                    rows = db.execute(text).fetchall()
                except Exception as e:
                    raise SystemExit(f"{path}: {text}: {e}")
                rendered = []
                for r in rows:
                    if len(r) != len(types):
                        raise SystemExit(f"{text}: {len(r)} columns, types {types}")
                    try:
                        rendered.append([render(v, t) for v, t in zip(r, types)])
                    except ValueError as e:
                        raise SystemExit(f"{path}: {text}: {e}")
                if rowsort:
                    rendered.sort()
                out.extend(" ".join(r) for r in rendered)
            pending_sqlite = None
            by_hand = False
            continue
        out.append(line)
        i += 1
    open(path, "w").write("\n".join(out))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)

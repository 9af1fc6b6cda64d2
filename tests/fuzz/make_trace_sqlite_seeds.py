#!/usr/bin/env python3
"""Seeds for fuzz_trace_sqlite (tools/fuzz.sh): the Nsight Systems SQL fixtures of tests/data/trace
loaded into small databases (512-byte pages, so a seed stays under libFuzzer's -max_len), and
variants a hostile or broken export holds: times as text or NULL, rows that end before they start,
times past 2^62 ns, a view named like an export table, and an export of many processes.

    python3 tests/fuzz/make_trace_sqlite_seeds.py ROOT OUT_DIR
"""
import glob
import os
import sqlite3
import sys

VARIANTS = {
    "plain": "",
    "text_start": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = 1;",
    "null_start": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL WHERE rowid = 2;",
    "end_before_start": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE rowid = 1;",
    "huge_times": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 9223372036854775000, end = 9223372036854775807 "
                  "WHERE rowid = 1;",
    "real_device": "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1.5 WHERE rowid = 1;",
    "nvtx_text_times": "UPDATE NVTX_EVENTS SET end = 'x';",
    "runtime_null": "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = NULL, correlationId = 'c';",
    # A view where a table belongs: the reader must refuse it, not run it (a recursive CTE never ends).
    "recursive_view": "DROP TABLE StringIds; CREATE VIEW StringIds AS WITH RECURSIVE c(id, value) AS "
                      "(SELECT 1, 'x' UNION ALL SELECT id + 1, value FROM c) SELECT id, value FROM c;",
    "many_processes": "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, "
                      "globalPid, demangledName, shortName, gridX, blockX) SELECT 100 + x, 200 + x, x % 8, 1, 7, x, x * 16777216, 1, 1, 1, 1 "
                      "FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 200) SELECT x FROM n);",
}


def main():
    root, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for sql_path in sorted(glob.glob(os.path.join(root, "tests/data/trace/*.sql"))):
        # Without NOT NULL, so that a variant can hold the NULLs a broken export might.
        base = open(sql_path).read().replace(" NOT NULL", "")
        stem = os.path.splitext(os.path.basename(sql_path))[0]
        for name, extra in VARIANTS.items():
            path = os.path.join(out, f"{stem}_{name}.sqlite")
            if os.path.exists(path):
                os.remove(path)
            db = sqlite3.connect(path)
            db.execute("PRAGMA page_size = 512")
            try:
                db.executescript(base + "\n" + extra)
            except sqlite3.Error:
                db.close()
                os.remove(path)  # a variant the fixture has no table or column for
                continue
            db.commit()
            db.execute("VACUUM")
            db.close()


if __name__ == "__main__":
    main()

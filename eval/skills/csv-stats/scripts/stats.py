#!/usr/bin/env python3
"""Column statistics for CSV files, with the standard library only."""
import csv
import statistics
import sys

for path in sys.argv[1:]:
    try:
        rows = list(csv.DictReader(open(path, newline="")))
    except OSError as e:
        print(f"{path}: {e}")
        continue
    print(f"{path}: {len(rows)} rows")
    for col in rows[0].keys() if rows else []:
        vals = [r[col] for r in rows]
        missing = sum(1 for v in vals if v == "")
        try:
            nums = [float(v) for v in vals if v != ""]
            print(f"  {col:12} number  min {min(nums):g} max {max(nums):g} mean {statistics.mean(nums):.2f} missing {missing}")
        except ValueError:
            print(f"  {col:12} text    distinct {len(set(vals))} missing {missing}")

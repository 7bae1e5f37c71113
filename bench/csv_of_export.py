"""A CSV of an export's active courses (titulo, cargaHoraria), CSV-quoted: what a list from
another system looks like. Used by bench/portability.sh and bench/bulk.sh.

    python3 bench/csv_of_export.py <export.jsonl> <out.csv>
"""
import csv
import json
import sys

with open(sys.argv[1]) as source, open(sys.argv[2], "w", newline="") as target:
    out = csv.writer(target)
    out.writerow(["titulo", "cargaHoraria"])
    next(source)
    for line in source:
        course = json.loads(line)
        if not course["arquivado"]:
            out.writerow([course["titulo"], course["cargaHoraria"]])

"""A Spark run over a directory takes its files in name order (issue 52): Spark's file
source orders them by modification time, and files whose times tie (to the millisecond,
as a copy or an unpacked archive leaves them) came in any order, so a micro-batch could
hold events before those of the one before: rejected as late, and the results wrong."""

from __future__ import annotations

import os

from rsep.cli.main import main
from rsep.spark.pipeline import read_sink

QUERY = """PREFIX : <http://example.org/>
SELECT ?c (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :stocks [RANGE 10 STEP 10]
WHERE { WINDOW :w { ?e :price ?p . BIND(?e AS ?c) } } GROUP BY ?c
"""
HEAD = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"


def test_files_with_tied_mtimes_are_read_in_name_order(spark, tmp_path, capsys):
    # before: 4 files created in reverse name order, one mtime for all, 1 file a
    # micro-batch: Spark took them in listing order, and most events were rejected as late
    q = tmp_path / "q.rq"
    q.write_text(QUERY.replace("BIND(?e AS ?c)", "BIND(1 AS ?c)"))
    src = tmp_path / "in"
    src.mkdir()
    whole = []
    for i in reversed(range(4)):
        events = "".join(f":e{t} prov:generatedAtTime {t} . :e{t} {{ :s :price {t} }}\n"
                         for t in range(i * 10, i * 10 + 10))
        whole.append((i, events))
        part = src / f"part-{i}.trig"
        part.write_text(HEAD + events)
        os.utime(part, ns=(1_700_000_000_123_000_000, 1_700_000_000_123_000_000))
    ref_file = tmp_path / "whole.trig"
    ref_file.write_text(HEAD + "".join(e for _, e in sorted(whole)))
    assert main(["run", str(q), "--stream", f"http://example.org/stocks={ref_file}"]) == 0
    ref = capsys.readouterr().out.splitlines()
    assert len(ref) == 4
    out = tmp_path / "out"
    code = main(["run", str(q), "--stream", f"http://example.org/stocks={src}", "--engine",
                 "spark", "--max-files-per-batch", "1", "--sink-dir", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err[-2000:]
    assert captured.out.splitlines() == ref
    assert read_sink(out, "rejected") == []

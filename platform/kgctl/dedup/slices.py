"""Fuzzy name pairs kept per block slice (tables `bname` and `fpair` of an incremental state):
new names are placed in their blocks and only the slices they change are scored again.

A block of at most MAX_BLOCK names is one slice, labelled ''; a larger block is cut before every
name that `starts_slice`, and each slice is labelled by the name it starts with ('' before the
first cut): as in `cluster._blocks`, so the pairs are the ones a full run finds.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict

import duckdb
import numpy as np
from rapidfuzz import fuzz, process

from kgctl.dedup.cluster import MAX_BLOCK, block_keys, block_scores, starts_slice
from kgctl.dedup.tables import columns, insert, objects


def rescore(con: duckdb.DuckDBPyConnection, fresh: list[str], cutoff: float
            ) -> tuple[set[tuple], set[tuple]]:
    """Put fresh names in their blocks and re-score the slices they change; returns the pairs
    (name, name, score) that appeared in a slice, and those found in no slice any more."""
    if not fresh:
        return set(), set()
    rows = [(key, n, starts_slice(n)) for n in fresh for key in block_keys(n)]
    keys = sorted({r[0] for r in rows})
    con.register("new_blocks", {"v": objects(keys)})
    sizes = dict(con.execute("SELECT bkey, count(*) FROM bname WHERE bkey IN (SELECT v "
                                  "FROM new_blocks) GROUP BY bkey").fetchall())
    insert(con, "bname", columns([(*r, "") for r in rows], "bkey name cut label"))
    cuts_of = dict(con.execute("SELECT bkey, list(name ORDER BY name) FROM bname WHERE cut AND "
                               "bkey IN (SELECT v FROM new_blocks) GROUP BY bkey").fetchall())
    added = defaultdict(list)
    for key, n, _ in rows:
        added[key].append(n)
    # (block, label) of slices: replaced whole (old labels, new labels), or gaining names
    old, new, grown = set(), set(), set()
    labels = []  # (block, name, label) of fresh names in sliced blocks
    for key, names in added.items():
        names = set(names)
        before, after = sizes.get(key, 0), sizes.get(key, 0) + len(names)
        if after <= MAX_BLOCK:
            grown.add((key, ""))
        elif before <= MAX_BLOCK:  # the block is sliced from now on
            con.execute("""UPDATE bname SET label = s.label FROM (SELECT name,
                coalesce(max(CASE WHEN cut THEN name END) OVER (ORDER BY name ROWS
                UNBOUNDED PRECEDING), '') AS label FROM bname WHERE bkey = ?) s
                WHERE bkey = ? AND bname.name = s.name""", [key, key])
            old.add((key, ""))
            new.update((key, lab) for (lab,) in con.execute(
                "SELECT DISTINCT label FROM bname WHERE bkey = ?", [key]).fetchall())
        else:
            cuts = cuts_of.get(key, [])
            olds = [c for c in cuts if c not in names]
            for n in sorted(names):
                was = olds[bisect_right(olds, n) - 1] if olds and olds[0] <= n else ""
                now = cuts[bisect_right(cuts, n) - 1] if cuts and cuts[0] <= n else ""
                labels.append((key, n, now))
                if now == n:  # a new cut: the rest of its slice moves to it
                    old.add((key, was))
                    new.update(((key, was), (key, n)))
                    con.execute("UPDATE bname SET label = ? WHERE bkey = ? AND "
                                     "name >= ? AND label < ?", [n, key, n, n])
                else:
                    grown.add((key, now))
    if labels:
        con.register("labels", columns(labels, "bkey name label"))
        con.execute("UPDATE bname SET label = l.label FROM labels l WHERE "
                         "bname.bkey = l.bkey AND bname.name = l.name")
        con.unregister("labels")
    con.register("slices", columns(sorted(old), "bkey label"))
    gone = set(con.execute("SELECT a, b, score FROM fpair JOIN slices USING (bkey, "
                                "label)").fetchall())
    con.execute("DELETE FROM fpair USING slices s WHERE (fpair.bkey, fpair.label) = "
                     "(s.bkey, s.label)")
    found = []
    for key, label, names in _names(con, new):
        found += [(key, label, names[r], names[c], score)
                  for r, c, score in block_scores(names, cutoff)]
    news = set(fresh)
    for key, label, names in _names(con, grown - new):
        queries = [n for n in names if n in news]
        scores = process.cdist(queries, names, scorer=fuzz.ratio, dtype=np.uint8,
                               score_cutoff=cutoff)
        rows, cols = scores.nonzero()
        found += sorted({(key, label, *sorted((queries[r], names[c])), score)
                         for r, c, score in zip(rows.tolist(), cols.tolist(),
                                                scores[rows, cols].tolist(), strict=True)
                         if queries[r] != names[c]})
    if found:
        insert(con, "fpair", columns(found, "bkey label a b score"))
    found = {(a, b, s) for *_, a, b, s in found}
    con.register("gone", columns(sorted(gone - found), "a b score"))
    kept = set(con.execute("SELECT DISTINCT a, b, score FROM fpair JOIN gone USING (a, b, score)"
                           ).fetchall())  # still in a slice of another block
    con.unregister("gone")
    return found - gone, gone - found - kept


def _names(con: duckdb.DuckDBPyConnection, slices: set[tuple[str, str]]
           ) -> list[tuple[str, str, list[str]]]:
    """The names of each slice of more than one, sorted."""
    con.register("slices", columns(sorted(slices), "bkey label"))
    return con.execute("SELECT bkey, label, list(name ORDER BY name) FROM bname JOIN "
                            "slices USING (bkey, label) GROUP BY bkey, label HAVING "
                            "count(*) > 1").fetchall()


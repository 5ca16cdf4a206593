"""Out-of-core clustering on DuckDB: the clusters and decisions of `cluster.cluster` from tables
of an on-disk database (DuckDB keeps to its `memory_limit` and spills to a temporary directory).

Evidence is found in SQL (and fuzzy names block by block), then split into independent parts:
the connected components of the edges that can merge (reviews, merge keys, exact names, fuzzy
names at the merge threshold with the same locants), found by min-label propagation. Each part
is replayed through the same `Resolver` as the in-memory engine, in the same order, so conflict
keys and review verdicts act exactly as they do there. A fuzzy pair between two parts never
merges; it goes to review unless the two sides' conflict keys clash at its turn, which is read
from each part's replay (a probe) and compared afterwards. Memory: the largest part, not all.
With a Dask client the fuzzy blocks and the parts are computed on its workers
(`kgctl.dedup.groups`); the relational steps stay in this process's database.

>>> from kgctl.dedup.cluster import cluster
>>> ms = [Mention(iri=f"p{i}#x", paper=f"p{i}", labels=(name,), keys=keys) for i, (name, keys)
...       in enumerate([("copper nitrate", (("f", "A"),)), ("copper nitrate", (("f", "B"),)),
...                     ("Copper  nitrate", ()), ("copper nitrates", ())])]
>>> t = Thresholds(conflict_keys=("f",))
>>> with OutOfCore() as engine:
...     engine.add(ms)
...     engine.run(t)
...     same = engine.result() == cluster(ms, t)
>>> same
True
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import groupby, islice
from operator import itemgetter
from pathlib import Path

import click
import duckdb
import numpy as np

from kgctl.dedup import groups
from kgctl.dedup.cluster import (
    MAX_BLOCK,
    Cluster,
    Mention,
    Pair,
    Result,
    Thresholds,
    block_keys,
    clash,
    starts_slice,
)
from kgctl.dedup.groups import mapped, replay_part, score_blocks, tasks
from kgctl.dedup.keys import is_fragment, name_key
from kgctl.dedup.tables import BATCH, Outputs, columns, insert, objects, stream

ORDER = "phase, s1, s2, n1, n2, n3"  # the order the in-memory engine applies evidence in
STEP = ("part, side, a, b, score, method, lname, rname, rep_a, [(k.kind, k.value) for k in "
        f"keys_a], rep_b, [(k.kind, k.value) for k in keys_b], {ORDER}")  # a row of `staged`


class OutOfCore:
    """A DuckDB database in `workdir` (default: a temporary directory removed on close); with a
    Dask `client`, fuzzy blocks and parts are computed on its workers (`kgctl.dedup.groups`)."""

    def __init__(self, workdir: Path | None = None, *, memory_limit: str = "1GB",
                 threads: int | None = None, client=None):
        self.client = client
        self._own = workdir is None
        self.workdir = Path(tempfile.mkdtemp(prefix="kgctl-dedup-")) if workdir is None else workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.con = duckdb.connect(str(self.workdir / "dedup.duckdb"))
        self.con.execute(f"SET memory_limit = '{memory_size(None, None, memory_limit)}'")
        self.con.execute("SET temp_directory = ?", [str(self.workdir / "spill")])
        self.con.execute("SET preserve_insertion_order = false")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        self.con.create_function("name_of", _name_of, ["VARCHAR"], "VARCHAR", type="native",
                                 null_handling="special")
        self.con.create_function("starts_slice", starts_slice, ["VARCHAR"], "BOOLEAN")
        self.con.create_function("blocks_of", lambda name: list(block_keys(name)), ["VARCHAR"],
                                 "VARCHAR[]", type="native")
        self.con.execute("CREATE TABLE IF NOT EXISTS mention (mid BIGINT, iri VARCHAR, "
                         "paper VARCHAR, labels VARCHAR[], "
                         "keys STRUCT(kind VARCHAR, value VARCHAR)[])")

    def __enter__(self) -> OutOfCore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()
        if self._own:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def add(self, mentions: Iterable[Mention]) -> None:
        """Append mentions, streamed in batches."""
        stream = iter(mentions)
        while batch := list(islice(stream, BATCH)):
            self._append_mentions(batch)

    def _append_mentions(self, batch: Sequence[Mention]) -> None:
        start = self.con.execute("SELECT count(*) FROM mention").fetchall()[0][0]
        rows = {"mid": np.arange(start, start + len(batch), dtype=np.int64),
                "iri": objects(m.iri for m in batch), "paper": objects(m.paper for m in batch),
                "labels": objects(list(m.labels) for m in batch),
                "keys": objects([{"kind": k, "value": v} for k, v in m.keys] for m in batch)}
        insert(self.con, "mention", rows)

    def add_parquet(self, pattern: str) -> None:
        """Append mentions from Parquet files with the columns iri, paper, labels (list of
        text) and keys (list of {kind, value})."""
        self.con.execute(
            "INSERT INTO mention SELECT (SELECT count(*) FROM mention) + row_number() OVER () - 1,"
            " iri, paper, labels, keys FROM read_parquet(?)", [pattern])

    def run(self, thresholds: Thresholds, *, accept: Iterable[tuple[str, str]] = (),
            reject: Iterable[tuple[str, str]] = (),
            progress: Callable[[str], None] = lambda _: None) -> None:
        """Cluster every mention added so far (a re-run starts from the mentions again)."""
        self.thresholds = t = thresholds
        reject = list(reject)
        for phase, step in (("profiles", lambda: self._profiles(t)),
                            ("evidence", lambda: self._evidence(t, sorted(accept))),
                            ("fuzzy", lambda: self._fuzzy(t)),
                            ("parts", self._components),
                            ("replay", lambda: self._replay(t, self._rejected(reject))),
                            ("across", lambda: self._cross_pairs(t, self._rejected(reject)))):
            progress(phase)
            step()
        progress("done")

    def _profiles(self, t: Thresholds) -> None:
        sql = self.con.execute
        paper = "m.paper || chr(31) || " if t.name_scope == "paper" else ""
        sql("CREATE OR REPLACE TABLE label_name AS SELECT label, name_of(label) AS name "
            "FROM (SELECT DISTINCT unnest(labels) AS label FROM mention)")
        sql(f"""CREATE OR REPLACE TABLE msig AS
            WITH n AS (SELECT mid, list_sort(list(DISTINCT {paper}ln.name)) AS names
                       FROM (SELECT mid, paper, unnest(labels) AS label FROM mention) m
                       JOIN label_name ln USING (label) WHERE ln.name IS NOT NULL GROUP BY mid)
            SELECT m.mid, m.iri, coalesce(n.names, []) AS names,
                   list_sort(list_distinct(m.keys)) AS keys
            FROM mention m LEFT JOIN n USING (mid)""")
        sql("""CREATE OR REPLACE TABLE mprof AS
            SELECT mid, iri, dense_rank() OVER (ORDER BY rep) - 1 AS pid, names, keys
            FROM (SELECT *, min(iri) OVER (PARTITION BY names, keys) AS rep FROM msig)""")
        sql("""CREATE OR REPLACE TABLE profile AS SELECT pid, min(iri) AS rep,
            any_value(names) AS names, any_value(keys) AS keys FROM mprof GROUP BY pid""")
        sql("DROP TABLE msig")

    def _evidence(self, t: Thresholds, accept: list[tuple[str, str]]) -> None:
        """Every edge with its sort key: phase 0 reviews, 1 merge keys, 2 exact names, 3 fuzzy
        names (`merges`: whether it can merge at all)."""
        sql = self.con.execute
        sql("CREATE OR REPLACE TABLE edge (a BIGINT, b BIGINT, score DOUBLE, method VARCHAR, "
            "lname VARCHAR, rname VARCHAR, merges BOOLEAN, phase INT, s1 VARCHAR, s2 VARCHAR, "
            "n1 BIGINT, n2 BIGINT, n3 BIGINT)")
        if accept:
            sql("CREATE OR REPLACE TEMP TABLE accept_in (seq BIGINT, a VARCHAR, b VARCHAR)")
            insert(self.con, "accept_in", {"seq": np.arange(len(accept), dtype=np.int64),
                                           "a": objects(a for a, _ in accept),
                                           "b": objects(b for _, b in accept)})
            sql("""INSERT INTO edge SELECT pa.pid, pb.pid, 100, 'review', '', '', true, 0, '', '',
                   r.seq, 0, 0 FROM accept_in r JOIN mprof pa ON pa.iri = r.a
                   JOIN mprof pb ON pb.iri = r.b""")
        sql("""INSERT INTO edge SELECT a, pid, 100, 'key:' || kind, value, '', true, 1, kind, value,
               pid, 0, 0 FROM (SELECT *, min(pid) OVER (PARTITION BY kind, value) AS a FROM
               (SELECT DISTINCT pid, k.kind, k.value FROM
                (SELECT pid, unnest(keys) AS k FROM profile) WHERE list_contains(?, k.kind)))
               WHERE pid <> a""", [list(t.merge_keys)])
        sql("""CREATE OR REPLACE TABLE pname AS SELECT DISTINCT pid, unnest(names) AS name
               FROM profile""")
        sql("""INSERT INTO edge SELECT a, pid, 100, 'exact-name', name, '', true, 2, name, '',
               pid, 0, 0 FROM (SELECT *, min(pid) OVER (PARTITION BY name) AS a FROM pname)
               WHERE pid <> a""")

    def _fuzzy(self, t: Thresholds) -> None:
        """Fuzzy names scored block by block (names link across papers only when global)."""
        if t.name_scope != "global":
            return
        sql = self.con.execute
        sql("""CREATE OR REPLACE TABLE dname AS SELECT row_number() OVER (ORDER BY name) - 1
               AS nid, name, min(pid) AS pid FROM pname GROUP BY name""")
        sql("""CREATE OR REPLACE TABLE fpair (i BIGINT, j BIGINT, score DOUBLE,
               merges BOOLEAN)""")
        blocks = stream(self.con, f"""SELECT list(nid ORDER BY nid),
            list(name ORDER BY nid) FROM (SELECT *, CASE WHEN count(*) OVER (PARTITION BY bkey)
            > {MAX_BLOCK} THEN sum(cut::INT) OVER (PARTITION BY bkey ORDER BY nid ROWS
            UNBOUNDED PRECEDING) ELSE 0 END AS slice FROM (SELECT nid, name, starts_slice(name)
            AS cut, unnest(blocks_of(name)) AS bkey FROM dname)) GROUP BY bkey, slice
            HAVING count(*) > 1""", size=10)  # a row is a block or a slice of one
        out: list[tuple[int, int, int, bool]] = []
        for pairs in mapped(score_blocks, tasks(blocks, weight=lambda b: len(b[0])), t,
                            client=self.client):
            out += pairs
            if len(out) >= BATCH:
                insert(self.con, "fpair", columns(out, "i j score merges"))
                out = []
        if out:
            insert(self.con, "fpair", columns(out, "i j score merges"))
        sql("""INSERT INTO edge SELECT di.pid, dj.pid, f.score, 'fuzzy', di.name, dj.name,
               f.merges, 3, '', '', -f.score, f.i, f.j FROM (SELECT DISTINCT * FROM fpair) f
               JOIN dname di ON di.nid = f.i JOIN dname dj ON dj.nid = f.j""")
        sql("DROP TABLE fpair")

    def _components(self) -> None:
        """Connected components of the edges that can merge: each node takes the smallest label
        among its neighbours, then its label's label (pointer jumping), until nothing changes."""
        sql = self.con.execute
        sql("""CREATE OR REPLACE TABLE link AS SELECT DISTINCT a, b FROM (SELECT a, b FROM edge
               WHERE merges UNION ALL SELECT b, a FROM edge WHERE merges) WHERE a <> b""")
        sql("CREATE OR REPLACE TABLE comp AS SELECT DISTINCT a AS node, a AS c FROM link")
        self.rounds = 0
        while True:
            self.rounds += 1
            sql("""CREATE OR REPLACE TABLE hooked AS SELECT l.a AS node,
                   least(min(n.c), any_value(o.c)) AS c FROM link l JOIN comp n ON n.node = l.b
                   JOIN comp o ON o.node = l.a GROUP BY l.a""")
            sql("""CREATE OR REPLACE TABLE jumped AS SELECT h.node, least(h.c, p.c) AS c
                   FROM hooked h JOIN hooked p ON p.node = h.c""")
            changed = sql("SELECT count(*) FROM jumped j JOIN comp c USING (node) "
                          "WHERE j.c <> c.c").fetchall()[0][0]
            sql("DROP TABLE comp")
            sql("ALTER TABLE jumped RENAME TO comp")
            if not changed:
                break
        sql("DROP TABLE hooked")
        sql("DROP TABLE link")

    def _replay(self, t: Thresholds, rejected: set[frozenset]) -> None:
        """Each part through a fresh `Resolver` (`rejected`: pairs of profiles). With a Dask
        client, the parts of fewer steps than a task go to its workers as Parquet (DuckDB writes
        and reads the rows, not Python); the others are replayed here, streamed."""
        sql = self.con.execute
        out = Outputs(self.con, create=True)
        # an edge inside one part is replayed; a fuzzy pair across parts is a probe on each side
        sql("""CREATE OR REPLACE TABLE placed AS SELECT e.*, coalesce(ca.c, e.a) AS ca,
            coalesce(cb.c, e.b) AS cb FROM edge e LEFT JOIN comp ca ON ca.node = e.a
            LEFT JOIN comp cb ON cb.node = e.b""")
        sql("""CREATE OR REPLACE VIEW steps AS
            SELECT ca AS part, 0 AS side, * EXCLUDE (ca, cb) FROM placed WHERE ca = cb
            UNION ALL SELECT ca, 1, * EXCLUDE (ca, cb) FROM placed WHERE ca <> cb
            UNION ALL SELECT cb, 2, * EXCLUDE (ca, cb) FROM placed WHERE ca <> cb""")
        size = groups.TASK_ROWS
        sql(f"""CREATE OR REPLACE TABLE ptask AS SELECT part, CASE WHEN ? AND n < {size}
            THEN (sum(n) OVER (ORDER BY part) - n) // {size} ELSE -1 END AS task
            FROM (SELECT part, count(*) AS n FROM steps GROUP BY part)""", [bool(self.client)])
        sql("""CREATE OR REPLACE VIEW staged AS SELECT s.part, s.side, s.a, s.b, s.score,
            s.method, s.lname, s.rname, pa.rep AS rep_a, pa.keys AS keys_a, pb.rep AS rep_b,
            pb.keys AS keys_b, s.phase, s.s1, s.s2, s.n1, s.n2, s.n3, pt.task FROM steps s
            JOIN ptask pt USING (part) JOIN profile pa ON pa.pid = s.a
            JOIN profile pb ON pb.pid = s.b""")
        if self.client is not None:
            files = self.workdir / "tasks"
            sql("COPY (SELECT * FROM staged WHERE task >= 0) TO ? (FORMAT parquet, "
                "PARTITION_BY (task), OVERWRITE)", [str(files)])
            work = ([f.read_bytes() for f in sorted(d.glob("*.parquet"))]
                    for d in sorted(files.glob("task=*")))
            for results in mapped(replay_files, work, t, rejected, client=self.client):
                for table, data in results.items():
                    path = files / f"{table}.parquet"
                    path.write_bytes(data)
                    sql(f"INSERT INTO {table} SELECT * FROM read_parquet(?)", [str(path)])
            shutil.rmtree(files, ignore_errors=True)
        rows = stream(self.con, f"SELECT {STEP} FROM staged WHERE task < 0 ORDER BY part, "
                                f"{ORDER}, side")
        for _, part in groupby(rows, key=itemgetter(0)):
            out.add(replay_part(part, t, rejected))
        out.flush()
        for view in ("staged", "steps"):
            sql(f"DROP VIEW {view}")
        sql("DROP TABLE placed")
        sql("DROP TABLE ptask")

    def _rejected(self, reject: list[tuple[str, str]]) -> set[frozenset]:
        iris = sorted({iri for pair in reject for iri in pair})
        pid = dict(self.con.execute("SELECT iri, pid FROM mprof WHERE list_contains(?, iri)",
                                    [iris]).fetchall()) if iris else {}
        return {frozenset((pid.get(a), pid.get(b))) for a, b in reject}

    def _cross_pairs(self, t: Thresholds, rejected: set[frozenset]) -> None:
        """A fuzzy pair across parts goes to review unless rejected or its sides clash."""
        out = Outputs(self.con)
        for a, b, score, left, right, rep_a, rep_b, keys_a, keys_b, *order in stream(
                self.con, f"""SELECT e.a, e.b, e.score, e.lname, e.rname, pa.rep, pb.rep, l.keys,
            r.keys, {ORDER} FROM edge e JOIN probe l ON l.i = e.n2 AND l.j = e.n3 AND l.side = 1
            JOIN probe r ON r.i = e.n2 AND r.j = e.n3 AND r.side = 2
            JOIN profile pa ON pa.pid = e.a JOIN profile pb ON pb.pid = e.b WHERE e.phase = 3"""):
            ka = {k: set(v) for k, v in json.loads(keys_a).items()}
            kb = {k: set(v) for k, v in json.loads(keys_b).items()}
            if frozenset((a, b)) not in rejected and not clash(ka, kb, t.conflict_keys):
                out.add([("decision", (rep_a, rep_b, score, "fuzzy", f"{left!r} ~ {right!r}",
                                       "grey", *order))])
        out.flush()

    def _pairs(self, kind: str) -> list[Pair]:
        rows = self.con.execute(f"SELECT a, b, score, method, evidence FROM decision "
                                f"WHERE kind = ? ORDER BY {ORDER}", [kind]).fetchall()
        return [Pair(a=a, b=b, score=s, method=m, evidence=e, accepted=kind == "decision")
                for a, b, s, m, e in rows]

    def _roots(self) -> None:
        self.con.execute("""CREATE OR REPLACE TABLE proot AS SELECT p.pid,
            coalesce(r.root, p.pid) AS root FROM profile p LEFT JOIN root r USING (pid)""")

    def links(self) -> Iterator[tuple[int, str]]:
        """(cluster number, member IRI) in the clusters' order, streamed: memory stays bounded
        however large a cluster is."""
        self._roots()
        return stream(self.con, "SELECT pr.root, mp.iri FROM mprof mp JOIN proot pr USING (pid) "
                               "ORDER BY pr.root, mp.iri")

    def clusters(self) -> Iterator[Cluster]:
        """The clusters in the in-memory engine's order, from sorted rows (a sort spills)."""
        self._roots()
        members = stream(self.con, """SELECT pr.root, mp.iri, me.labels FROM mprof mp
            JOIN mention me USING (mid) JOIN proot pr USING (pid) ORDER BY pr.root, mp.iri""")
        keys = stream(self.con, """SELECT pr.root, k.kind, min(k.value) FROM proot pr JOIN
            (SELECT pid, unnest(keys) AS k FROM profile) USING (pid)
            WHERE list_contains(?, k.kind) GROUP BY pr.root, k.kind ORDER BY pr.root""",
                     [list(self.thresholds.conflict_keys)])
        key = next(keys, None)
        for root, rows in groupby(members, key=itemgetter(0)):
            iris, labels, values = [], set(), {}
            for _, iri, labs in rows:
                iris.append(iri)
                labels.update(labs)
            while key is not None and key[0] <= root:
                if key[0] == root:
                    values[key[1]] = key[2]
                key = next(keys, None)
            yield Cluster(members=iris, labels=sorted(labels), keys=values)

    def result(self) -> Result:
        """Everything as the in-memory engine returns it (for corpora that fit in memory)."""
        return Result(clusters=list(self.clusters()), decisions=self._pairs("decision"),
                      grey=self._pairs("grey"), refused=self._pairs("refused"))


def replay_files(files: list[bytes], t: Thresholds,
                 rejected: set[frozenset]) -> dict[str, bytes]:
    """A worker's task: the parts in Parquet `files` (rows of `staged`) replayed; the decision,
    root and probe rows as Parquet."""
    with tempfile.TemporaryDirectory(prefix="kgctl-dedup-") as tmp, duckdb.connect() as con:
        paths = [Path(tmp, f"steps-{n}.parquet") for n in range(len(files))]
        for path, data in zip(paths, files, strict=True):
            path.write_bytes(data)
        out = Outputs(con, create=True)
        rows = stream(con, f"SELECT {STEP} FROM read_parquet(?) ORDER BY part, {ORDER}, side",
                      [[str(p) for p in paths]])
        for _, part in groupby(rows, key=itemgetter(0)):
            out.add(replay_part(part, t, rejected))
        out.flush()
        for table in Outputs.TABLES:
            con.execute(f"COPY {table} TO ? (FORMAT parquet)", [f"{tmp}/{table}.parquet"])
        return {table: Path(tmp, f"{table}.parquet").read_bytes() for table in Outputs.TABLES}


def _name_of(label: str | None) -> str | None:
    """The name key a label is matched on, or None (a fragment or nothing left)."""
    return None if label is None or is_fragment(label) else (name_key(label) or None)


def memory_size(_ctx: object, _param: object, text: str) -> str:
    """A memory size such as 2GB or 500MiB (checked: it is written into a SET statement); also
    the option callback of `kgctl dedup --memory-limit`."""
    if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", text.strip(), re.IGNORECASE):
        raise click.BadParameter(f"not a memory size: {text!r} (e.g. 2GB)")
    return text.strip()

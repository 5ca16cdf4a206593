"""Incremental clustering: the mentions, names, fuzzy pairs and clusters of earlier runs kept in
a DuckDB database, so adding mentions costs time for them and the parts they touch, not for the
corpus.

A *part* is a connected component of the evidence that can merge (a shared profile, merge key or
name, a review acceptance, fuzzy names at the merge threshold with the same locants). Parts never
influence each other's clusters, so new evidence re-clusters only the parts it touches, with the
in-memory engine over those parts' profiles: same evidence, same order, hence the same clusters
and decisions as clustering everything again. A new mention of a kept profile is no evidence
unless its IRI comes first (profiles are ordered by their first IRI) or a review names it. Fuzzy
pairs are kept per block slice; a new name re-scores only the slices it changes
(`kgctl.dedup.slices`). A fuzzy pair across parts never merges: it goes to review unless the
two sides' conflict keys clash at its turn, so each side's keys then (a *probe*, keyed by the
pair's two names) are kept when its part is clustered, and a pair from a touched part to an
untouched one is decided with the untouched side's kept probe. Removing mentions is not
incremental: build a new state.

>>> from kgctl.dedup.cluster import cluster
>>> ms = [Mention(iri=f"p{i}#x", paper=f"p{i}", labels=(name,), keys=keys) for i, (name, keys)
...       in enumerate([("copper nitrate", (("f", "A"),)), ("zinc oxide", ()),
...                     ("Copper  nitrate", (("f", "B"),)), ("copper nitrates", ())])]
>>> t = Thresholds(conflict_keys=("f",))
>>> with State(None, t) as state:
...     first = state.add(ms[:2])
...     then = state.add(ms[2:])
...     same = state.result().clusters == cluster(ms, t).clusters
>>> same, first, then
(True, 2, 3)
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import duckdb

from kgctl.dedup.cluster import (
    Cluster,
    Mention,
    Pair,
    Result,
    Thresholds,
    clash,
    cluster,
    profile_names,
)
from kgctl.dedup.keys import locant_signature
from kgctl.dedup.slices import rescore
from kgctl.dedup.tables import columns, insert, objects

LAYOUT = 2  # of the tables: a state kept in another layout (before probes: none) is refused
TABLES = """
CREATE TABLE IF NOT EXISTS setting (v VARCHAR);
CREATE TABLE IF NOT EXISTS seen (paper VARCHAR);
CREATE TABLE IF NOT EXISTS mention (iri VARCHAR, sig VARCHAR, paper VARCHAR);
CREATE TABLE IF NOT EXISTS profile (sig VARCHAR, rep VARCHAR, paper VARCHAR, labels VARCHAR[],
    part VARCHAR);
CREATE TABLE IF NOT EXISTS mname (sig VARCHAR, name VARCHAR);
CREATE TABLE IF NOT EXISTS mkey (sig VARCHAR, kv VARCHAR);
CREATE TABLE IF NOT EXISTS bname (bkey VARCHAR, name VARCHAR, cut BOOLEAN, label VARCHAR);
CREATE TABLE IF NOT EXISTS fpair (bkey VARCHAR, label VARCHAR, a VARCHAR, b VARCHAR,
    score DOUBLE);
CREATE TABLE IF NOT EXISTS member (part VARCHAR, sig VARCHAR, cluster VARCHAR);
CREATE TABLE IF NOT EXISTS probe (a VARCHAR, b VARCHAR, name VARCHAR, part VARCHAR,
    sig VARCHAR, rep VARCHAR, keys VARCHAR);
CREATE TABLE IF NOT EXISTS outcome (pa VARCHAR, pb VARCHAR, kind VARCHAR, a VARCHAR, b VARCHAR,
    score DOUBLE, method VARCHAR, evidence VARCHAR);
"""


class State:
    """Clusters kept in the DuckDB database at `path` (None: in memory) for one set of
    thresholds and reviews."""

    def __init__(self, path: Path | None, thresholds: Thresholds, *,
                 accept: Iterable[tuple[str, str]] = (), reject: Iterable[tuple[str, str]] = ()):
        self.t = thresholds
        self.accept, self.reject = sorted(accept), sorted(reject)
        self.reviewed = {i for pair in self.accept + self.reject for i in pair}
        self.con = duckdb.connect(":memory:" if path is None else str(path))
        self.con.execute(TABLES)
        setting = json.dumps([thresholds.model_dump(mode="json"), self.accept, self.reject, LAYOUT])
        kept = self.con.execute("SELECT v FROM setting").fetchall()
        if not kept:
            self.con.execute("INSERT INTO setting VALUES (?)", [setting])
        elif kept[0][0] != json.dumps(json.loads(setting)):
            self.con.close()
            raise ValueError(f"{path}: kept for other thresholds or reviews, or by another "
                             f"version: build a new state")

    def __enter__(self) -> State:
        return self

    def __exit__(self, *_: object) -> None:
        self.con.close()

    def papers(self) -> set[str]:
        """The papers whose mentions were added."""
        return {p for (p,) in self.con.execute("SELECT paper FROM seen").fetchall()}

    def add(self, mentions: Sequence[Mention], *, papers: Iterable[str] = ()) -> int:
        """Cluster new mentions (IRIs not seen before), those of `papers` if given, with the
        parts they touch, in one transaction; returns the number of profiles (mentions with the
        same names and keys) re-clustered."""
        self.con.execute("BEGIN")
        try:
            insert(self.con, "seen", {"paper": objects(sorted(papers))})
            redone = self._add(mentions)
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")
        return redone

    def _add(self, mentions: Sequence[Mention]) -> int:
        groups: dict[str, list[Mention]] = defaultdict(list)
        names: dict[str, frozenset[str]] = {}
        for m in mentions:
            found = profile_names(m.labels, m.paper, self.t.name_scope)
            sig = _sig(found, m.keys)
            groups[sig].append(m)
            names[sig] = found
        fresh = sorted(set().union(*names.values()) - self._known(names))
        news = self._append(groups, names)
        found, gone = (rescore(self.con, fresh, self.t.review)
                       if self.t.name_scope == "global" else (set(), set()))
        # a pair that merges is evidence; one that does not only yields its review pair
        self._forget({p for p in gone if not self._merges(*p)})
        changed = {n for a, b, s in found | {p for p in gone if self._merges(*p)} for n in (a, b)}
        touched = self._touched({sig: names[sig] for sig in news}, changed)
        subset, was = self._mentions(touched, [r for r in news.values() if r[4] is None])
        if subset:
            self._recluster(subset, touched, was)
        return len(subset)

    def _append(self, groups: dict[str, list[Mention]], names: dict[str, frozenset[str]]
                ) -> dict[str, tuple]:
        """New mentions; an earlier profile takes their labels (and their IRI if smaller).
        Returns the rows (sig, rep, paper, labels, part) of the profiles that are new evidence:
        new ones (written once clustered), and earlier ones that take an IRI (which orders the
        profiles) or gain a mention named in a review. Another earlier profile only gains
        members: its part's clusters and decisions stay."""
        self._values("sigs", groups)
        earlier = {row[0]: row for row in self.con.execute(
            "SELECT sig, rep, paper, labels, part FROM profile WHERE sig IN (SELECT v FROM sigs)"
        ).fetchall()}
        news, rows = {}, []
        for sig, ms in groups.items():
            first = min(ms, key=lambda m: m.iri)
            _, rep, paper, labels, part = earlier.get(sig, (sig, first.iri, first.paper, [], None))
            row = (sig, *min((rep, paper), (first.iri, first.paper)),
                   sorted(set(labels).union(*(m.labels for m in ms))), part)
            if sig not in earlier or first.iri < rep or any(m.iri in self.reviewed for m in ms):
                news[sig] = row
            if sig in earlier and row != earlier[sig]:
                rows.append(row)
        if rows:
            self._values("sigs", [r[0] for r in rows])
            self.con.execute("DELETE FROM profile WHERE sig IN (SELECT v FROM sigs)")
            insert(self.con, "profile", columns(rows, "sig rep paper labels part"))
        insert(self.con, "mention", columns([(m.iri, sig, m.paper) for sig, ms in groups.items()
                                             for m in ms], "iri sig paper"))
        new = [sig for sig in groups if sig not in earlier]
        rows = [(sig, n) for sig in new for n in sorted(names[sig])]
        if rows:
            insert(self.con, "mname", columns(rows, "sig name"))
        rows = [(sig, json.dumps(kv)) for sig in new for kv in json.loads(sig)[1]
                if kv[0] in self.t.merge_keys]
        if rows:
            insert(self.con, "mkey", columns(rows, "sig kv"))
        return news

    def _merges(self, a: str, b: str, score: float) -> bool:
        return score >= self.t.merge and locant_signature(a) == locant_signature(b)

    def _forget(self, gone: set[tuple[str, str, float]]) -> None:
        """Fuzzy pairs found in no slice any more that could not merge: they never changed a
        cluster, so only their review pair and probes go."""
        if gone:
            self.con.register("gone", columns(sorted(gone), "a b score"))
            self.con.execute("DELETE FROM probe USING gone WHERE (probe.a, probe.b) = "
                             "(gone.a, gone.b)")
            self._values("evidence", {f"{a!r} ~ {b!r}" for a, b, _ in gone})
            self.con.execute("DELETE FROM outcome WHERE method = 'fuzzy' AND kind = 'grey' AND "
                             "evidence IN (SELECT v FROM evidence)")
            self.con.unregister("gone")

    def _known(self, names: dict[str, frozenset[str]]) -> set[str]:
        """Names of the new mentions that earlier mentions have too."""
        self._values("new_names", set().union(*names.values()))
        return {n for (n,) in self.con.execute(
            "SELECT DISTINCT name FROM mname WHERE name IN (SELECT v FROM new_names)").fetchall()}

    def _touched(self, news: dict[str, frozenset[str]], changed: set[str]) -> set[str]:
        """Earlier parts sharing a profile, name, merge key or changed fuzzy pair with the new
        evidence, or linked to those by a review acceptance."""
        self._values("sigs", news)
        self._values("hit", changed | set().union(*news.values()))
        self._values("kvs", {json.dumps(kv) for sig in news for kv in json.loads(sig)[1]
                             if kv[0] in self.t.merge_keys})
        parts = {p for (p,) in self.con.execute("""SELECT DISTINCT part FROM profile WHERE
            sig IN (SELECT v FROM sigs UNION SELECT sig FROM mname WHERE name IN (SELECT v FROM
            hit) UNION SELECT sig FROM mkey WHERE kv IN (SELECT v FROM kvs))""").fetchall()}
        if not self.accept:
            return parts
        self._values("reviewed", {i for pair in self.accept for i in pair})
        part_of = dict(self.con.execute(
            "SELECT iri, coalesce(part, '') FROM mention LEFT JOIN profile USING (sig) "
            "WHERE iri IN (SELECT v FROM reviewed)").fetchall())
        while True:  # acceptances join parts
            more = {part_of[b] for pair in self.accept for a, b in (pair, pair[::-1])
                    if a in part_of and b in part_of and part_of[a] in parts | {""}
                    and part_of[b] not in parts | {""}}
            if not more:
                return parts
            parts |= more

    def _values(self, name: str, values: Iterable[str]) -> None:
        """A one-column relation `name` (column v) to join with."""
        self.con.register(name, {"v": objects(sorted(values))})

    def _mentions(self, parts: set[str], new: list[tuple]
                  ) -> tuple[list[tuple[str, Mention]], dict[str, str | None]]:
        """(profile, mention) of the profiles in `parts` and the `new` ones: each profile's
        first mention, with the labels of all, and the mentions named in reviews; and the part
        of each profile (None: new)."""
        self._values("parts", parts)
        rows = self.con.execute("SELECT sig, rep, paper, labels, part FROM profile WHERE "
                                "part IN (SELECT v FROM parts)").fetchall() + new
        if self.reviewed:
            self._values("reviewed", self.reviewed)
            row = {r[0]: r for r in rows}
            rows += [(sig, iri, paper, *row[sig][3:]) for iri, sig, paper in self.con.execute(
                "SELECT iri, sig, paper FROM mention WHERE iri IN (SELECT v FROM reviewed)"
            ).fetchall() if sig in row and iri != row[sig][1]]
        rows.sort(key=lambda r: r[1])
        return ([(sig, Mention(iri=iri, paper=paper, labels=tuple(labels),
                               keys=tuple(map(tuple, json.loads(sig)[1]))))
                 for sig, iri, paper, labels, _ in rows], {r[0]: r[4] for r in rows})

    def _recluster(self, subset: list[tuple[str, Mention]], old: set[str],
                   was: dict[str, str]) -> None:
        """Cluster the subset and replace the results of its parts (`old`; `was`: each
        profile's part before)."""
        sig_of = {m.iri: sig for sig, m in subset}
        node: dict[str, tuple[str, str]] = {}  # name: (rep, sig) of the first profile with it
        for sig, m in subset:
            for n in json.loads(sig)[0]:
                node[n] = min(node.get(n, (m.iri, sig)), (m.iri, sig))
        self._values("names", node)
        pairs = self.con.execute("SELECT DISTINCT score, a, b FROM fpair WHERE a IN (SELECT v "
                                 "FROM names) OR b IN (SELECT v FROM names)").fetchall()
        part = self._parts(subset, pairs)
        cross = {}  # (name, name): (score, part, part) of the pairs across parts (None: untouched)
        for score, a, b in pairs:
            pa, pb = (part[node[n][1]] if n in node else None for n in (a, b))
            if pa != pb:
                cross[a, b] = score, pa, pb
        probes = dict.fromkeys(cross)
        result = cluster([m for _, m in subset], self.t, fuzzy=pairs, probes=probes,
                         accept=[p for p in self.accept if set(p) <= sig_of.keys()],
                         reject=[p for p in self.reject if set(p) <= sig_of.keys()])
        self._values("old", old)
        sql = self.con.execute
        sql("DELETE FROM member WHERE part IN (SELECT v FROM old)")
        sql("DELETE FROM outcome WHERE pa IN (SELECT v FROM old) OR pb IN (SELECT v FROM old)")
        sql("DELETE FROM probe WHERE part IN (SELECT v FROM old)")
        rows = {sig: (sig, m.iri, m.paper, list(m.labels), part[sig])  # new, by first mention
                for sig, m in reversed(subset) if was[sig] is None}
        insert(self.con, "profile", columns(sorted(rows.values()), "sig rep paper labels part"))
        moved = [(sig, p) for sig, p in sorted(part.items()) if was[sig] not in (None, p)]
        if moved:
            self.con.register("moved", columns(moved, "sig part"))
            sql("UPDATE profile SET part = moved.part FROM moved WHERE profile.sig = moved.sig")
            self.con.unregister("moved")
        members = {(part[sig_of[m]], sig_of[m], c.members[0]) for c in result.clusters
                   for m in c.members}
        insert(self.con, "member", columns(sorted(members), "part sig cluster"))
        outcomes = [(part[sig_of[p.a]], part[sig_of[p.b]], kind, p.a, p.b, p.score, p.method,
                     p.evidence)
                    for kind, items in (("decision", result.decisions), ("grey", result.grey),
                                        ("refused", result.refused))
                    for p in items]
        outcomes += self._across(node, part, cross, probes)
        if outcomes:
            insert(self.con, "outcome", columns(outcomes, "pa pb kind a b score method evidence"))

    def _across(self, node: dict[str, tuple[str, str]], part: dict[str, str],
                cross: dict[tuple[str, str], tuple], probes: dict[tuple[str, str], tuple]
                ) -> list[tuple]:
        """Keep the probes of the subset's sides of fuzzy pairs across parts; returns the review
        pairs among those whose other side is an untouched part, decided from its kept probe
        (parts never influence each other, so it still holds)."""
        rows, outside = [], []
        for (a, b), (score, pa, pb) in cross.items():
            rows += [(a, b, n, p, node[n][1], node[n][0], json.dumps(keys))
                     for n, p, keys in zip((a, b), (pa, pb), probes[a, b], strict=True) if p]
            if pa is None or pb is None:
                outside.append((a, b, b if pb is None else a, score))
        kept = {}
        if outside:
            self.con.register("outside", columns(outside, "a b name score"))
            kept = {(a, b): rest for a, b, *rest in self.con.execute(
                "SELECT a, b, part, sig, rep, keys FROM probe JOIN outside USING (a, b, name)"
            ).fetchall()}
            self.con.unregister("outside")
        if rows:
            insert(self.con, "probe", columns(rows, "a b name part sig rep keys"))
        rejected = self._rejected() if outside and self.reject else set()
        out = []
        for a, b, name, score in outside:
            there, sig, rep, keys = kept[a, b]
            here = node[b if name == a else a]
            sides = [(there, sig, rep, json.loads(keys)),
                     (part[here[1]], here[1], here[0], probes[a, b][name == a])]
            if name == b:
                sides.reverse()
            (pa, sa, ra, ka), (pb, sb, rb, kb) = sides
            if frozenset((sa, sb)) not in rejected and not clash(ka, kb, self.t.conflict_keys):
                out.append((pa, pb, "grey", ra, rb, score, "fuzzy", f"{a!r} ~ {b!r}"))
        return out

    def _rejected(self) -> set[frozenset[str]]:
        """The profiles (signatures) of each review rejection."""
        self._values("reviewed", {i for pair in self.reject for i in pair})
        sig = dict(self.con.execute("SELECT iri, sig FROM mention WHERE iri IN "
                                    "(SELECT v FROM reviewed)").fetchall())
        return {frozenset((sig.get(a), sig.get(b))) for a, b in self.reject}

    def _parts(self, subset: list[tuple[str, Mention]], pairs: list[tuple]) -> dict[str, str]:
        """Each profile's part, named by its smallest IRI."""
        parent = {m.iri: m.iri for _, m in subset}

        def find(i: str) -> str:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        def union(a: str, b: str) -> None:
            ra, rb = sorted((find(a), find(b)))
            parent[rb] = ra

        first: dict[object, str] = {}
        for sig, m in subset:
            names, keys = json.loads(sig)
            atoms = [("sig", sig), *(("name", n) for n in names),
                     *(("key", tuple(kv)) for kv in keys if kv[0] in self.t.merge_keys)]
            for atom in atoms:
                union(first.setdefault(atom, m.iri), m.iri)
        by_name = {atom[1]: iri for atom, iri in first.items() if atom[0] == "name"}
        for score, a, b in pairs:
            if self._merges(a, b, score):
                union(by_name[a], by_name[b])
        for a, b in self.accept:
            if a in parent and b in parent:
                union(a, b)
        return {sig: find(m.iri) for sig, m in subset}

    def paper_of(self) -> dict[str, str]:
        """Every mention's paper."""
        return dict(self.con.execute("SELECT iri, paper FROM mention").fetchall())

    def labels(self) -> dict[str, list[str]]:
        """The labels of each profile, by the IRI its decisions name."""
        return dict(self.con.execute("SELECT rep, labels FROM profile").fetchall())

    def result(self) -> Result:
        """All clusters (in the in-memory engine's order) and decisions (as sets: sorted)."""
        conflict = set(self.t.conflict_keys)
        clusters: dict[str, Cluster] = {}
        for cid, sig, labels, iris in self.con.execute(
                "SELECT cluster, sig, labels, list(iri ORDER BY iri) FROM member JOIN profile "
                "USING (sig) JOIN mention USING (sig) GROUP BY ALL ORDER BY cluster").fetchall():
            c = clusters.setdefault(cid, Cluster(members=[], keys={}, labels=[]))
            c.members = sorted(c.members + iris)
            c.labels = sorted(set(c.labels) | set(labels))
            for kind, value in json.loads(sig)[1]:
                if kind in conflict:
                    c.keys[kind] = min(c.keys.get(kind, value), value)
        out = Result(clusters=list(clusters.values()))
        for kind, a, b, score, method, evidence in self.con.execute(
                "SELECT kind, a, b, score, method, evidence FROM outcome").fetchall():
            getattr(out, {"decision": "decisions"}.get(kind, kind)).append(Pair(
                a=a, b=b, score=score, method=method, evidence=evidence,
                accepted=kind == "decision"))
        for items in (out.decisions, out.grey, out.refused):
            items.sort(key=_order)
        return out


def _order(p: Pair) -> tuple:
    return p.a, p.b, p.method, p.evidence


def _sig(names: frozenset[str], keys: Iterable[tuple[str, str]]) -> str:
    return json.dumps([sorted(names), sorted(set(map(tuple, keys)))])

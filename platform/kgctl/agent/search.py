"""Evidence search over one paper: top-k passages for a query, diversified by maximal
marginal relevance (MMR) over lexical vectors (BM25 for relevance, TF-IDF cosine between
passages for redundancy). No model download; numpy/scipy only.

>>> from kgctl.papers.ingest import document_from_text
>>> doc = document_from_text("p", "# Methods\\nCu(NO3)2 was dissolved in water.\\n\\n"
...                          "The solution was heated to 85 C for 2 days.\\n\\n"
...                          "# Characterisation\\nThe crystals were analysed by PXRD.")
>>> index = PassageIndex(doc)
>>> [hit.section for hit in index.search("heated temperature days", k=1)]
['Methods']
"""

from __future__ import annotations

import re

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import sparse

from kgctl.errors import InputError
from kgctl.papers.ingest import Document

DEFAULT_LAMBDA = 0.5
DEFAULT_K = 5
MAX_K = 50
# Passages: paragraphs, split further at sentence ends when longer than this many characters.
MAX_PASSAGE_CHARS = 600
BM25_K1 = 1.5
BM25_B = 0.75
_TOKEN = re.compile(r"[a-z0-9]+")
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


class Passage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    section: str
    start: int  # offsets in Document.text
    end: int
    text: str


class Hit(Passage):
    score: float  # BM25 relevance, normalised to [0, 1] within the query


class PassageIndex:
    """BM25 and TF-IDF matrices of one document's passages."""

    def __init__(self, document: Document) -> None:
        self.passages = passages_of(document)
        self.vocabulary: dict[str, int] = {}
        rows = [[self._term(t) for t in tokenize(p.text)] for p in self.passages]
        counts = term_counts(rows, len(self.vocabulary))
        self._bm25 = bm25_matrix(counts)
        self._tfidf = tfidf_unit_rows(counts)

    def _term(self, token: str) -> int:
        return self.vocabulary.setdefault(token, len(self.vocabulary))

    def relevance(self, query: str) -> np.ndarray:
        """BM25 score of every passage for the query, scaled so the best is 1 (all 0: no
        passage shares a term)."""
        terms = sorted({self.vocabulary[t] for t in tokenize(query) if t in self.vocabulary})
        scores = np.zeros(len(self.passages))
        if terms:
            scores = np.asarray(self._bm25[:, terms].sum(axis=1)).ravel()
        top = scores.max() if scores.size else 0.0
        return scores / top if top > 0 else scores

    def search(self, query: str, *, k: int = DEFAULT_K, lam: float = DEFAULT_LAMBDA) -> list[Hit]:
        """The k passages chosen by MMR; an empty list when no passage shares a term."""
        if not 1 <= k <= MAX_K:
            raise InputError(f"k must be between 1 and {MAX_K}, got {k}")
        if not 0.0 <= lam <= 1.0:
            raise InputError(f"lambda must be between 0 and 1, got {lam}")
        relevance = self.relevance(query)
        if not relevance.size or relevance.max() <= 0:
            return []
        candidates = np.flatnonzero(relevance > 0)
        similarity = (self._tfidf[candidates] @ self._tfidf[candidates].T).toarray()
        chosen = mmr_select(relevance[candidates], similarity, k=k, lam=lam)
        picked = [int(candidates[i]) for i in chosen]
        return [
            Hit(**self.passages[i].model_dump(), score=round(float(relevance[i]), 6))
            for i in picked
        ]


# Pure functions


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens.

    >>> tokenize("Cu(NO3)2·3H2O in H2O, 85 °C")
    ['cu', 'no3', '2', '3h2o', 'in', 'h2o', '85', 'c']
    """
    return _TOKEN.findall(text.lower())


def passages_of(document: Document) -> list[Passage]:
    """Paragraph passages of every section, long paragraphs cut at sentence ends."""
    out: list[Passage] = []
    for section in document.sections:
        body = document.section_text(section)
        for start, end in _spans(body, _PARAGRAPH):
            for s, e in _chunks(body, start, end):
                text = body[s:e].strip()
                if text:
                    lead = len(body[s:e]) - len(body[s:e].lstrip())
                    at = section.start + s + lead
                    out.append(
                        Passage(section=section.title, start=at, end=at + len(text), text=text)
                    )
    return out


def _spans(text: str, separator: re.Pattern[str]) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for match in separator.finditer(text):
        spans.append((pos, match.start()))
        pos = match.end()
    spans.append((pos, len(text)))
    return spans


def _chunks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Cut [start, end) at sentence ends into pieces of at most MAX_PASSAGE_CHARS (a single
    longer sentence stays whole)."""
    if end - start <= MAX_PASSAGE_CHARS:
        return [(start, end)]
    cuts = [start + m.start() for m in _SENTENCE_END.finditer(text[start:end])] + [end]
    pieces, piece_start = [], start
    for previous, cut in zip([start, *cuts], cuts, strict=False):
        if cut - piece_start > MAX_PASSAGE_CHARS and previous > piece_start:
            pieces.append((piece_start, previous))
            piece_start = previous
    pieces.append((piece_start, end))
    return pieces


def term_counts(rows: list[list[int]], n_terms: int) -> sparse.csr_matrix:
    """Passage x term count matrix from term-id lists."""
    data, indices, indptr = [], [], [0]
    for row in rows:
        ids, counts = np.unique(np.asarray(row, dtype=np.int64), return_counts=True)
        indices.extend(ids.tolist())
        data.extend(counts.tolist())
        indptr.append(len(indices))
    return sparse.csr_matrix(
        (np.asarray(data, dtype=float), indices, indptr), shape=(len(rows), n_terms)
    )


def _idf(counts: sparse.csr_matrix) -> np.ndarray:
    n_docs = counts.shape[0]
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    return np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_matrix(counts: sparse.csr_matrix) -> sparse.csr_matrix:
    """Okapi BM25 weight of every (passage, term); a query's score is the sum over its terms."""
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths / max(lengths.mean(), 1.0))
    weights = counts.tocoo()
    tf = weights.data
    values = tf * (BM25_K1 + 1) / (tf + norm[weights.row]) * _idf(counts)[weights.col]
    return sparse.csr_matrix((values, (weights.row, weights.col)), shape=counts.shape).tocsc()


def tfidf_unit_rows(counts: sparse.csr_matrix) -> sparse.csr_matrix:
    """Sub-linear TF-IDF rows scaled to unit length (dot product = cosine)."""
    weights = counts.tocoo()
    values = (1 + np.log(weights.data)) * _idf(counts)[weights.col]
    matrix = sparse.csr_matrix((values, (weights.row, weights.col)), shape=counts.shape)
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sparse.csr_matrix(sparse.diags(1 / norms) @ matrix)


def mmr_select(relevance: np.ndarray, similarity: np.ndarray, *, k: int, lam: float) -> list[int]:
    """Maximal marginal relevance: repeatedly take the item maximising
    lam * relevance - (1 - lam) * (max similarity to the items already taken); ties -> lower index.

    >>> rel = np.array([1.0, 0.95, 0.5])
    >>> sim = np.array([[1, .99, 0], [.99, 1, 0], [0, 0, 1]])
    >>> mmr_select(rel, sim, k=2, lam=1.0), mmr_select(rel, sim, k=2, lam=0.5)
    ([0, 1], [0, 2])
    """
    chosen: list[int] = []
    redundancy = np.zeros(len(relevance))
    available = np.ones(len(relevance), dtype=bool)
    for _ in range(min(k, len(relevance))):
        scores = np.where(available, lam * relevance - (1 - lam) * redundancy, -np.inf)
        best = int(np.argmax(scores))
        chosen.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, similarity[best])
    return chosen

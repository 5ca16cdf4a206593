"""The question benchmarks on the replayed MOP-30 graph: every question is built through the tools
with the reference answer (the bundled set and the chemist set)."""

from __future__ import annotations

import pytest
from retrieval_helpers import QUESTIONS, SOSA, mop30_engine, sosa_engine

from kgctl.retrieval.benchmark import evaluate, load_questions

SETS = {"bundled": (QUESTIONS, 49), "chemist": (QUESTIONS.with_name("chemist-questions.yaml"), 16)}


@pytest.mark.parametrize("name", sorted(SETS))
def test_benchmark_questions_are_constructible(name):
    path, count = SETS[name]
    questions = load_questions(path)
    assert len(questions) == count
    assert {q.level for q in questions} == {"easy", "medium", "hard", "very hard"}
    report = evaluate(mop30_engine(), questions)
    assert report.questions == len(questions)
    assert all(o.reference_rows > 0 for o in report.outcomes)  # every reference has an answer
    assert report.not_constructible == {}
    assert report.constructible == len(questions)


def test_question_ids_are_unique_across_sets():
    ids = [q.id for path, _ in SETS.values() for q in load_questions(path)]
    assert len(ids) == len(set(ids)) == sum(n for _, n in SETS.values())


def test_sosa_questions_are_constructible():
    """The set on a graph the engine was not written for: T-Boxes without domains or ranges,
    blank nodes, and no template files."""
    questions = load_questions(SOSA / "questions.yaml")
    assert len(questions) == 22
    report = evaluate(sosa_engine(), questions)
    assert all(o.reference_rows > 0 for o in report.outcomes)
    assert report.not_constructible == {} and report.constructible == 22

"""The question benchmark on the replayed MOP-30 graph: the share built through the tools."""

from __future__ import annotations

from retrieval_helpers import QUESTIONS, mop30_engine

from kgctl.retrieval.benchmark import evaluate, load_questions

MIN_QUESTIONS = 40
MIN_SHARE = 0.9


def test_benchmark_questions_are_constructible():
    questions = load_questions(QUESTIONS)
    assert len(questions) >= MIN_QUESTIONS
    assert {q.level for q in questions} == {"easy", "medium", "hard", "very hard"}
    report = evaluate(mop30_engine(), questions)
    assert report.questions == len(questions)
    assert all(o.reference_rows > 0 for o in report.outcomes)  # every reference has an answer
    assert report.share_constructible >= MIN_SHARE
    # the rest are exactly the questions that declare their missing capability
    declared = {q.id for q in questions if q.missing_capability}
    assert set(report.not_constructible) == declared

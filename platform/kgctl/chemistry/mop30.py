"""The record schema of the MOP-30 benchmark (the mop30 pack's ``records`` hook): its four
record types, the published scorer's rules beside the strict ones, and the oracle agent.

The steps and chemicals records share a synthesis node per product (CCDC number), so the
oracle builds the categories in this order.
"""

from __future__ import annotations

from kgctl.chemistry.caseless import CASELESS
from kgctl.chemistry.oracle_agent import PaperAgent
from kgctl.chemistry.records import DOCUMENTS
from kgctl.evaluation.schema import RecordSchema

SCHEMA = RecordSchema(documents=DOCUMENTS, compatible=CASELESS, oracle=PaperAgent)

"""Named vocabularies the sweep's parts share (issue 10): the bucket names. A StrEnum member is
equal to its string, so it travels through XCom JSON and sweep.yaml as the plain name.
"""

from __future__ import annotations

from enum import StrEnum


class Bucket(StrEnum):
    """The five job buckets of the runbook (spec §2), in table order; sweep.yaml may use no other."""

    RL = "RL"
    SFT = "SFT"
    DATAGEN = "Datagen"
    EVAL = "Eval"
    CATCH_ALL = "Catch-all"

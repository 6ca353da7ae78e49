"""app/policy.py: the warning a run with variants gets when its runs are too few pairs."""

from __future__ import annotations

from ruledrift.app.policy import few_pairs_warning
from ruledrift.data import VerdictPolicy


def test_few_pairs_are_warned_of_only_with_variants_and_below_the_fewest_needed() -> None:
    warning = few_pairs_warning(VerdictPolicy(repeat=51), 1)
    assert warning is not None
    assert warning.startswith("--variants with --repeat 51: 51 pair(s) per probe")
    assert "takes 52 if the variant only fixes failures and 83 if" in warning
    assert few_pairs_warning(VerdictPolicy(repeat=52), 1) is None
    assert few_pairs_warning(VerdictPolicy(repeat=8), 0) is None

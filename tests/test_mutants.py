"""The break-and-test check (python -m tests.mutants) stays valid while the scripts change: every break's source text
still stands exactly once in its script, so that each break still breaks what its name says."""

import pytest

from tests.mutants import BREAKS, occurrences


@pytest.mark.parametrize("brk", BREAKS, ids=[brk.name for brk in BREAKS])
def test_each_break_matches_its_script_exactly_once(brk):
    count = occurrences(brk)
    assert count == 1, f"{brk.script} holds {brk.text!r} {count} times; update the break in tests/mutants.py"

"""The output mode's pieces: an Iglu schema criterion and what it matches."""

from __future__ import annotations

import pytest

from events_manifest._transformer.output.formats import Criterion


def test_a_criterion_matches_the_versions_it_names() -> None:
    criterion = Criterion.parse("iglu:com.acme/x/jsonschema/1-*-*")
    assert criterion.matches("iglu:com.acme/x/jsonschema/1-2-0") and not criterion.matches(
        "iglu:com.acme/x/jsonschema/2-0-0"
    )
    assert str(criterion) == "iglu:com.acme/x/jsonschema/1-*-*"
    assert criterion.overlaps(Criterion.parse("iglu:com.acme/x/jsonschema/*-2-*"))
    assert not criterion.overlaps(Criterion.parse("iglu:com.acme/x/jsonschema/2-*-*"))
    with pytest.raises(ValueError, match=r"iglu:com.acme/x/jsonschema/0-\*-\* is invalid Iglu schema criterion"):
        Criterion.parse("iglu:com.acme/x/jsonschema/0-*-*")

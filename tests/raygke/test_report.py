"""raygke/report.py: where a problem's stack field is in the stack file (line, column)."""

from __future__ import annotations

from raygke.report import locate
from tests.helpers import ROOT

PROD = (ROOT / "Pulumi.prod.yaml").read_text()


def _line_of(text: str, needle: str, after: str = "") -> int:
    """1-based number of the first line holding ``needle`` at or after the line holding ``after``."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if after in ln) if after else 0
    return next(i for i in range(start, len(lines)) if needle in lines[i]) + 1


def test_a_named_list_entry_and_its_key_are_found() -> None:
    line, col = locate(PROD, "node_pools[h100].gpu") or (0, 0)
    assert line == _line_of(PROD, "gpu:", after="- name: h100")
    assert PROD.splitlines()[line - 1][col - 1 :].startswith("gpu")


def test_a_kueue_flavor_is_found_by_its_pool() -> None:
    """Flavors have no ``name``: ``flavors[h100-dws]`` names the entry whose ``pool`` it is."""
    line, _ = locate(PROD, "capacity.cluster_queues[ml-batch].flavors[h100-dws]") or (0, 0)
    assert line == _line_of(PROD, "- pool: h100-dws", after="- name: ml-batch")


def test_a_missing_leaf_falls_back_to_its_nearest_ancestor_and_garbage_to_none() -> None:
    assert locate(PROD, "node_pools[h100].no_such_key") == locate(PROD, "node_pools[h100]")
    assert locate("key: [unclosed", "node_pools") is None
    assert locate(PROD, "") is None

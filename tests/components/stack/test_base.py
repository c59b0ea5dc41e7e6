"""Name patterns match the whole string: a trailing newline is not part of a valid name
(Python's ``$`` matches before a final newline; the patterns end in ``\\Z``)."""

from __future__ import annotations

import pytest

from tests.components.stack.test_model import base, one_problem


@pytest.mark.parametrize(
    ("path", "value", "needle"),
    [
        (("cluster", "name"), "ray\n", "cluster.name"),
        (("network", "name"), "ray\n", "network.name"),
        (("region",), "us-central1\n", "region"),
        (("project",), "ray-gke-test\n", "project"),
    ],
)
def test_trailing_newline_is_not_a_name(path: tuple[str, ...], value: str, needle: str) -> None:
    """GKE names: https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters
    (lowercase letters, digits, hyphens); project ids: https://cloud.google.com/resource-manager/docs/creating-managing-projects."""
    data = base()
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    line = one_problem(data, needle)
    assert "\\n" in line  # the value is printed quoted, control character visible


def test_trailing_newline_in_workload_identity_and_pool_names() -> None:
    data = base()
    data["node_pools"][0]["name"] = "cpu\n"
    data["workload_identities"] = [{"name": "ray-train\n"}]
    one_problem(data, "'cpu\\n'", "'ray-train\\n'")

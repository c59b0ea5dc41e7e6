"""Name patterns match the whole string: a trailing newline is not part of a valid name
(Python's ``$`` matches before a final newline; the patterns end in ``\\Z``)."""

from __future__ import annotations

import pytest

from components.kernel.base import ConfigError, plural
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


@pytest.mark.parametrize(
    ("args", "kwargs", "text"),
    [
        ((1, "ray cluster"), {}, "1 ray cluster"),
        ((0, "ray cluster"), {}, "0 ray clusters"),
        ((2, "job"), {}, "2 jobs"),
        ((2, "family", "families"), {}, "2 families"),
        ((1, "family", "families"), {}, "1 family"),
        ((1, "environment"), {"with_count": False}, "environment"),
        ((3, "environment"), {"with_count": False}, "environments"),
    ],
)
def test_plural_takes_the_number_of_its_count(args, kwargs, text) -> None:
    assert plural(*args, **kwargs) == text


def test_a_config_error_counts_its_problems_in_the_right_number() -> None:
    assert str(ConfigError(["a: x"], "f.yaml")).startswith("f.yaml: 1 problem:\n")
    assert str(ConfigError(["a: x", "b: y"])).startswith("2 problems:\n")

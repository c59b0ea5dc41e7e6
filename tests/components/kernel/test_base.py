"""Name patterns match the whole string: a trailing newline is not part of a valid name
(Python's ``$`` matches before a final newline; the patterns end in ``\\Z``)."""

from __future__ import annotations

import pytest

from components.kernel.base import StackConfigError, plural
from tests.components.config.test_stack import base, one_problem


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
    assert str(StackConfigError(["a: x"], "f.yaml")).startswith("f.yaml: 1 problem:\n")
    assert str(StackConfigError(["a: x", "b: y"])).startswith("2 problems:\n")


@pytest.mark.parametrize(
    ("value", "ipv4_only", "line"),
    [
        ("10.0.0.0/8", False, None),
        ("2001:db8::/32", False, None),
        ("10.0.0.1/8", False, "f '10.0.0.1/8' has host bits set; the network is 10.0.0.0/8"),
        ("10.0.0.1", False, "f '10.0.0.1' has no prefix length; write 10.0.0.1/32 for one address"),
        (
            "ten/8",
            False,
            "f 'ten/8' is not an IPv4 or IPv6 network in CIDR notation (e.g. 1.0.0.0/8)",
        ),
        ("2001:db8::/32", True, "f '2001:db8::/32' is not an IPv4 network in CIDR notation"),
        ("10.0.0.0/33", True, "f '10.0.0.0/33' is not an IPv4 network in CIDR notation"),
    ],
)
def test_cidr_takes_a_network_with_its_prefix_and_no_host_bits(
    value: str, ipv4_only: bool, line: str | None
) -> None:
    from components.kernel.base import cidr

    if line is None:
        assert str(cidr(value, "f", example="1.0.0.0/8", ipv4_only=ipv4_only)) == value
        return
    with pytest.raises(ValueError) as e:
        cidr(value, "f", example="1.0.0.0/8", ipv4_only=ipv4_only)
    assert line in str(e.value)


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("network", {"subnet_cidr": "10.10.0.1/20"}, "subnet_cidr '10.10.0.1/20' has host bits"),
        ("network", {"pods_cidr": "10.16.0.0"}, "pods_cidr '10.16.0.0' has no prefix length"),
        (
            "network",
            {"master_authorized_networks": [{"name": "office", "cidr": "198.18.0.1/24"}]},
            "cidr '198.18.0.1/24' has host bits set; the network is 198.18.0.0/24",
        ),
        (
            "kuberay",
            {"serve_from": {"cidrs": ["10.0.0.0"]}},
            "kuberay.serve_from.cidrs entry '10.0.0.0' has no prefix length; write 10.0.0.0/32",
        ),
    ],
)
def test_every_cidr_field_of_the_stack_takes_the_one_cidr_rule(
    key: str, value: dict, needle: str
) -> None:
    """The stack's CIDR fields (the network's ranges, the authorized networks, serve_from; the
    gateway's proxy subnet: tests/components/raycrs/test_ingress.py) say the same three things
    through :func:`components.kernel.base.cidr`."""
    data = base()
    data[key] = value
    one_problem(data, needle)

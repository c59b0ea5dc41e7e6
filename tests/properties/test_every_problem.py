"""Every problem, every time (issue 24): one mistake never hides another, numeric bounds at the
field, unique list entries, reserved namespaces, internal ranges, quoted values."""

from __future__ import annotations

import ipaddress
import types
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from components.config.network import INTERNAL_RANGES, is_internal
from components.config.stack import StackConfig
from components.kernel.base import INT32_MAX, INT64_MAX, POOL_NODES_MAX, StackConfigError, one_line
from components.stack.loader import validate
from tests.components.config.test_stack import base


def _error(data: dict[str, Any]) -> StackConfigError:
    with pytest.raises(StackConfigError) as e:
        validate(data)
    return e.value


def _has(lines: list[str], *needles: str) -> None:
    joined = "\n".join(lines)
    for n in needles:
        assert n in joined, f"{n!r} not in:\n{joined}"


# ------------------------------------------------------------------ 1. one mistake hides none


def test_unrelated_mistakes_in_four_blocks_are_all_reported() -> None:
    """The issue's stack: an unsupported min_master_version, a NAP limit below the pools, a bucket
    prefix in upper case and a bad cluster label, all in one run."""
    d = base()
    d["cluster"] = {"min_master_version": "1.20", "labels": {"Bad Key": "x"}}
    d["nap"]["resource_limits"]["cpu"] = 4
    d["buckets"] = {"prefix": "UPPER"}
    e = _error(d)
    _has(e.problems, "cluster.min_master_version:", "is not offered")
    _has(e.problems, "cluster.labels:")
    _has(e.problems, "buckets.prefix: prefix 'UPPER' cannot start a bucket name")
    _has(e.problems, "nap.resource_limits[cpu]: 4 is smaller than the declared node pools")
    # a version GKE no longer offers is a rule's problem, not a field's: what reads the version
    # still runs (the v5e pool's minimum); what reads the broken labels is skipped, and said
    _has(e.problems, "cluster.min_master_version: 1.20 is older than")
    _has(e.notes, "not checked because cluster.labels is invalid")


def test_a_bad_key_inside_a_block_keeps_the_rules_on_its_other_keys() -> None:
    d = base()
    d["cluster"] = {"release_channel": "NIGHTLY", "system_pool": {"max_nodes": 900}}
    e = _error(d)
    _has(e.problems, "cluster.release_channel:")
    # nap_limits_cover_pools reads cluster.system_pool, which is valid: it still runs
    _has(e.problems, "nap.resource_limits[cpu]: 1000 is smaller than the declared node pools")


def test_rules_reading_an_invalid_list_are_named_as_not_checked() -> None:
    d = base()
    d["node_pools"][0]["max_nodes"] = "lots"
    d["secrets"] = [{"name": "hf", "readers": ["ray-nobody"]}]
    e = _error(d)
    _has(e.problems, "secrets[hf].readers: 'ray-nobody' is not a declared workload identity")
    _has(e.notes, "not checked because node_pools is invalid:", "worker group pools exist and fit")
    assert not any("node_pools" in n and "secret readers" in n for n in e.notes), e.notes


def test_the_cli_prints_both_mistakes_and_what_it_skipped(tmp_path, capsys) -> None:
    """``raygke check`` on a stack file with two unrelated mistakes reports both (exit 1)."""
    from raygke.cli import main

    text = (
        (__import__("pathlib").Path(__file__).parents[2] / "Pulumi.dev.yaml")
        .read_text()
        .replace(
            "    release_channel: REGULAR\n",
            '    release_channel: REGULAR\n    min_master_version: "1.x"\n',
        )
        .replace("cpu: 320", "cpu: 4")
    )
    path = tmp_path / "Pulumi.two.yaml"
    path.write_text(text)
    assert main(["check", "--config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "cluster.min_master_version: '1.x' is not a GKE version" in err
    assert "nap.resource_limits[cpu]: 4 is smaller than" in err
    assert "note: not checked because cluster.min_master_version is invalid" in err
    assert "note: the checks of the rendered stack" in err


# --------------------------------------------------------------------------------- 2. bounds


def _int_fields(model: type[BaseModel], seen: set[type] | None = None):
    """(model, field name, field info) of every int field of the stack model, recursively."""
    seen = set() if seen is None else seen
    if model in seen:
        return
    seen.add(model)
    hints = typing.get_type_hints(model)
    for name, info in model.model_fields.items():
        ann = hints.get(name, info.annotation)
        args = {a for a in _flatten(ann)}
        if int in args and bool not in args:
            yield model, name, info
        for a in args:
            if isinstance(a, type) and issubclass(a, BaseModel):
                yield from _int_fields(a, seen)


def _flatten(ann: Any) -> list[Any]:
    origin = typing.get_origin(ann)
    if origin is None:
        return [ann]
    if origin is typing.Annotated:
        return _flatten(typing.get_args(ann)[0])
    out = []
    for a in typing.get_args(ann):
        out += _flatten(a)
    return out if origin in (typing.Union, types.UnionType) else [*out]


def test_every_integer_field_has_an_upper_bound() -> None:
    """No int field reaches a renderer unbounded (int32 KubeRay / Kubernetes fields, int64 GCP
    fields, GKE's node limits): each carries ``le``/``lt`` metadata, or is a ``dict[str, int]``
    whose validator bounds the values (nap.resource_limits)."""
    unbounded = []
    for model, name, info in _int_fields(StackConfig):
        if typing.get_origin(typing.get_type_hints(model)[name]) is dict:
            continue
        if not any(hasattr(m, "le") or hasattr(m, "lt") for m in info.metadata):
            unbounded.append(f"{model.__name__}.{name}")
    assert unbounded == [], unbounded


def test_pool_bound_covers_the_largest_region() -> None:
    from components import catalog

    assert 1000 * max(len(z) for z in catalog.GCP_REGIONS.values()) == POOL_NODES_MAX


@pytest.mark.parametrize(
    "mutate, where",
    [
        (lambda d: d["node_pools"][0].update(max_nodes=2**31), "node_pools[cpu].max_nodes"),
        (lambda d: d["node_pools"][2].update(max_nodes=2**31), "node_pools[l4].max_nodes"),
        (lambda d: d["node_pools"][1].update(min_slices=2**31), "node_pools[tpu].min_slices"),
        (lambda d: d.update(cluster={"system_pool": {"max_nodes": 2**31}}), "cluster.system_pool"),
        (lambda d: d["nap"]["resource_limits"].update(cpu=2**63), "nap.resource_limits"),
        (lambda d: d.update(kuberay={"quota": {"pods": 2**63}}), "kuberay.quota.pods"),
        (
            lambda d: d.update(buckets={"datasets": {"delete_after_days": 2**31}}),
            "buckets.datasets.delete_after_days",
        ),
        (
            lambda d: d["ray_clusters"][0]["worker_groups"][0].update(min_replicas=2**31),
            "min_replicas",
        ),
    ],
)
def test_values_beyond_what_the_systems_take_are_config_errors(mutate, where) -> None:
    """Bounds at the field: a config error naming it, never an internal error later (the issue's
    ``max_nodes: 2**31`` ended in a ValidationError of the resolved worker group, exit 3)."""
    d = base()
    mutate(d)
    _has(_error(d).problems, where)


def test_max_nodes_at_the_bound_still_resolves_without_internal_error() -> None:
    """At the field's bound the rules resolve every reference (no ValidationError escapes): the
    per-zone rule reports the zone-aware limit."""
    d = base()
    d["node_pools"][2]["max_nodes"] = POOL_NODES_MAX
    d["jobs"].append({"name": "own", "workload": "train_lm", "node_pool": "l4"})
    _has(
        _error(d).problems, "node_pools[l4].max_nodes: 4000 exceeds GKE's 1,000 nodes per node pool"
    )
    assert POOL_NODES_MAX < INT32_MAX < INT64_MAX


# ------------------------------------------------------------------------------ 3. uniqueness


@pytest.mark.parametrize(
    "mutate, line",
    [
        (
            lambda d: d.update(secrets=[{"name": "k", "readers": ["ray-train", "ray-train"]}]),
            "secrets[k].readers: readers: 'ray-train' listed more than once",
        ),
        (
            lambda d: d.update(zones=["us-central1-a", "us-central1-a"]),
            "zones: zones: 'us-central1-a' listed more than once",
        ),
        (
            lambda d: d["node_pools"][0].update(zones=["us-central1-b", "us-central1-b"]),
            "node_pools[cpu].zones: zones: 'us-central1-b' listed more than once",
        ),
        (
            lambda d: d.update(kuberay={"serve_from": {"namespaces": ["gw", "gw"]}}),
            "kuberay.serve_from.namespaces: 'gw' listed more than once",
        ),
        (
            lambda d: d.update(kuberay={"serve_from": {"cidrs": ["10.0.0.0/8", "10.0.0.0/8"]}}),
            "kuberay.serve_from.cidrs: '10.0.0.0/8' listed more than once",
        ),
        (
            lambda d: d.update(
                network={
                    "master_authorized_networks": [
                        {"name": "a", "cidr": "10.1.0.0/16"},
                        {"name": "b", "cidr": "10.1.0.0/16"},
                    ]
                }
            ),
            "master_authorized_networks: cidr 10.1.0.0/16 is listed more than once",
        ),
    ],
)
def test_an_entry_listed_twice_is_refused(mutate, line) -> None:
    """A list of references gives one resource per entry (a secret reader is one IAM binding,
    whose URN names it): two equal entries would be two resources with one URN."""
    d = base()
    mutate(d)
    _has(_error(d).problems, line)


# ---------------------------------------------------------------------- 4. reserved namespaces


@pytest.mark.parametrize(
    "ns",
    [
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gke-managed-system",
        "gmp-system",
        "default",
    ],
)
def test_reserved_namespaces_are_refused_for_ray_and_serve_from(ns: str) -> None:
    d = base()
    d["kuberay"] = {"namespace": ns}
    _has(_error(d).problems, f"kuberay.namespace: kuberay.namespace {ns!r} is", "Pod Security")
    d = base()
    d["kuberay"] = {"serve_from": {"namespaces": [ns]}}
    _has(_error(d).problems, f"kuberay.serve_from.namespaces entry {ns!r} is", "every pod there")


def test_own_namespaces_are_accepted() -> None:
    d = base()
    d["kuberay"] = {"namespace": "ray-prod", "serve_from": {"namespaces": ["gateway", "kubeflow"]}}
    assert validate(d).kuberay.namespace == "ray-prod"


# ------------------------------------------------------------------------- 6. internal ranges


@pytest.mark.parametrize(
    "cidr", ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "127.0.0.0/8", "169.254.0.0/16"]
)
def test_documentation_loopback_and_link_local_ranges_are_not_internal(cidr: str) -> None:
    """Python's ``is_private`` calls these private; RFC 1918 / RFC 6598 do not, and no client in a
    VPC has such an address, so a private endpoint cannot be reached from them."""
    assert ipaddress.ip_network(cidr).is_private  # what the old check relied on
    assert not is_internal(ipaddress.ip_network(cidr))
    d = base()
    d["network"] = {
        "private_endpoint": True,
        "master_authorized_networks": [{"name": "vpn", "cidr": cidr}],
    }
    _has(
        _error(d).problems, f"master_authorized_networks[vpn].cidr {cidr} is not an internal range"
    )
    d = base()
    d["network"] = {"subnet_cidr": cidr if cidr != "127.0.0.0/8" else "127.0.0.0/20"}
    _has(_error(d).problems, "network.subnet_cidr", "is not a private range")


@pytest.mark.parametrize(
    "cidr", ["10.20.0.0/16", "172.16.5.0/24", "192.168.1.0/24", "100.64.0.0/16"]
)
def test_rfc1918_and_rfc6598_ranges_are_internal(cidr: str) -> None:
    assert is_internal(ipaddress.ip_network(cidr))
    d = base()
    d["network"] = {
        "private_endpoint": True,
        "master_authorized_networks": [{"name": "vpn", "cidr": cidr}],
    }
    assert validate(d).network.private_endpoint
    assert {str(r) for r in INTERNAL_RANGES} >= {"10.0.0.0/8", "100.64.0.0/10"}


# ---------------------------------------------------------------------------- 8. quoted values


def test_a_label_key_with_a_newline_is_one_quoted_line() -> None:
    d = base()
    d["labels"] = {"te\nam": "x"}
    (line,) = _error(d).problems
    assert "\n" not in line and "'te\\nam'" in line, line


def test_control_characters_in_a_display_name_stay_escaped() -> None:
    d = base()
    d["network"] = {
        "private_endpoint": True,
        "master_authorized_networks": [{"name": "v\npn\x1b", "cidr": "203.0.113.0/24"}],
    }
    problems = _error(d).problems
    assert all("\n" not in p and "\x1b" not in p for p in problems), problems
    _has(problems, "v\\npn\\x1b")


@pytest.mark.parametrize("text", ["a\nb", "\x00", "\u202eevil", "tab\there", "\x85", "ok"])
def test_one_line_escapes_control_and_bidi_characters(text: str) -> None:
    out = one_line(text)
    assert all(c.isprintable() and c not in "\u202e\u2028" for c in out), out
    assert out == text if text.isprintable() else out != text


@pytest.mark.parametrize(
    "quantity, why",
    [
        ("1" + "0" * 40, "larger than a Kubernetes quantity holds"),
        ("9223372036854775808", "larger than a Kubernetes quantity holds"),
        ("9" * 20 + "Gi", "larger than a Kubernetes quantity holds"),
        ("0.0001", "finer than a Kubernetes quantity holds"),
        ("0.5m", "finer than a Kubernetes quantity holds"),
    ],
)
def test_quantities_the_api_server_would_cap_or_round_are_refused(quantity, why) -> None:
    """Kubernetes caps a quantity at 2^63-1 and rounds below 1m, silently
    (https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/)."""
    d = base()
    d["kuberay"] = {"quota": {"cpu": quantity}}
    _has(_error(d).problems, f"kuberay.quota.cpu: kuberay.quota.cpu {quantity!r} is {why}")
    d = base()
    d["ray_clusters"][0]["head"] = {"cpu": quantity}
    _has(_error(d).problems, "ray_clusters[research].head.cpu:", why)


@pytest.mark.parametrize("quantity", ["9223372036854775807", "1.5Gi", "500m", "0.001", "64"])
def test_quantities_within_the_range_are_kept(quantity) -> None:
    d = base()
    d["kuberay"] = {"quota": {"cpu": quantity}}
    assert validate(d).kuberay.quota.cpu == quantity

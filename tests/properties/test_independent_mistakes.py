"""Property: for any set of independent mistakes in a shipped stack, every one is reported in one
run (issue 24: one problem never hides another).

Each mistake in :data:`MISTAKES` says which stack keys it makes invalid (``breaks``) and which
keys the check that reports it reads (``reads``); two mistakes are independent when neither
breaks what the other's check reads. Hypothesis draws sets of pairwise independent mistakes,
applies them to ``Pulumi.dev.yaml`` and asserts that validation reports each one's line (and,
for a sample, that ``raygke check`` prints them all and exits 1, never 3).
"""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from components.kernel.base import StackConfigError
from components.stack.loader import read_stack_yaml, stack_data_from_yaml, validate
from raygke.cli import main

ROOT = Path(__file__).resolve().parents[2]
DEV_TEXT = (ROOT / "Pulumi.dev.yaml").read_text()
DEV = stack_data_from_yaml(DEV_TEXT)


@dataclass(frozen=True)
class Mistake:
    """One mistake: ``apply`` edits the stack data; ``line`` is in the problem it gets."""

    name: str
    apply: Callable[[dict[str, Any]], None]
    line: str
    breaks: frozenset[str]
    reads: frozenset[str]


def _m(name, apply, line, breaks, reads) -> Mistake:
    return Mistake(name, apply, line, frozenset(breaks), frozenset(reads))


def _set(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(d: dict[str, Any]) -> None:
        node = d
        for p in path[:-1]:
            node = node.setdefault(p, {}) if isinstance(node, dict) else node[p]
        node[path[-1]] = value

    return apply


MISTAKES: tuple[Mistake, ...] = (
    _m(
        "unoffered GKE version",
        _set("cluster", "min_master_version", value="1.20"),
        "cluster.min_master_version: min_master_version 1.20 is not offered",
        {"cluster.min_master_version"},
        {"cluster.min_master_version", "cluster.release_channel"},
    ),
    _m(
        "upper-case bucket prefix",
        _set("buckets", "prefix", value="UPPER"),
        "buckets.prefix: prefix 'UPPER' cannot start a bucket name",
        {"buckets.prefix"},
        {"buckets.prefix"},
    ),
    _m(
        "NAP limit below the pools",
        _set("nap", "resource_limits", "cpu", value=8),
        "nap.resource_limits[cpu]: 8 is smaller than the declared node pools",
        set(),
        {"nap", "cluster.system_pool", "node_pools"},
    ),
    _m(
        "bad stack label",
        _set("labels", "Team", value="ml"),
        "labels: label 'Team'='ml'",
        {"labels"},
        {"labels"},
    ),
    _m(
        "bad cluster label",
        _set("cluster", "labels", value={"Cost Center": "x"}),
        "cluster.labels: label 'Cost Center'='x'",
        {"cluster.labels"},
        {"cluster.labels"},
    ),
    _m(
        "max_nodes beyond GKE",
        _set("node_pools", 0, "max_nodes", value=2**31),
        "node_pools[cpu-spot].max_nodes: must be from 1 to 4000; got 2147483648",
        {"node_pools"},
        {"node_pools"},
    ),
    _m(
        "secret reader twice",
        _set("secrets", 0, "readers", value=["ray-train", "ray-train"]),
        "readers: 'ray-train' listed more than once",
        {"secrets"},
        {"secrets"},
    ),
    _m(
        "system namespace",
        _set("kuberay", "namespace", value="kube-system"),
        "kuberay.namespace: kuberay.namespace 'kube-system' is a system namespace",
        {"kuberay.namespace"},
        {"kuberay.namespace"},
    ),
    _m(
        "documentation range on a private endpoint",
        _set(
            "network",
            value={
                "name": "ray-dev",
                "private_endpoint": True,
                "master_authorized_networks": [{"name": "vpn", "cidr": "192.0.2.0/24"}],
            },
        ),
        "master_authorized_networks[vpn].cidr 192.0.2.0/24 is not an internal range",
        {"network"},
        {"network"},
    ),
    _m(
        "job on an undeclared pool",
        _set("jobs", 2, "node_pool", value="nope"),
        "jobs[train-lm-l4].node_pool: 'nope' is not a declared node pool",
        set(),
        {"jobs", "node_pools", "ray_clusters"},
    ),
    _m(
        "zone twice",
        _set("zones", value=["us-central1-a", "us-central1-a"]),
        "zones: zones: 'us-central1-a' listed more than once",
        {"zones"},
        {"zones"},
    ),
    _m(
        "unknown bucket role",
        _set("workload_identities", 1, "buckets", "artifacts", value="admin"),
        "workload_identities[ray-serve].buckets.artifacts",
        {"workload_identities"},
        {"workload_identities"},
    ),
    _m(
        "KMS generation zero",
        _set("kms", "key_ring_generation", value=0),
        "kms.key_ring_generation",
        {"kms.key_ring_generation"},
        {"kms.key_ring_generation"},
    ),
)


def _overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    return any(x == y or x.startswith(y + ".") or y.startswith(x + ".") for x in a for y in b)


def independent(a: Mistake, b: Mistake) -> bool:
    """Neither breaks what the other's check reads (nor do they edit the same keys)."""
    return not (_overlap(a.breaks, b.reads) or _overlap(b.breaks, a.reads)) and a.name != b.name


@st.composite
def independent_sets(draw: st.DrawFn, max_size: int = 4) -> list[Mistake]:
    """2..max_size pairwise independent mistakes."""
    chosen: list[Mistake] = [draw(st.sampled_from(MISTAKES))]
    for _ in range(draw(st.integers(1, max_size - 1))):
        left = [m for m in MISTAKES if all(independent(m, c) for c in chosen)]
        if not left:
            break
        chosen.append(draw(st.sampled_from(left)))
    return chosen


def _problems(mistakes: list[Mistake]) -> list[str]:
    data = copy.deepcopy(DEV)
    for m in mistakes:
        m.apply(data)
    with pytest.raises(StackConfigError) as e:
        validate(data)
    return e.value.problems


def test_each_mistake_alone_is_reported_by_its_line() -> None:
    for m in MISTAKES:
        found = _problems([m])
        assert any(m.line in p for p in found), (m.name, found)


def test_the_catalogue_has_independent_pairs_across_blocks() -> None:
    pairs = [(a, b) for a, b in itertools.combinations(MISTAKES, 2) if independent(a, b)]
    assert len(pairs) >= 60, len(pairs)


@settings(max_examples=150, deadline=None, database=None)
@given(independent_sets())
def test_independent_mistakes_are_all_reported(mistakes: list[Mistake]) -> None:
    found = _problems(mistakes)
    for m in mistakes:
        assert any(m.line in p for p in found), (m.name, [x.name for x in mistakes], found)


def _stack_file(data: dict[str, Any]) -> str:
    doc = read_stack_yaml(DEV_TEXT)
    doc["config"] = {k: v for k, v in doc["config"].items() if not k.startswith("ray-gke:")} | {
        f"ray-gke:{k}": v for k, v in data.items()
    }
    out = io.StringIO()
    YAML(typ="safe", pure=True).dump(doc, out)
    return out.getvalue()


@settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(independent_sets(max_size=3))
def test_raygke_check_prints_every_independent_mistake(tmp_path, mistakes: list[Mistake]) -> None:
    data = copy.deepcopy(DEV)
    for m in mistakes:
        m.apply(data)
    path = tmp_path / "Pulumi.mistakes.yaml"
    path.write_text(_stack_file(data))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(["check", "--config", str(path)])
    text = out.getvalue()
    assert rc == 1, text
    for m in mistakes:
        assert m.line in text, (m.name, text)

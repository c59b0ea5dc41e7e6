"""components/kernel/problems.py: one Problem type that every validator produces, with the stack field
it is about (a path, not only a message), and one Rule type for the three rule families."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from components.config.stack import StackConfig
from components.kernel.base import StackConfigError
from components.kernel.problems import Problem, Rule, path_colon, path_parts, problems_of
from components.raycrs.render import render_manifests
from components.stack.loader import validate
from tests.helpers import WORKING_DIR, stack

ROOT = Path(__file__).resolve().parents[3]


def _dev() -> dict:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    return copy.deepcopy(
        {k.split(":", 1)[1]: v for k, v in doc.items() if k.startswith("ray-gke:")}
    )


def _config_problems(mutate: Callable[[dict], None]) -> list[Problem]:
    data = _dev()
    mutate(data)
    with pytest.raises(StackConfigError) as exc:
        validate(data)
    return exc.value.items


def test_a_problem_is_its_line_and_carries_path_rule_severity() -> None:
    p = Problem("node_pools[tpu].tpu.topology", "node_pools[tpu].tpu: topology 3x3 ...", "field")
    assert p == "node_pools[tpu].tpu: topology 3x3 ..." and str(p) == p.message
    assert (p.path, p.rule, p.severity) == ("node_pools[tpu].tpu.topology", "field", "error")
    with pytest.raises(AttributeError):
        p.path = "x"  # type: ignore[misc]
    with pytest.raises(ValueError, match="severity 'fatal'"):
        Problem("a", "b", severity="fatal")
    # a plain line of an old-style producer gets its block as path; a Problem keeps its own
    (plain, own) = problems_of(["capacity: x", p], "capacity", "kueue")
    assert (plain.path, plain.rule) == ("capacity", "kueue")
    assert (own.path, own.rule) == ("node_pools[tpu].tpu.topology", "field")


@pytest.mark.parametrize(
    ("path", "message", "printed"),
    [
        # a field followed by its value gets the colon the other lines have
        (
            "jobs[x].queue",
            "jobs[x].queue 'q' is not declared",
            "jobs[x].queue: 'q' is not declared",
        ),
        ("node_pools[c].max_nodes", "node_pools[c].max_nodes 1001 exceeds", None),
        ("jobs[p].placement_strategy", "jobs[p].placement_strategy STRICT_PACK: x", None),
        # the message may name an ancestor of the path, a named entry as [name] or .name
        ("jobs[x].args.name", "jobs[x].args 'n' is wrong", "jobs[x].args: 'n' is wrong"),
        ("nap.resource_limits.tpu", "nap.resource_limits[tpu] 4 is small", None),
        # kept: a colon already there, a sentence, another field, prose, a bare word
        ("jobs[x].queue", "jobs[x]: queue 'q' is not declared", "same"),
        ("jobs[x].worker_group", "jobs[x].worker_group is not set and ...", "same"),
        ("node_pools[b].name", "node_pools[a].name and node_pools[b].name clash", "same"),
        ("kuberay.quota", "RayCluster r: head group: requests 9", "same"),
        ("cluster.name", "cluster 'x' is too long", "same"),
        ("", "jobs[x].queue 'q' is not declared", "same"),
    ],
)
def test_a_message_that_opens_with_its_field_reads_field_colon_message(
    path: str, message: str, printed: str | None
) -> None:
    """``<path>: <message>`` everywhere (issue: some rules wrote ``<path> <value>``); the path
    and rule fields are the producer's, unchanged."""
    if printed is None:
        head, _, rest = message.partition(" ")
        printed = f"{head}: {rest}"
    elif printed == "same":
        printed = message
    assert path_colon(path, message) == printed
    p = Problem(path, message, "some_rule")
    assert (p.message, p.path, p.rule) == (printed, path, "some_rule")


def test_a_problem_keeps_its_position_through_copies_and_pickling() -> None:
    p = Problem(
        "cluster.regional", "cluster.regional: duplicate key", "duplicate-key", line=4, column=5
    )
    for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p), p.with_rule("x")):
        assert (q.path, q.message, q.rule, q.position) == (p.path, p.message, p.rule, (4, 5))
    assert Problem("a", "b").position is None


def test_an_object_problem_keeps_its_object_field_through_copies_pickling_and_changes() -> None:
    """A check of a rendered object gives the object's field apart from the stack path
    (``in_object``): the printed line is the message as given (no ``path: `` rewriting), and
    the field survives pickling (xdist), copies and the runner setting the stack path."""
    from components.kernel.problems import in_object

    p = in_object(
        "spec.workerGroupSpecs[1].replicas", "RayCluster r: spec.workerGroupSpecs[1].replicas -1"
    )
    assert (p.path, p.object_field, p.rule, p.severity) == (
        "",
        "spec.workerGroupSpecs[1].replicas",
        "",
        "error",
    )
    assert str(p) == "RayCluster r: spec.workerGroupSpecs[1].replicas -1"
    placed = p.with_path("ray_clusters[r].worker_groups[g]").with_rule("kuberay-operator")
    for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p), placed):
        assert q.object_field == p.object_field and q.message == p.message
    assert placed.path == "ray_clusters[r].worker_groups[g]" and placed.rule == "kuberay-operator"
    assert p.changed(message="x").object_field == p.object_field
    assert Problem("a", "b").object_field == ""


def test_path_parts_split_keys_and_named_entries() -> None:
    assert path_parts("node_pools[tpu-v5e].tpu.topology") == [
        "node_pools",
        "[tpu-v5e]",
        "tpu",
        "topology",
    ]
    assert path_parts("zones[0]") == ["zones", "[0]"]
    assert path_parts("node_pools['v6e\\x00'].name")[1] == "[v6e\\x00]"


def _field_error() -> list[Problem]:
    def topo(d: dict) -> None:
        d["node_pools"][1]["tpu"]["topology"] = "3x3"

    return _config_problems(topo)


def _stack_rule() -> list[Problem]:
    def pool(d: dict) -> None:
        d["jobs"][2]["node_pool"] = "nope"

    return _config_problems(pool)


def _capacity_rule() -> list[Problem]:
    def queue(d: dict) -> None:
        d["jobs"][2]["queue"] = "nope"

    return _config_problems(queue)


def _computeclass_rule() -> list[Problem]:
    def cc(d: dict) -> None:
        d["compute_classes"] = [{"name": "cc", "node_pool": "nope"}]

    return _config_problems(cc)


def _crd_and_operator() -> list[Problem]:
    from components.stack.checks import check_manifests

    cfg = stack("dev")
    m = render_manifests(cfg, WORKING_DIR)
    group = m[0]["spec"]["workerGroupSpecs"][1]
    group["numOfHost"] = group.pop("numOfHosts")  # CRD schema: unknown field
    job = next(x for x in m if x["kind"] == "RayJob")
    job["spec"]["ttlSecondsAfterFinished"] = 3600  # operator rule: a TTL needs shutdown
    return check_manifests(cfg, m)


def _names() -> list[Problem]:
    from components.stack.name_checks import name_problems

    data = _dev()
    data["node_pools"][0]["labels"] = {"cloud.google.com/gke-nodepool": "x"}
    return name_problems(validate(data))


def _images() -> list[Problem]:
    from tests.components.images.test_checks import DIGEST, _deps, _prod

    return _deps(validate(_prod(gpu={"image": f"rayproject/ray:2.60.0-py311-gpu{DIGEST}"})))


def _workload_args() -> list[Problem]:
    from components.stack.checks import workload_problems

    data = _dev()
    data["jobs"][0]["args"] = {"no_such_argument": 1}
    return workload_problems(StackConfig.model_validate(data))  # the model runs no rules


KINDS: dict[str, tuple[Callable[[], list[Problem]], dict[str, str]]] = {
    # kind -> (producer, {expected path: expected rule})
    "pydantic field": (_field_error, {"node_pools[tpu-v5e-2x2].tpu.topology": "field"}),
    "stack rule": (_stack_rule, {"jobs[train-lm-l4].node_pool": "job_targets_exist"}),
    "capacity rule": (_capacity_rule, {"jobs[train-lm-l4].queue": "capacity_rules"}),
    "computeclass rule": (
        _computeclass_rule,
        {"compute_classes[cc].node_pool": "compute_class_pools"},
    ),
    "CRD schema and KubeRay operator": (
        _crd_and_operator,
        {
            "ray_clusters[research].worker_groups[tpu-v5e]": "crd-schema",
            "jobs[prepare-stdlib]": "kuberay-operator",
        },
    ),
    "names and labels": (_names, {"node_pools[cpu-spot].labels": "labels"}),
    "images": (_images, {"jobs[train-lm-h100]": "image-dependencies"}),
    "workload arguments": (_workload_args, {"jobs[prepare-stdlib].args": "workload-args"}),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_validator_kind_gives_problems_with_a_path(kind: str) -> None:
    producer, expected = KINDS[kind]
    found = producer()
    assert found and all(isinstance(p, Problem) and p.path and p.rule for p in found), found
    got = {p.path: p.rule for p in found}
    for path, rule in expected.items():
        assert got.get(path) == rule, (path, found)


def test_one_rule_type_for_stack_operator_and_policy_rules() -> None:
    from components.raycrs.operator import CLUSTER_RULES, OBJECT_RULES
    from components.security.policy import RULES as POLICY_RULES
    from components.stack.rules import RULES as STACK_RULES

    for family in (STACK_RULES, OBJECT_RULES, CLUSTER_RULES, POLICY_RULES):
        assert family and all(type(r) is Rule for r in family)
    assert {r.name for r in POLICY_RULES} >= {"bucket-cmek", "network-policy"}
    assert all(r.kinds for r in (*OBJECT_RULES, *CLUSTER_RULES))
    assert any(r.needs for r in STACK_RULES)

"""The policy pack (policy/__main__.py) wraps exactly the rules of components/security/policy.py.

pulumi-policy lives in its own virtualenv (policy/venv: it pins protobuf~=5.29), so here the pack
is loaded against a stub ``pulumi_policy`` module that records what the pack builds; ``make
policy-check`` (run by .ci/run) loads it against the real SDK.
"""

from __future__ import annotations

import enum
import runpy
import sys
import types
from typing import Any, ClassVar

import pytest

from components.security.policy import RULE_NAMES, RULES
from tests.helpers import ROOT

PACK = ROOT / "policy" / "__main__.py"


class _Policy:
    def __init__(self, name: str, description: str, validate: Any = None, **kw: Any) -> None:
        self.name, self.description, self.validate, self.kw = name, description, validate, kw


class ResourceValidationPolicy(_Policy):
    pass


class StackValidationPolicy(_Policy):
    pass


class EnforcementLevel(enum.Enum):
    ADVISORY = "advisory"
    MANDATORY = "mandatory"


class PolicyPack:
    built: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, **kw: Any) -> None:
        PolicyPack.built.append(kw)


@pytest.fixture
def stub(monkeypatch) -> types.ModuleType:
    mod = types.ModuleType("pulumi_policy")
    for cls in (ResourceValidationPolicy, StackValidationPolicy, EnforcementLevel, PolicyPack):
        setattr(mod, cls.__name__, cls)
    monkeypatch.setitem(sys.modules, "pulumi_policy", mod)
    PolicyPack.built.clear()
    return mod


def test_policy_names_are_the_rule_names(stub):
    pack = runpy.run_path(str(PACK), run_name="pack_under_test")
    policies = pack["policies"]()
    assert [p.name for p in policies] == list(RULE_NAMES)
    for policy, rule in zip(policies, RULES, strict=True):
        expected = ResourceValidationPolicy if rule.kind == "resource" else StackValidationPolicy
        assert type(policy) is expected
        assert policy.description == rule.description
    assert PolicyPack.built == []  # importing the pack starts no analyzer server


def test_running_the_pack_builds_one_mandatory_pack(stub):
    runpy.run_path(str(PACK), run_name="__main__")
    (kw,) = PolicyPack.built
    assert kw["enforcement_level"] is EnforcementLevel.MANDATORY
    assert [p.name for p in kw["policies"]] == list(RULE_NAMES)


def test_wrappers_report_the_rule_messages(stub):
    policies = {p.name: p for p in runpy.run_path(str(PACK), run_name="t")["policies"]()}
    reported: list[str] = []
    args = types.SimpleNamespace(
        resource_type="gcp:storage/bucket:Bucket",
        name="storage-datasets",
        props={"public_access_prevention": "inherited", "uniformBucketLevelAccess": True},
    )
    policies["bucket-public-access-prevention"].validate(args, reported.append)
    assert reported == ["bucket public access prevention is inherited; set it to enforced"]
    reported.clear()
    ray = types.SimpleNamespace(
        resource_type="kubernetes:ray.io/v1:RayCluster",
        name="ray-raycluster-training",
        props={"kind": "RayCluster", "metadata": {"name": "t", "namespace": "ray"}, "spec": {}},
    )
    stack = types.SimpleNamespace(resources=[ray])
    policies["network-policy"].validate(stack, reported.append)
    assert reported[0] == (
        "no default-deny ingress NetworkPolicy (empty podSelector, policyTypes [Ingress], "
        "no ingress rule)"
    )


def test_the_pod_security_policy_passes_the_gpudirect_namespace_only(stub):
    """gpu_networking: gpudirect (docs/security.md, GPUDirect): the pack's pod-security policy,
    fed one resource at a time as the engine does, passes the GPUDirect namespace and its Ray
    objects with the RxDM sidecar, and refuses the same RayCluster in the Ray namespace."""
    import copy

    from components.raycrs.render import render_manifests
    from components.stack.loader import validate
    from tests.components.gpunet.test_gpudirect import _prod_data
    from tests.components.kuberay.test_namespace import namespaces
    from tests.helpers import WORKING_DIR

    policies = {p.name: p for p in runpy.run_path(str(PACK), run_name="t")["policies"]()}
    cfg = validate(_prod_data())
    objects = [*namespaces(cfg), *render_manifests(cfg, WORKING_DIR)]

    def reported(obj: dict[str, Any]) -> list[str]:
        out: list[str] = []
        kind = obj["kind"]
        args = types.SimpleNamespace(resource_type=f"kubernetes:x:{kind}", name=kind, props=obj)
        policies["pod-security"].validate(args, out.append)
        return out

    assert [line for o in objects for line in reported(o)] == []
    (rc,) = [o for o in objects if o["kind"] == "RayCluster"]
    assert rc["metadata"]["namespace"] == "ray-gpudirect"
    moved = copy.deepcopy(rc)
    moved["metadata"]["namespace"] = "ray"
    lines = reported(moved)
    assert any("'tcpx-daemon': securityContext.capabilities.add is set" in x for x in lines)
    gd = copy.deepcopy(objects[1])
    gd["metadata"]["name"] = "team-a"  # privileged, but not the GPUDirect namespace
    assert any("privileged only for the GPUDirect namespace" in x for x in reported(gd))

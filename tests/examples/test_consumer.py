"""examples/consumer: another team's program reads the platform's outputs through a
StackReference and submits a RayJob (its program run under mocks, the StackReference answered
with the outputs the real platform program exports for the prod stack)."""

from __future__ import annotations

import copy
import runpy
from typing import Any

import pulumi
import pytest
from pulumi.runtime import settings as psettings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.kuberay.render import kubeconfig
from components.raycrs.crd import validate_manifest
from raygke.synth import read_stack_config, run_program
from tests.helpers import ROOT, needs_crds

PROGRAM = ROOT / "examples" / "consumer" / "__main__.py"
PLATFORM_STACK = "acme/ray-gke/prod"


@pytest.fixture(scope="module")
def platform_outputs() -> dict[str, Any]:
    """The prod stack's outputs from the real platform program; the kubeconfig (a secret, written
    as a marker by the render) rebuilt from the cluster outputs."""
    _, outputs = run_program(read_stack_config(ROOT / "Pulumi.prod.yaml"), "prod")
    outputs = dict(outputs)
    outputs["kubeconfig"] = kubeconfig(
        outputs["cluster_name"], outputs["cluster_dns_endpoint"], None
    )
    return outputs


class ConsumerMocks(pulumi.runtime.Mocks):
    def __init__(self, platform: dict[str, Any]) -> None:
        self.platform = platform
        self.resources: list[tuple[str, str, dict]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        self.resources.append((args.typ, args.name, dict(args.inputs)))
        if args.typ == "pulumi:pulumi:StackReference":
            assert args.inputs["name"] == PLATFORM_STACK
            return PLATFORM_STACK, {
                "name": PLATFORM_STACK,
                "outputs": self.platform,
                "secretOutputNames": ["kubeconfig"],
            }
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list | None]:
        return dict(args.args), []


def _prod_master_cidr() -> str:
    from components.stack.loader import load_stack_file

    return load_stack_file(ROOT / "Pulumi.prod.yaml").network.master_ipv4_cidr


PROD_MASTER_CIDR = _prod_master_cidr()


def run_consumer(platform: dict[str, Any], **config: str) -> ConsumerMocks:
    mocks = ConsumerMocks(platform)
    entries = {"ray-gke-consumer:platform_stack": PLATFORM_STACK}
    if platform.get("kuberay_mode") == "gke-addon" and "operator_cidr" not in config:
        config = {**config, "operator_cidr": PROD_MASTER_CIDR}
    entries.update({f"ray-gke-consumer:{k}": v for k, v in config.items()})
    pulumi.runtime.set_all_config(entries)
    psettings.ROOT.set(None)
    psettings.SETTINGS.rpc_manager.clear()
    psettings.SETTINGS.outputs.clear()
    pulumi.runtime.set_mocks(mocks, project="ray-gke-consumer", stack="dev", preview=False)
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(PROGRAM), run_name="__main__")))
    return mocks


def _of(mocks: ConsumerMocks, typ: str) -> list[dict]:
    return [i for t, _, i in mocks.resources if t == typ]


def test_consumer_submits_a_rayjob_from_the_platform_outputs(platform_outputs):
    mocks = run_consumer(platform_outputs)
    (provider,) = _of(mocks, "pulumi:providers:kubernetes")
    assert "gke.goog" in str(provider["kubeconfig"])  # the platform's kubeconfig (DNS endpoint)
    (job,) = _of(mocks, "kubernetes:ray.io/v1:RayJob")
    assert job["metadata"]["namespace"] == platform_outputs["namespace"] == "ray"
    pod = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "ray-serve"
    (env,) = pod["containers"][0]["env"]
    assert env == {
        "name": "CHECKPOINTS_URL",
        "value": platform_outputs["bucket_urls"]["checkpoints"],
    }
    assert env["value"] == "gs://ray-gke-prod-ray-prod-checkpoints"


@needs_crds
def test_consumer_rayjob_validates_against_the_platform_crd(platform_outputs):
    mocks = run_consumer(platform_outputs)
    (job,) = _of(mocks, "kubernetes:ray.io/v1:RayJob")
    manifest = {k: v for k, v in job.items() if k in ("apiVersion", "kind", "metadata", "spec")}
    assert validate_manifest(manifest) == []


def test_consumer_refuses_an_unknown_contract_version(platform_outputs):
    with pytest.raises(Exception, match=r"contract_version '2'; this program reads version '1'"):
        run_consumer({**platform_outputs, "contract_version": "2"})


def test_consumer_refuses_an_identity_the_platform_lacks(platform_outputs):
    with pytest.raises(Exception, match=r"identity 'ray-eval' is not a workload identity"):
        run_consumer(platform_outputs, identity="ray-eval")


def _k8s_objects(mocks: ConsumerMocks) -> list[dict]:
    keep = ("apiVersion", "kind", "metadata", "spec")
    out = []
    for typ in ("kubernetes:ray.io/v1:RayJob", "kubernetes:networking.k8s.io/v1:NetworkPolicy"):
        for inputs in _of(mocks, typ):
            obj = {k: v for k, v in inputs.items() if k in keep}
            obj.setdefault("kind", typ.rsplit(":", 1)[1])
            out.append(obj)
    return out


def _platform_guard_rails(stack: str = "prod") -> list[dict]:
    """The Namespace (PSA labels) and NetworkPolicies (default-deny first) the platform renders
    for ``stack``'s Ray namespace: what the consumer's objects land in."""
    from components.kuberay.namespace import namespace_manifest
    from components.stack.loader import load_stack_file
    from tests.components.kuberay.test_namespace import policies

    cfg = load_stack_file(ROOT / f"Pulumi.{stack}.yaml")
    return [namespace_manifest(cfg.kuberay), *policies(cfg)]


def test_consumer_rayjob_passes_the_platforms_own_security_checks(platform_outputs):
    """PSA restricted securityContext on every pod (head and submitter), token auth, and a
    NetworkPolicy of its own for the job's head inside the platform's default-deny namespace:
    the rules ``raygke check`` applies to the stack's own RayJobs
    (components/security/rules.py)."""
    from components.security.rules import security_problems

    mocks = run_consumer(platform_outputs)
    objects = _k8s_objects(mocks)
    assert sorted(o["kind"] for o in objects) == ["NetworkPolicy", "RayJob"]
    assert security_problems(_platform_guard_rails() + objects) == []
    (policy,) = [o for o in objects if o["kind"] == "NetworkPolicy"]
    (rule,) = policy["spec"]["ingress"]
    assert {"ipBlock": {"cidr": PROD_MASTER_CIDR}} in rule["from"]  # gke-addon: control plane

    # each rule bites: without the policy, the token auth or the securityContext
    job = next(o for o in objects if o["kind"] == "RayJob")
    alone = security_problems([*_platform_guard_rails(), job])
    assert any(p.startswith("network-policy: RayJob ray/checkpoint-report") for p in alone)
    no_auth = copy.deepcopy(job)
    no_auth["spec"]["rayClusterSpec"].pop("authOptions")
    assert any(
        p.startswith("ray-auth: RayJob ray/checkpoint-report")
        for p in security_problems([*_platform_guard_rails(), no_auth, policy])
    )
    no_sc = copy.deepcopy(job)
    no_sc["spec"]["submitterPodTemplate"]["spec"]["containers"][0].pop("securityContext")
    problems = security_problems([*_platform_guard_rails(), no_sc, policy])
    assert any("spec.submitterPodTemplate container 'ray-job-submitter'" in p for p in problems)


def test_consumer_on_a_helm_platform_admits_the_operator_pods(platform_outputs):
    from components.security.rules import security_problems

    mocks = run_consumer({**platform_outputs, "kuberay_mode": "helm"})
    objects = _k8s_objects(mocks)
    (policy,) = [o for o in objects if o["kind"] == "NetworkPolicy"]
    peers = policy["spec"]["ingress"][0]["from"]
    assert {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "kuberay-operator"}}} in peers
    assert security_problems(_platform_guard_rails("dev") + objects) == []


def test_consumer_on_a_gke_addon_platform_needs_the_operator_range(platform_outputs):
    mocks = ConsumerMocks(platform_outputs)
    assert mocks.platform["kuberay_mode"] == "gke-addon"
    with pytest.raises(Exception, match=r"set operator_cidr to its control plane range"):
        run_consumer(platform_outputs, operator_cidr="")

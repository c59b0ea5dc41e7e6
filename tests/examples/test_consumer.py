"""examples/consumer: another team's program reads the platform's outputs through a
StackReference and submits a RayJob (its program run under mocks, the StackReference answered
with the outputs the real platform program exports for the prod stack)."""

from __future__ import annotations

import runpy
from typing import Any

import pulumi
import pytest
from pulumi.runtime import settings as psettings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.builders.kuberay import kubeconfig
from components.checks.crd import validate_manifest
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


def run_consumer(platform: dict[str, Any], **config: str) -> ConsumerMocks:
    mocks = ConsumerMocks(platform)
    entries = {"ray-gke-consumer:platform_stack": PLATFORM_STACK}
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

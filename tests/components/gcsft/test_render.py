"""GCS fault tolerance in the render (components/gcsft/render.py, components/raycrs/serve.py):
a new stack's RayService gets ``gcsFaultToleranceOptions`` and the head what reads them, an old
stack keeps what it rendered (defaults epochs), and KubeRay's and Kubernetes' rules pass."""

from __future__ import annotations

import re
from typing import Any

import pytest

from components.gcsft import render as gr
from components.kernel.base import StackConfigError
from components.plan.plan import plan
from components.raycrs.crd import validate_manifests
from components.raycrs.operator import operator_problems
from components.raycrs.render import render_manifests
from components.security.rules import check_pod_security
from components.stack.loader import validate
from tests.helpers import WORKING_DIR, config, needs_crds

SERVICE = {
    "name": "lm",
    "checkpoint": "gs://ray-gke-test-ray-test-checkpoints/run",
    "node_pool": "l4",
}
V135 = {"name": "ray-test", "deletion_protection": False, "min_master_version": "1.35"}


def _cfg(**overrides: Any) -> Any:
    return validate(config(services=[dict(SERVICE)], cluster=dict(V135), **overrides))


def _service(cfg: Any, address: str | None = None) -> dict[str, Any]:
    (m,) = [
        m
        for m in render_manifests(cfg, WORKING_DIR, redis_address=address)
        if m["kind"] == "RayService"
    ]
    return m


def test_a_new_stack_s_rayservice_gets_gcs_fault_tolerance_and_its_head_reads_the_redis() -> None:
    cfg = _cfg()
    assert gr.ft_enabled(cfg.gcs_fault_tolerance, cfg.services)
    m = _service(cfg, "rediss://10.24.0.5:6378")
    rc = m["spec"]["rayClusterConfig"]
    assert rc["gcsFaultToleranceOptions"] == {
        "redisAddress": "rediss://10.24.0.5:6378",
        "redisPassword": {
            "valueFrom": {
                "fileKeyRef": {
                    "volumeName": "redis-env",
                    "path": "redis.env",
                    "key": "REDIS_PASSWORD",
                }
            }
        },
    }
    head = rc["headGroupSpec"]["template"]["spec"]
    (init,) = head["initContainers"]
    ray = head["containers"][0]
    assert init["image"] == ray["image"] and init["securityContext"] == ray["securityContext"]
    script = init["command"][-1]
    assert (
        "cat /var/run/secrets/redis/auth" in script and "> /var/run/redis-env/redis.env" in script
    )
    volumes = {v["name"]: v for v in head["volumes"]}
    assert volumes["redis-auth"]["csi"]["volumeAttributes"] == {
        "secretProviderClass": "gcs-redis-auth"
    }
    assert volumes["redis-env"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Mi"}
    assert volumes["redis-ca"]["configMap"] == {"name": "gcs-redis-ca"}
    assert {"name": "RAY_REDIS_CA_CERT", "value": "/etc/ray-gke/redis/ca.crt"} in ray["env"]
    # KubeRay sets REDIS_PASSWORD and RAY_REDIS_ADDRESS itself: neither is ours
    assert not {"REDIS_PASSWORD", "RAY_REDIS_ADDRESS"} & {e["name"] for e in ray["env"]}
    # workers need nothing of it (KubeRay gives them the 600 s reconnect timeout)
    (group,) = rc["workerGroupSpecs"]
    assert "initContainers" not in group["template"]["spec"]
    assert operator_problems(m) == []
    assert check_pod_security([m]) == []


@needs_crds
def test_the_rendered_options_fit_kuberay_s_crd() -> None:
    assert validate_manifests([_service(_cfg())]) == []


def test_offline_the_address_is_the_first_host_of_the_psa_range() -> None:
    cfg = _cfg(network={"psa_cidr": "10.30.0.0/24"})
    rc = _service(cfg)["spec"]["rayClusterConfig"]
    assert rc["gcsFaultToleranceOptions"]["redisAddress"] == "rediss://10.30.0.1:6378"


def test_opted_out_or_without_services_nothing_is_rendered() -> None:
    cfg = _cfg(gcs_fault_tolerance={"enabled": False})
    assert not gr.ft_enabled(cfg.gcs_fault_tolerance, cfg.services)
    rc = _service(cfg)["spec"]["rayClusterConfig"]
    assert "gcsFaultToleranceOptions" not in rc
    assert "initContainers" not in rc["headGroupSpec"]["template"]["spec"]
    plain = validate(config())
    assert not gr.ft_enabled(plain.gcs_fault_tolerance, plain.services)


def test_an_old_stack_keeps_no_fault_tolerance_and_new_cluster_upgrades() -> None:
    data = config(
        defaults="2026-12-07",
        services=[{**SERVICE, "gateway": {}}],
        cluster=dict(V135),
    )
    cfg = validate(data)
    held = {h.path: h.value for h in cfg.held_defaults}
    assert held == {
        "gcs_fault_tolerance.enabled": False,
        "services[lm].upgrade_strategy": "NewCluster",
    }
    m = _service(cfg)
    assert "gcsFaultToleranceOptions" not in m["spec"]["rayClusterConfig"]
    assert m["spec"]["upgradeStrategy"] == {"type": "NewCluster"}
    notes = " ".join(h.note() for h in cfg.held_defaults)
    assert "To opt in: enabled: true" in notes
    # the same file written for today's defaults gets both
    new = validate({**data, "defaults": "2026-12-08"})
    assert new.held_defaults == ()
    m = _service(new)
    assert m["spec"]["upgradeStrategy"]["type"] == "NewClusterWithIncrementalUpgrade"
    assert "gcsFaultToleranceOptions" in m["spec"]["rayClusterConfig"]


def test_names_fit_their_apis() -> None:
    cfg = validate(config(cluster={**V135, "name": "a" * 40}, network={"name": "n" * 63}))
    assert len(gr.instance_name(cfg.cluster.name)) <= 40 and gr.instance_name(
        cfg.cluster.name
    ).startswith("a" * 30)
    assert len(gr.psa_range_name(cfg.network.name)) <= 63
    assert gr.instance_name(_cfg().cluster.name) == "ray-test-gcs"
    assert gr.auth_secret_id(_cfg().cluster.name) == "ray-test-redis-auth"


def test_the_auth_class_and_ca_config_map() -> None:
    cfg = _cfg()
    spc = gr.auth_provider_class(plan(cfg).context, "ray")
    assert spc["metadata"]["namespace"] == "ray"
    assert (
        'resourceName: "projects/ray-gke-test/secrets/ray-test-redis-auth/versions/latest"'
        in spc["spec"]["parameters"]["secrets"]
    )
    assert gr.ca_config_map("ray", "PEM")["data"] == {"ca.crt": "PEM"}
    assert gr.redis_namespaces(plan(cfg)) == ["ray"]
    assert gr.redis_head_readers(cfg.services) == ["ray-serve-head"]


def test_a_psa_range_smaller_than_a_slash_24_is_refused() -> None:
    with pytest.raises(
        StackConfigError, match=re.escape("psa_cidr '10.24.0.0/25' is smaller than a /24")
    ):
        _cfg(network={"psa_cidr": "10.24.0.0/25"})

"""``gpu_networking: gpudirect`` (issue 49 item 5): GPUDirect-TCPX / -TCPXO's RxDM sidecar and NCCL
plugin in the Ray workers of A3 High / A3 Mega pools, in a namespace of their own whose Pod
Security level allows exactly that (components/gpunet/gpudirect.py, components/catalog/gpudirect.py,
components/kuberay/namespace.py, components/security/rules.py)."""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

import pytest
import yaml

from components.capacity.render import render_capacity
from components.catalog.gpudirect import RXDM
from components.config.epochs import read_epoch
from components.gpunet.gpudirect import admission_policy, gpudirect_grants
from components.gpunet.render import gpu_vpcs, gpunet_objects
from components.kernel.base import StackConfigError
from components.plan.naming import workload_identity_member
from components.plan.plan import namespace_accounts, plan
from components.raycrs.render import render_manifests
from components.security.rules import RXDM_SHAPES, check_pod_security, pod_templates
from components.stack.checks import check_stack
from components.stack.loader import validate
from tests.components.kuberay.test_namespace import guards, namespaces
from tests.helpers import ROOT, WORKING_DIR, config

# Google's facts, written out from the sources (GoogleCloudPlatform/container-engine-accelerators
# @992db81: gpudirect-tcpx(o)/nccl-test-unprivileged-without-hostnetwork.yaml,
# gpudirect-tcpxo/nccl-tcpxo-installer.yaml, nri_device_injector/nri-device-injector.yaml;
# cluster-toolkit @1047080 modules/compute/gke-node-pool/gpu-direct-workload/scripts/*.py).
TCPX_DAEMON = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12"
TCPXO_DAEMON = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"
TCPX_INSTALLER = (
    "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9"
)
TCPXO_INSTALLER = (
    "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15"
)
INJECTOR = (
    "gcr.io/gke-release/nri-device-injector"
    "@sha256:6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970"
)
TCPX_COMMAND = [
    "/tcpgpudmarxd/build/app/tcpgpudmarxd",
    "--gpu_nic_preset",
    "a3vm",
    "--gpu_shmem_type",
    "fd",
    "--uds_path",
    "/run/tcpx",
    "--setup_param",
    '\\"--verbose 128 2 0 \\"',
]
GPU_DEVICES = [f"/dev/nvidia{i}" for i in range(8)] + ["/dev/nvidiactl", "/dev/nvidia-uvm"]
LIB = "/home/kubernetes/bin/nvidia/lib64"


def _prod_data(pool: str = "h100", value: str = "gpudirect") -> dict[str, Any]:
    """Prod's stack file as data, with ``pool``'s ``gpu_networking`` set to ``value``."""
    raw = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())["config"]
    data = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("ray-gke:")}
    for p in data["node_pools"]:
        if p["name"] == pool:
            p["gpu_networking"] = value
    return data


def _objects(cfg: Any) -> list[dict[str, Any]]:
    vpcs = gpu_vpcs(cfg.node_pools, cfg.zones, cfg.network)
    return gpunet_objects(vpcs, cfg.node_pools, cfg.kuberay.namespace)


@cache
def _prod_gpudirect() -> Any:
    return validate(_prod_data())


def _mega_data() -> dict[str, Any]:
    """The scale stack's A3 Mega pool with gpudirect."""
    raw = yaml.safe_load((ROOT / "Pulumi.scale.yaml").read_text())["config"]
    data = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("ray-gke:")}
    for p in data["node_pools"]:
        if p["name"] == "a3-mega":
            p["gpu_networking"] = "gpudirect"
    return data


def _template(manifests: list[dict], kind: str, name: str, group: str) -> dict[str, Any]:
    (m,) = [x for x in manifests if x["kind"] == kind and x["metadata"]["name"] == name]
    for path, _, tmpl in pod_templates(m):
        if f"workerGroupSpecs[{group}]" in path:
            return tmpl
    raise AssertionError(f"no worker group {group} in {kind} {name}")


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


# ------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("gpu", "zone", "machine", "allowed"),
    [
        ({"type": "nvidia-l4", "count": 1}, "us-east5-b", "g2-standard-4", "allowed here: auto"),
        (
            {"type": "nvidia-tesla-a100", "count": 8},
            "us-central1-b",
            "a2-highgpu-8g",
            "allowed here: auto",
        ),
        ({"type": "nvidia-h100-80gb", "count": 4}, "us-east5-a", "a3-highgpu-4g", "auto"),
        (  # A4: GPUDirect RDMA, no sidecar
            {"type": "nvidia-b200", "count": 8},
            "us-central1-b",
            "a4-highgpu-8g",
            "allowed here: auto, off, rdma",
        ),
        (  # A3 Ultra: GPUDirect RDMA, no sidecar
            {"type": "nvidia-h200-141gb", "count": 8},
            "us-central1-b",
            "a3-ultragpu-8g",
            "allowed here: auto, off, rdma",
        ),
    ],
)
def test_gpudirect_on_a_family_without_tcpx_or_tcpxo_is_refused_at_its_field(
    gpu: dict[str, Any], zone: str, machine: str, allowed: str
) -> None:
    region = zone.rsplit("-", 1)[0]
    data = config(
        region=region,
        zones=[zone],
        node_pools=[{"name": "g", "gpu": gpu, "gpu_networking": "gpudirect", "zones": [zone]}],
        nap={"resource_limits": {"cpu": 512, "memory": 16384}},
    )
    with pytest.raises(StackConfigError) as e:
        validate(data)
    (line,) = [p for p in e.value.problems if p.path == "node_pools[g].gpu_networking"]
    assert f"'gpudirect' does not fit machine type {machine}" in line
    assert "a3-highgpu-8g (A3 High: gpu {type: nvidia-h100-80gb, count: 8}" in line
    assert "a3-megagpu-8g (A3 Mega: gpu {type: nvidia-h100-mega-80gb, count: 8}" in line
    assert allowed in line
    if "rdma" in allowed:
        assert "GPUDirect RDMA, whose gIB NCCL plugin needs no RxDM sidecar" in line


def test_a_file_using_gpudirect_is_dated_by_it_and_its_refusal_stays_an_error() -> None:
    """The compatibility rule: the value is a 2026-12-07 feature (MARKERS); its refusal concerns
    the new value only, so an undated file using it wrongly is still refused, not warned."""
    assert read_epoch({"node_pools": [{"gpu_networking": "gpudirect"}]}).date == "2026-12-07"
    assert read_epoch({"node_pools": [{"gpu_networking": "tcpx"}]}).date == "2026-12-03"
    data = config(
        node_pools=[
            {"name": "l4", "gpu": {"type": "nvidia-l4", "count": 1}, "gpu_networking": "gpudirect"}
        ]
    )
    del data["defaults"]
    with pytest.raises(StackConfigError) as e:
        validate(data)
    assert any(p.path == "node_pools[l4].gpu_networking" for p in e.value.problems)


# -------------------------------------------------------------------------- prod, opted in (TCPX)


def test_the_default_stays_socket_transport_with_nothing_privileged() -> None:
    cfg = validate(_prod_data(value="auto"))
    ctx = plan(cfg).context
    assert ctx.gpudirect_namespace is None and dict(ctx.ray_namespaces) == {}
    manifests = render_manifests(cfg, WORKING_DIR)
    tmpl = _template(manifests, "RayCluster", "training", "h100")
    assert [c["name"] for c in tmpl["spec"]["containers"]] == ["ray-worker"]
    assert _env(tmpl["spec"]["containers"][0])["NCCL_NET"] == "Socket"
    kinds = {o["kind"] for o in [*namespaces(cfg), *_objects(cfg)]}
    assert "ValidatingAdmissionPolicy" not in kinds
    assert len(namespaces(cfg)) == 1
    assert gpudirect_grants(plan(cfg)) == []


def test_prod_opted_in_moves_the_h100_clusters_to_their_own_namespace() -> None:
    cfg = _prod_gpudirect()
    ctx = plan(cfg).context
    assert ctx.gpudirect_namespace == "ray-gpudirect"
    # the RayCluster with an h100 group, the jobs on h100 (own clusters): nothing else
    assert dict(ctx.ray_namespaces) == {
        "training": "ray-gpudirect",
        "train-lm-h100": "ray-gpudirect",
        "finetune-llama-h100": "ray-gpudirect",
    }
    where = {m["metadata"]["name"]: m["metadata"]["namespace"] for m in render_manifests(cfg, "x")}
    assert where["training"] == where["train-lm-h100"] == "ray-gpudirect"
    assert where["prepare-corpus"] == where["train-lm-jax-v6e"] == where["lm"] == "ray"


def test_the_h100_workers_run_the_tcpx_sidecar_as_google_documents() -> None:
    cfg = _prod_gpudirect()
    manifests = render_manifests(cfg, WORKING_DIR)
    tmpl = _template(manifests, "RayCluster", "training", "h100")
    ray, rxdm = tmpl["spec"]["containers"]
    assert ray["name"] == "ray-worker" and rxdm["name"] == "tcpx-daemon"  # KubeRay: Ray first
    assert rxdm["image"] == TCPX_DAEMON and rxdm["command"] == TCPX_COMMAND
    assert rxdm["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"add": ["NET_ADMIN"]},
        "runAsNonRoot": False,
        "runAsUser": 0,
        "runAsGroup": 0,
    }
    assert {m["name"]: m["mountPath"] for m in rxdm["volumeMounts"]} == {
        "libraries": "/usr/local/nvidia/lib64",
        "tcpx-socket": "/run/tcpx",
        "sys": "/hostsysfs",
        "proc-sys": "/hostprocsysfs",
    }
    volumes = {v["name"]: v for v in tmpl["spec"]["volumes"]}
    assert {n: volumes[n]["hostPath"]["path"] for n in ("libraries", "sys", "proc-sys")} == {
        "libraries": LIB,
        "sys": "/sys",
        "proc-sys": "/proc/sys",
    }
    assert volumes["tcpx-socket"] == {"name": "tcpx-socket", "emptyDir": {}}
    devices = tmpl["metadata"]["annotations"]["devices.gke.io/container.tcpx-daemon"]
    assert yaml.safe_load(devices) == [{"path": d} for d in GPU_DEVICES]
    # the Ray container: restricted as ever, Google's TCPX NCCL settings, the socket at /tmp
    assert ray["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert ray["securityContext"]["runAsNonRoot"] is True
    env = _env(ray)
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
    assert env["NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"] == "eth1,eth2,eth3,eth4"
    assert env["NCCL_GPUDIRECTTCPX_CTRL_DEV"] == "eth0" and "NCCL_NET" not in env
    mounts = {m["name"]: m for m in ray["volumeMounts"]}
    assert mounts["tcpx-socket"]["mountPath"] == "/tmp"
    assert mounts["libraries"] == {
        "name": "libraries",
        "mountPath": "/usr/local/nvidia/lib64",
        "readOnly": True,
    }
    assert "sys" not in mounts and "proc-sys" not in mounts
    # the sidecar's room comes out of the Ray container (requests = limits: Guaranteed)
    assert rxdm["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"cpu": "1", "memory": "2Gi"},
    }
    plain = _template(
        render_manifests(validate(_prod_data(value="auto")), WORKING_DIR),
        "RayCluster",
        "training",
        "h100",
    )["spec"]["containers"][0]["resources"]["requests"]
    from contract.quantity import parse_quantity

    got, before = ray["resources"]["requests"], plain
    assert parse_quantity(before["cpu"]) - parse_quantity(got["cpu"]) == 1.0
    assert parse_quantity(before["memory"]) - parse_quantity(got["memory"]) == 2 * 2**30
    # the other groups of the same cluster: no sidecar, no hostPath
    for group in ("cpu", "tpu-v6e"):
        other = _template(manifests, "RayCluster", "training", group)["spec"]
        assert [c["name"] for c in other["containers"]] == ["ray-worker"]
        assert not any("hostPath" in v for v in other.get("volumes", []))


def test_the_nodes_get_googles_installer_and_device_injector_on_h100_only() -> None:
    objs = {
        o["metadata"]["name"]: o for o in _objects(_prod_gpudirect()) if o["kind"] == "DaemonSet"
    }
    assert sorted(objs) == ["device-injector", "nccl-tcpx-installer"]
    for ds in objs.values():
        assert ds["metadata"]["namespace"] == "kube-system"
        terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == ["nvidia-h100-80gb"]
    (init,) = objs["nccl-tcpx-installer"]["spec"]["template"]["spec"]["initContainers"]
    assert init["image"] == TCPX_INSTALLER
    assert "cp -r /var/lib/tcpx/lib64/. /usr/local/nvidia/lib64" in init["args"][0]
    inj = objs["device-injector"]["spec"]["template"]["spec"]
    assert inj["containers"][0]["image"] == INJECTOR
    assert {v["hostPath"]["path"] for v in inj["volumes"]} == {"/dev", "/var/run/nri"}


def test_the_gpudirect_namespace_allows_exactly_the_sidecar_and_has_its_guards() -> None:
    cfg = _prod_gpudirect()
    ray_ns, gd = namespaces(cfg)
    assert ray_ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    labels = gd["metadata"]["labels"]
    assert gd["metadata"]["name"] == "ray-gpudirect"
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    assert labels["pod-security.kubernetes.io/audit"] == "restricted"
    assert labels["ray-gke.io/gpudirect"] == "rxdm"
    objs = guards(cfg)
    in_gd = sorted(
        (o["kind"], o["metadata"]["name"])
        for o in objs
        if o["metadata"]["namespace"] == "ray-gpudirect"
    )
    assert ("NetworkPolicy", "default-deny-ingress") in in_gd
    assert ("ResourceQuota", "ray-quota") in in_gd and ("LimitRange", "ray-defaults") in in_gd
    for name in ("training", "train-lm-h100", "finetune-llama-h100"):
        assert ("NetworkPolicy", f"{name}-ray-head") in in_gd
        assert not any(
            o["metadata"]["name"] == f"{name}-ray-head" and o["metadata"]["namespace"] == "ray"
            for o in objs
        )
    # the whole rendered stack passes raygke check: CRDs, operator rules, scheduling (the
    # sidecar's room included), quota, names and the secure-default rules with the exception
    assert check_stack(cfg) == []


def test_kueue_admits_from_both_namespaces_and_the_gpudirect_one_has_its_queue() -> None:
    cfg = _prod_gpudirect()
    objs = render_capacity(plan(cfg), cfg.capacity)
    (cq,) = [o for o in objs if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "ml-batch"]
    assert cq["spec"]["namespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "In",
                "values": ["ray", "ray-gpudirect"],
            }
        ]
    }
    queues = sorted(
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in objs
        if o["kind"] == "LocalQueue"
    )
    assert queues == [("ray", "ml-batch"), ("ray", "research"), ("ray-gpudirect", "ml-batch")]


def test_kueue_in_the_gpudirect_namespace_is_refused() -> None:
    data = _prod_data()
    data["capacity"]["kueue"]["namespace"] = "ray-gpudirect"
    with pytest.raises(StackConfigError) as e:
        validate(data)
    (line,) = [p for p in e.value.problems if p.path == "capacity.kueue.namespace"]
    assert line.rule == "gpudirect_kueue_namespace"
    assert "'ray-gpudirect' is the GPUDirect namespace" in line


def test_the_moved_identity_gets_its_accounts_and_workload_identity_there() -> None:
    """The Workload Identity members the security component binds (one per namespace and KSA
    of components.plan.plan.namespace_accounts)."""
    cfg = _prod_gpudirect()
    members = {
        workload_identity_member(cfg.project, ns, a.name) for ns, a in namespace_accounts(plan(cfg))
    }
    pool = "ray-gke-prod.svc.id.goog"
    assert f"serviceAccount:{pool}[ray-gpudirect/ray-train]" in members
    assert f"serviceAccount:{pool}[ray-gpudirect/ray-train-head]" in members
    assert f"serviceAccount:{pool}[ray/ray-train]" in members
    assert not any("ray-gpudirect/ray-serve" in m for m in members)  # lm stays in ray


def test_raygke_check_says_what_the_choice_grants() -> None:
    (w,) = gpudirect_grants(plan(_prod_gpudirect()))
    assert w.severity == "warning" and w.path == "node_pools[h100].gpu_networking"
    for words in (
        "tcpx-daemon sidecar",
        "as root with NET_ADMIN",
        "/proc/sys, /sys",
        "namespace ray-gpudirect at Pod Security privileged",
        "ValidatingAdmissionPolicy",
        "finetune-llama-h100, train-lm-h100, training",
        "every other Ray pod stays restricted in ray",
    ):
        assert words in w, words


# ---------------------------------------------------------------------------- A3 Mega (TCPXO)


def test_a3_mega_gets_tcpxo_its_pre_installation_and_aperture_devices() -> None:
    cfg = validate(_mega_data())
    tmpl = _template(render_manifests(cfg, WORKING_DIR), "RayJob", "train-lm-a3-mega", "a3-mega")
    ray, rxdm = tmpl["spec"]["containers"]
    assert rxdm["name"] == "tcpxo-daemon" and rxdm["image"] == TCPXO_DAEMON
    assert rxdm["securityContext"]["capabilities"] == {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}
    assert "/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8" in rxdm["args"][0]
    devices = yaml.safe_load(
        tmpl["metadata"]["annotations"]["devices.gke.io/container.tcpxo-daemon"]
    )
    assert devices == [{"path": d} for d in [*GPU_DEVICES, "/dev/dmabuf_import_helper"]]
    env = _env(ray)
    assert env["NCCL_FASTRAK_IFNAME"] == "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"
    assert env["NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY"] == "/dev/aperture_devices"
    assert {m["mountPath"] for m in ray["volumeMounts"]} >= {
        "/dev/aperture_devices",
        "/usr/local/nvidia/lib64",
    }
    (ds,) = [o for o in _objects(cfg) if o["metadata"]["name"] == "nccl-tcpxo-installer"]
    pre, inst = ds["spec"]["template"]["spec"]["initContainers"]
    assert pre["name"] == "pre-installation" and pre["image"] == "ubuntu"
    assert pre["command"][:6] == ["nsenter", "-at", "1", "--", "sh", "-c"]
    assert "/sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT" in pre["command"][6]
    assert inst["image"] == TCPXO_INSTALLER
    assert inst["args"][0].startswith("set -ex\nchmod 755 /scripts/container_entry.sh\n")
    # the RDMA pool of the same stack is as it was: its installer, no sidecar
    a4 = _template(render_manifests(cfg, WORKING_DIR), "RayJob", "train-lm-a4", "a4")
    assert [c["name"] for c in a4["spec"]["containers"]] == ["ray-worker"]
    assert check_stack(cfg) == []


# ------------------------------------------------------------------- the exception, in the rules


def _worker_pod(cfg: Any, kind: str, name: str, group: str, namespace: str) -> dict[str, Any]:
    tmpl = _template(render_manifests(cfg, WORKING_DIR), kind, name, group)
    meta = {"name": "w", "namespace": namespace, **copy.deepcopy(tmpl.get("metadata", {}))}
    return {"kind": "Pod", "metadata": meta, "spec": copy.deepcopy(tmpl["spec"])}


def test_the_rules_name_the_exception_for_that_namespace_only() -> None:
    cfg = _prod_gpudirect()
    pod = _worker_pod(cfg, "RayCluster", "training", "h100", "ray-gpudirect")
    # a Pod is not a Ray worker: the exception is a worker group's, in a Ray object
    assert check_pod_security([pod])
    (rc,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["metadata"]["name"] == "training"]
    assert check_pod_security([rc]) == []
    elsewhere = copy.deepcopy(rc)
    elsewhere["metadata"]["namespace"] = "ray"
    lines = [str(p) for p in check_pod_security([elsewhere])]
    assert any("'tcpx-daemon': securityContext.capabilities.add is set" in x for x in lines)
    assert any("volume 'sys': hostPath" in x for x in lines)


def _h100_group(rc: dict[str, Any]) -> dict[str, Any]:
    return next(g for g in rc["spec"]["workerGroupSpecs"] if g["groupName"] == "h100")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (
            lambda s: s["containers"][1]["securityContext"]["capabilities"]["add"].append(
                "SYS_ADMIN"
            ),
            "capabilities.add holds SYS_ADMIN, beyond the RxDM sidecar's NET_ADMIN",
        ),
        (lambda s: s["containers"][1]["securityContext"].update(privileged=True), "privileged"),
        (
            lambda s: s["containers"][1].update(image="example.com/tcpgpudmarxd-dev:v2.0.12"),
            "'tcpx-daemon': securityContext.capabilities.add is set",
        ),
        (
            lambda s: s["nodeSelector"].update({"cloud.google.com/gke-accelerator": "nvidia-l4"}),
            "'tcpx-daemon': runAsNonRoot is not true",
        ),
        (
            lambda s: s["containers"][0]["volumeMounts"].append(
                {"name": "sys", "mountPath": "/sys"}
            ),
            "mounts hostPath /sys (volume 'sys'), which only the RxDM sidecar may mount",
        ),
        (
            lambda s: s["volumes"].append({"name": "root", "hostPath": {"path": "/"}}),
            "volume 'root': hostPath",
        ),
        (
            lambda s: s["containers"][0]["securityContext"]["capabilities"].update(
                add=["NET_ADMIN"]
            ),
            "'ray-worker': securityContext.capabilities.add is set",
        ),
    ],
)
def test_anything_beyond_the_sidecar_is_refused_in_the_gpudirect_namespace(change, says) -> None:
    cfg = _prod_gpudirect()
    (rc,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["metadata"]["name"] == "training"]
    rc = copy.deepcopy(rc)
    change(_h100_group(rc)["template"]["spec"])
    assert any(says in str(p) for p in check_pod_security([rc])), check_pod_security([rc])


def test_the_sidecar_in_a_head_pod_is_refused() -> None:
    (rc,) = [
        m
        for m in render_manifests(_prod_gpudirect(), WORKING_DIR)
        if m["metadata"]["name"] == "training"
    ]
    rc = copy.deepcopy(rc)
    head = rc["spec"]["headGroupSpec"]["template"]["spec"]
    worker = _h100_group(rc)["template"]["spec"]
    head["containers"].append(worker["containers"][1])
    head["nodeSelector"] = dict(worker["nodeSelector"])
    assert any(
        "'tcpx-daemon': runAsNonRoot is not true" in str(p) for p in check_pod_security([rc])
    )


@pytest.mark.parametrize(
    ("labels", "ok"),
    [
        ({}, True),
        ({"ray-gke.io/gpudirect": None}, False),
        ({"pod-security.kubernetes.io/audit": "privileged"}, False),
        ({"pod-security.kubernetes.io/warn": "baseline"}, False),
    ],
)
def test_only_the_gpudirect_namespace_may_enforce_privileged(labels, ok) -> None:
    gd = copy.deepcopy(namespaces(_prod_gpudirect())[1])
    for k, v in labels.items():
        if v is None:
            gd["metadata"]["labels"].pop(k)
        else:
            gd["metadata"]["labels"][k] = v
    assert (check_pod_security([gd]) == []) is ok
    renamed = copy.deepcopy(namespaces(_prod_gpudirect())[1])
    renamed["metadata"]["name"] = "ray"
    (line,) = check_pod_security([renamed])
    assert "privileged only for the GPUDirect namespace" in line


def test_the_rules_write_out_the_catalogs_sidecars() -> None:
    for r in RXDM.values():
        shape = RXDM_SHAPES[r.container]
        assert r.image.startswith(shape.image_prefix)
        assert shape.capabilities == r.capabilities and shape.accelerator == r.accelerator
        assert shape.host_paths == frozenset(r.host_paths.values())
        assert shape.shared_paths == frozenset(
            r.host_paths[n] for n in r.worker_mounts if n in r.host_paths
        )


# ------------------------------------------------------------------- the admission policy (CEL)


def _cel_env() -> Any:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_strings

    return cel.NewEnv(variables={"object": cel.Type.DYN}, extensions=[ext_strings.ExtStrings()])


@cache
def _policy() -> tuple[dict[str, Any], dict[str, Any]]:
    policy, binding = admission_policy("ray-gpudirect", ["tcpx", "tcpxo"])
    return policy, binding


def _denials(pod: dict[str, Any]) -> list[str]:
    """The messages of the policy's validations that do not hold for ``pod`` (the API server's
    answer), its ``variables`` expanded in place (each is a pure expression)."""
    policy, _ = _policy()
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}

    def expand(e: str) -> str:
        while "variables." in e:
            e = re.sub(r"variables\.(\w+)", lambda m: f"({variables[m.group(1)]})", e)
        return e

    env = _cel_env()
    out = []
    for v in policy["spec"]["validations"]:
        result = env.compile(expand(v["expression"])).eval(data={"object": pod}).value()
        if result is not True:
            out.append(v["message"])
    return out


def test_the_admission_policy_is_bound_to_the_gpudirect_namespace_and_fails_closed() -> None:
    policy, binding = _policy()
    assert policy["spec"]["failurePolicy"] == "Fail"
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rule["resources"] == ["pods", "pods/ephemeralcontainers"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert binding["spec"]["matchResources"]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "ray-gpudirect"}
    }
    kinds = {o["kind"] for o in _objects(_prod_gpudirect())}
    assert {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= kinds


def test_the_admission_policy_admits_every_pod_the_stack_renders() -> None:
    for cfg in (_prod_gpudirect(), validate(_mega_data())):
        for m in render_manifests(cfg, WORKING_DIR):
            for path, _, tmpl in pod_templates(m):
                pod = {"metadata": tmpl.get("metadata", {}), "spec": tmpl["spec"]}
                assert _denials(pod) == [], (m["metadata"]["name"], path)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda s: s.update(hostNetwork=True), "host namespaces"),
        (lambda s: s["volumes"].append({"name": "r", "hostPath": {"path": "/"}}), "volumes"),
        (lambda s: s["containers"][1]["securityContext"].update(privileged=True), "privileged"),
        (
            lambda s: s["containers"][1]["securityContext"]["capabilities"]["add"].append(
                "SYS_ADMIN"
            ),
            "capabilities",
        ),
        (lambda s: s["containers"][1].update(image="evil.example/tcpgpudmarxd-dev:x"), "non-root"),
        (
            lambda s: s["containers"][0]["securityContext"].update(runAsUser=0),
            "non-root",
        ),
        (
            lambda s: s["containers"][0]["volumeMounts"].append({"name": "sys", "mountPath": "/s"}),
            "hostPath mounts",
        ),
        (
            lambda s: s["nodeSelector"].update({"cloud.google.com/gke-accelerator": "x"}),
            "volumes",  # not on its accelerator: not the sidecar, so no hostPath either
        ),
        (
            lambda s: s.update(
                initContainers=[
                    {"name": "i", "image": "i", "securityContext": {"privileged": True}}
                ]
            ),
            "init containers",
        ),
        (
            lambda s: s.update(ephemeralContainers=[{"name": "debug", "image": "busybox"}]),
            "ephemeral containers",
        ),
        (
            lambda s: s["securityContext"].update(
                sysctls=[{"name": "kernel.msgmax", "value": "1"}]
            ),
            "sysctls",
        ),
    ],
)
def test_the_admission_policy_denies_anything_beyond_the_sidecar(change, says) -> None:
    pod = _worker_pod(_prod_gpudirect(), "RayCluster", "training", "h100", "ray-gpudirect")
    assert _denials(pod) == []
    change(pod["spec"])
    denied = _denials(pod)
    assert any(says in d for d in denied), denied


# ------------------------------------------------------------------ the program, policy pack


def test_the_program_renders_the_namespace_and_the_policy_pack_passes() -> None:
    from tests.helpers import check_records, render

    records, _ = render(_prod_data())
    by = {(r["type"].rsplit(":", 1)[-1], r["name"]): r["inputs"] for r in records}
    assert by[("Namespace", "kuberay-ns-gpudirect")]["metadata"]["name"] == "ray-gpudirect"
    assert (
        "ValidatingAdmissionPolicy",
        "gpunet-k8s-validatingadmissionpolicy-ray-gke-gpudirect-rxdm",
    ) in by
    ksa = by[("ServiceAccount", "kuberay-gpudirect-ksa-ray-train")]["metadata"]
    assert ksa["namespace"] == "ray-gpudirect"
    wi = by[("IAMMember", "access-wi-gpudirect-ray-train")]
    assert wi["member"].endswith("[ray-gpudirect/ray-train]")
    secrets = {
        i["metadata"]["name"]: i["metadata"]["namespace"]
        for (t, _), i in by.items()
        if t == "Secret" and isinstance(i.get("metadata"), dict)
    }
    assert secrets["training-ray-auth"] == "ray-gpudirect"
    assert secrets["lm-ray-auth"] == "ray"
    # the pack's rules, each Kubernetes object on its own as the pack feeds them, pass
    assert check_records(records) == []


def test_opting_in_moves_the_ray_objects_and_replaces_no_node_pool() -> None:
    """What ``raygke diff`` shows for prod's h100 pool going from auto to gpudirect: the pool and
    every GCP network resource unchanged (same NICs), the Ray objects on it replaced (their
    namespace), the namespace, its guards, installer and admission policy created."""
    from raygke.diff.compare import compare
    from tests.helpers import render

    base, _ = render(_prod_data(value="auto"), "prod")
    head, _ = render(_prod_data(), "prod")
    plan_ = compare(base, head, "prod")
    ops = {(c.type.rsplit(":", 1)[-1], c.name): c.op for c in plan_.changes}
    assert not any(t in ("NodePool", "Network", "Subnetwork", "Cluster") for t, _ in ops)
    assert ops[("RayCluster", "ray-raycluster-training")] == "replace"
    assert ops[("RayJob", "ray-rayjob-train-lm-h100")] == "replace"
    assert ("RayJob", "ray-rayjob-prepare-corpus") not in ops
    assert ops[("Namespace", "kuberay-ns-gpudirect")] == "create"
    assert ops[("DaemonSet", "gpunet-k8s-daemonset-nccl-tcpx-installer")] == "create"
    assert ops[("DaemonSet", "gpunet-k8s-daemonset-device-injector")] == "create"


def test_docs_say_what_the_choice_grants() -> None:
    security = (ROOT / "docs" / "security.md").read_text()
    deploying = (ROOT / "docs" / "deploying.md").read_text()
    for text in (security, deploying):
        assert "gpu_networking: gpudirect" in text
    for words in ("NET_ADMIN", "ValidatingAdmissionPolicy", "privileged", "-gpudirect"):
        assert words in security, words

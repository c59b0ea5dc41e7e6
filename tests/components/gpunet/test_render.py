"""GPU networking renders against the facts of Google's pages and manifests, field by field
(components/gpunet/render.py; the facts' sources: components/catalog/gpu_network.py)."""

from __future__ import annotations

import ipaddress
import json

import pytest

from components.catalog.gpu_network import (
    GPU_NET_FAMILIES,
    INSTALLER_NAMES,
    nccl_env,
)
from components.config.stack import StackConfig
from components.gpunet.render import (
    gpu_vpcs,
    gpunet_objects,
    installer_daemonsets,
    multi_network_objects,
    pool_networks,
    worker_pod_extras,
)
from components.gpunet.rules import multi_node_jobs_without_gpu_networking
from components.kernel.base import StackConfigError
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from components.security.rules import INSTALLER_EXEMPT, check_pod_security
from components.stack.loader import validate
from components.stack.rules import rule_problems
from tests.helpers import WORKING_DIR, config, stack

# Google's facts, written out from the sources (not read from the catalog): pod interfaces of a
# workload pod (container-engine-accelerators gpudirect-tcpxo/nccl-test-unprivileged-without-
# hostnetwork.yaml, gpudirect-rdma/nccl-test.yaml), the RDMA NCCL settings (cluster-toolkit
# examples/machine-learning/a3-ultragpu-8g/nemo-framework/Dockerfile) and the TCPXO NCCL
# interfaces (gpudirect-tcpxo/README.md: NCCL_FASTRAK_IFNAME=eth1,...,eth8).
TCPXO_INTERFACES = [{"interfaceName": "eth0", "network": "default"}] + [
    {"interfaceName": f"eth{i}", "network": f"vpc{i}"} for i in range(1, 9)
]
RDMA_INTERFACES = [{"interfaceName": "eth0", "network": "default"}] + [
    {"interfaceName": f"eth{j + 2}", "network": f"rdma-{j}"} for j in range(8)
]
RDMA_ENV = {
    "NCCL_NET": "gIB",
    "NCCL_CROSS_NIC": "0",
    "NCCL_NET_GDR_LEVEL": "PIX",
    "NCCL_P2P_NET_CHUNKSIZE": "131072",
    "NCCL_NVLS_CHUNKSIZE": "524288",
    "NCCL_IB_ADAPTIVE_ROUTING": "1",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_IB_TC": "52",
    "NCCL_IB_FIFO_TC": "84",
}
TCPXO_IFNAMES = "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"


@pytest.fixture(scope="module")
def scale():
    return stack("scale")


def _vpcs(cfg):
    return gpu_vpcs(cfg.node_pools, cfg.zones, cfg.network)


def _objects(cfg):
    return gpunet_objects(_vpcs(cfg), cfg.node_pools, cfg.kuberay.namespace)


def _pool(cfg, name):
    return next(p for p in cfg.node_pools if p.name == name)


def _workers(cfg, job):
    (m,) = [
        m
        for m in render_manifests(cfg, WORKING_DIR)
        if m["kind"] == "RayJob" and m["metadata"]["name"] == job
    ]
    (group,) = m["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    return group["template"]


def _network_names(interfaces):
    """Google names TCPX(O) networks vpc1..vpcN; the stack names them tcpxo-1..: compare the
    index, and the interface names as they are."""
    return [(i["interfaceName"], i["network"].replace("tcpxo-", "vpc")) for i in interfaces]


def test_family_facts_match_googles_pages():
    facts = {m: (f.kind, f.nics, f.bandwidth_gbps) for m, f in GPU_NET_FAMILIES.items()}
    assert facts == {  # compute/docs/gpus/gpu-network-bandwidth, GKE TCPX page
        "a3-highgpu-8g": ("tcpx", 4, 1000),
        "a3-megagpu-8g": ("tcpxo", 8, 1800),
        "a3-ultragpu-8g": ("rdma", 8, 3600),
        "a4-highgpu-8g": ("rdma", 8, 3600),
        "a4x-highgpu-4g": ("rdma", 4, 2000),
    }


def test_scale_a3_mega_worker_interfaces_and_nccl(scale):
    tmpl = _workers(scale, "train-lm-a3-mega")
    notes = tmpl["metadata"]["annotations"]
    assert notes["networking.gke.io/default-interface"] == "eth0"
    got = json.loads(notes["networking.gke.io/interfaces"])
    assert _network_names(got) == _network_names(TCPXO_INTERFACES)
    (c,) = tmpl["spec"]["containers"]
    env = {e["name"]: e["value"] for e in c["env"]}
    # NCCL's socket transport over the very NICs Google's TCPXO config names
    assert env["NCCL_SOCKET_IFNAME"] == TCPXO_IFNAMES
    assert env["NCCL_NET"] == "Socket"
    assert env["NCCL_CROSS_NIC"] == "0"
    assert nccl_env(GPU_NET_FAMILIES["a3-megagpu-8g"])["NCCL_FASTRAK_IFNAME"] == TCPXO_IFNAMES
    # restricted holds: no sidecar, no capability, no hostPath
    assert [x["name"] for x in tmpl["spec"]["containers"]] == ["ray-worker"]
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert not any("hostPath" in v for v in tmpl["spec"]["volumes"])


def test_scale_a4_worker_interfaces_and_nccl(scale):
    tmpl = _workers(scale, "train-lm-a4")
    got = json.loads(tmpl["metadata"]["annotations"]["networking.gke.io/interfaces"])
    assert got == RDMA_INTERFACES
    env = {e["name"]: e["value"] for e in tmpl["spec"]["containers"][0]["env"]}
    assert {k: env[k] for k in RDMA_ENV} == RDMA_ENV
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
    assert check_pod_security([{"kind": "Pod", "metadata": {}, "spec": tmpl["spec"]}]) == []


def test_scale_vpcs_subnets_and_node_networks(scale):
    vpcs = {v.name: v for v in _vpcs(scale)}
    tcpxo = [v for n, v in vpcs.items() if "-tcpxo-" in n]
    assert len(tcpxo) == 8 and all(len(v.subnets) == 1 and v.mtu == 8244 for v in tcpxo)
    rdma = vpcs["ray-scale-rdma"]
    assert rdma.profile_zone == "us-central1-b" and len(rdma.subnets) == 8
    assert rdma.network_profile("p") == "projects/p/global/networkProfiles/us-central1-b-vpc-roce"
    assert {s.device_mode for s in rdma.subnets} == {"RDMA"}
    cidrs = [ipaddress.ip_network(s.cidr) for v in vpcs.values() for s in v.subnets]
    assert len(cidrs) == 17  # 8 TCPXO + 1 gVNIC + 8 RDMA
    assert all(c.subnet_of(ipaddress.ip_network("192.168.0.0/16")) for c in cidrs)
    assert all(not a.overlaps(b) for i, a in enumerate(cidrs) for b in cidrs[i + 1 :])
    mega = pool_networks(_vpcs(scale), _pool(scale, "a3-mega"))
    assert [n for n, _ in mega] == [f"ray-scale-tcpxo-{i}" for i in range(1, 9)]
    a4 = pool_networks(_vpcs(scale), _pool(scale, "a4"))
    assert a4[0] == ("ray-scale-gvnic", "ray-scale-gvnic-sub")
    assert a4[1:] == [("ray-scale-rdma", f"ray-scale-rdma-sub-{j}") for j in range(8)]
    assert pool_networks(_vpcs(scale), _pool(scale, "cpu")) == []


def test_scale_multi_network_objects_and_installer(scale):
    objs = multi_network_objects(_vpcs(scale))
    params = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "GKENetworkParamSet"}
    nets = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "Network"}
    assert (
        set(params)
        == set(nets)
        == {f"tcpxo-{i}" for i in range(1, 9)} | {f"rdma-{j}" for j in range(8)} | {"gvnic-1"}
    )
    assert params["rdma-3"] == {
        "vpc": "ray-scale-rdma",
        "vpcSubnet": "ray-scale-rdma-sub-3",
        "deviceMode": "RDMA",
    }
    assert params["tcpxo-1"]["deviceMode"] == "NetDevice"
    assert nets["rdma-0"]["type"] == "Device"
    (ds,) = installer_daemonsets(scale.node_pools)
    assert ds["metadata"]["namespace"] == "kube-system"
    spec = ds["spec"]["template"]["spec"]
    (init,) = spec["initContainers"]
    assert init["image"] == "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1"
    assert init["securityContext"] == {"privileged": True}
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["nvidia-b200"]
    # the installer is exempt by its namespace and name only
    assert check_pod_security(_objects(scale)) == []
    moved = {**ds, "metadata": {**ds["metadata"], "namespace": "ray"}}
    assert any("privileged: true" in line for line in check_pod_security([moved]))


def test_installer_exemption_names_the_catalogs_installers():
    """The installers and, for gpu_networking: gpudirect, the NRI device injector."""
    from components.catalog.gpudirect import DEVICE_INJECTOR_NAME

    assert sorted(n for _, _, n in INSTALLER_EXEMPT) == sorted(
        [*INSTALLER_NAMES, DEVICE_INJECTOR_NAME]
    )


def test_prod_h100_pools_get_gpudirect_tcpx():
    prod = stack("prod")
    for name in ("h100", "h100-dws"):
        pool = _pool(prod, name)
        assert pool.gpu_net.kind == "tcpx"
        assert [n for n, _ in pool_networks(_vpcs(prod), pool)] == [
            f"ray-prod-tcpx-{i}" for i in range(1, 5)
        ]
    pool = _pool(prod, "h100")
    notes, env, _ = worker_pod_extras(pool, pool.gpu_net)
    interfaces = json.loads(notes["networking.gke.io/interfaces"])
    assert [i["interfaceName"] for i in interfaces] == ["eth0", "eth1", "eth2", "eth3", "eth4"]
    assert env["NCCL_SOCKET_IFNAME"] == "eth1,eth2,eth3,eth4"  # gpudirect-tcpx/nccl-config.yaml
    assert installer_daemonsets(prod.node_pools) == []  # TCPX's plugin needs the RxDM sidecar


def _gpu_pool(**kw):
    return {"name": "g", "max_nodes": 2, "zones": ["us-central1-b"], **kw}


def test_tcpxo_on_a3_high_is_refused_at_its_field():
    data = config(
        region="us-central1",
        zones=["us-central1-c"],
        node_pools=[
            _gpu_pool(
                gpu={"type": "nvidia-h100-80gb", "count": 8},
                zones=["us-central1-c"],
                gpu_networking="tcpxo",
            )
        ],
        nap={"resource_limits": {"cpu": 512, "memory": 16384}},
    )
    with pytest.raises(StackConfigError) as e:
        validate(data)
    (line,) = [p for p in e.value.problems if "gpu_networking" in p]
    assert line.path == "node_pools[g].gpu_networking"
    assert "a3-highgpu-8g (A3 High has tcpx)" in line and "allowed here: auto, off, tcpx" in line


def test_rdma_outside_its_profile_zone_is_refused():
    data = config(
        region="us-central1",
        zones=["us-central1-b", "us-central1-c"],
        node_pools=[_gpu_pool(gpu={"type": "nvidia-b200", "count": 8}, zones=None)],
        nap={"resource_limits": {"cpu": 512, "memory": 16384}},
    )
    lines = [
        p for p in rule_problems(StackConfig.model_validate(data)) if p.rule == "gpu-networking"
    ]
    assert [p.path for p in lines] == ["node_pools[g].zones"]
    assert "RDMA network profile is zonal" in lines[0]
    data["node_pools"][0]["zones"] = ["us-central1-c"]  # no A4 there in the catalog
    lines = [
        p for p in rule_problems(StackConfig.model_validate(data)) if p.rule == "gpu-networking"
    ]
    assert len(lines) == 1 and "us-central1-c-vpc-roce" in lines[0]
    data["node_pools"][0]["allow_unlisted_zone"] = True
    assert [
        p for p in rule_problems(StackConfig.model_validate(data)) if p.rule == "gpu-networking"
    ] == []


def test_multi_node_job_on_a_family_with_networking_off_warns():
    pool = _gpu_pool(gpu={"type": "nvidia-b200", "count": 8}, gpu_networking="off")
    data = config(
        region="us-central1",
        zones=["us-central1-b"],
        node_pools=[pool],
        nap={"resource_limits": {"cpu": 512, "memory": 16384}},
        workload_identities=[{"name": "ray-train", "buckets": {"checkpoints": "write"}}],
        jobs=[{"name": "t", "workload": "train_lm", "node_pool": "g"}],
    )
    cfg = validate(data)  # only a warning: the stack loads and renders
    (w,) = multi_node_jobs_without_gpu_networking(plan(cfg))
    assert w.severity == "warning" and w.path == "node_pools[g].gpu_networking"
    assert "over the primary NIC alone" in w
    data["node_pools"][0]["gpu_networking"] = "auto"
    assert list(multi_node_jobs_without_gpu_networking(plan(validate(data)))) == []
    data["node_pools"][0].update(gpu_networking="off", max_nodes=1)  # one node: no warning
    assert list(multi_node_jobs_without_gpu_networking(plan(validate(data)))) == []


def test_gpu_cidr_too_small_is_refused(scale):
    data = config(
        region="us-central1",
        zones=["us-central1-b"],
        network={"gpu_cidr": "192.168.0.0/21"},
        node_pools=[_gpu_pool(gpu={"type": "nvidia-b200", "count": 8})],
        nap={"resource_limits": {"cpu": 512, "memory": 16384}},
    )
    (p,) = [
        p for p in rule_problems(StackConfig.model_validate(data)) if p.rule == "gpu-networking"
    ]
    assert p.path == "network.gpu_cidr" and "need 9" in p


def test_off_on_a_family_without_gpu_networking_is_refused():
    data = config(
        node_pools=[
            {"name": "l4", "gpu": {"type": "nvidia-l4", "count": 1}, "gpu_networking": "off"}
        ]
    )
    with pytest.raises(StackConfigError) as e:
        validate(data)
    (line,) = [p for p in e.value.problems if p.path == "node_pools[l4].gpu_networking"]
    assert "g2-standard-4, which has no GPU networking" in line


def test_a4x_gets_four_rdma_nics_and_the_arm64_installer():
    data = config(
        region="us-central1",
        zones=["us-central1-b"],
        node_pools=[_gpu_pool(gpu={"type": "nvidia-gb200", "count": 4})],
    )
    cfg = StackConfig.model_validate(data)
    pool = cfg.node_pools[0]
    assert [n for _, n in pool_networks(_vpcs(cfg), pool)] == ["ray-gvnic-sub"] + [
        f"ray-rdma-sub-{j}" for j in range(4)
    ]
    notes, env, _ = worker_pod_extras(pool, pool.gpu_net)
    interfaces = json.loads(notes["networking.gke.io/interfaces"])
    assert [(i["interfaceName"], i["network"]) for i in interfaces[1:]] == [
        (f"eth{j + 2}", f"rdma-{j}") for j in range(4)
    ]  # container-engine-accelerators gpudirect-rdma/nccl-test-imex-a4x.yaml
    assert env["NCCL_NET"] == "gIB"
    (ds,) = installer_daemonsets(cfg.node_pools)
    assert ds["metadata"]["name"] == "nccl-rdma-installer-arm64"
    (init,) = ds["spec"]["template"]["spec"]["initContainers"]
    assert init["image"].endswith("/gpudirect-gib/nccl-plugin-gib-arm64:v1.1.0")
    terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    match = terms["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]} in match[
        "matchExpressions"
    ]

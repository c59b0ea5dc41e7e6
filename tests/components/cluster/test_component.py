"""Cluster, network and KubeRay install mode (real program, mocks)."""

from __future__ import annotations

import json

import pytest

from components.cluster.render import nap_resource_limits
from components.kernel.base import StackConfigError
from components.kuberay.render import KUBERAY_HELM_REPO, kubeconfig
from components.plan.resolve import nap_needs
from components.stack.loader import validate
from tests.helpers import by_name, config, of_type, render

CLUSTER = "gcp:container/cluster:Cluster"
RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.fixture(scope="module")
def rendered() -> tuple[list[dict], dict]:
    return render(config())


def _cluster(records: list[dict]) -> dict:
    (c,) = of_type(records, CLUSTER)
    return c["inputs"]


def test_cluster_security_and_platform_settings(rendered):
    c = _cluster(rendered[0])
    # no authorized network listed: the control plane accepts no address outside the VPC
    assert c["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [],
        "gcpPublicCidrsAccessEnabled": False,
    }
    assert c["removeDefaultNodePool"] is True
    assert c["workloadIdentityConfig"] == {"workloadPool": "ray-gke-test.svc.id.goog"}
    assert c["privateClusterConfig"] == {
        "enablePrivateNodes": True,
        "enablePrivateEndpoint": False,
        "masterIpv4CidrBlock": "172.16.0.0/28",
    }
    assert c["datapathProvider"] == "ADVANCED_DATAPATH"
    assert c["enableShieldedNodes"] is True
    assert c["databaseEncryption"]["state"] == "ENCRYPTED"
    assert c["databaseEncryption"]["keyName"].endswith("/cryptoKeys/gke-secrets")
    assert c["monitoringConfig"]["managedPrometheus"] == {"enabled": True}
    assert c["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert c["releaseChannel"] == {"channel": "REGULAR"}
    assert c["maintenancePolicy"] == {"dailyMaintenanceWindow": {"startTime": "03:00"}}
    assert c["ipAllocationPolicy"] == {
        "clusterSecondaryRangeName": "pods",
        "servicesSecondaryRangeName": "services",
    }
    assert c["location"] == "us-east5-b"  # zonal: the first zone
    assert c["deletionProtection"] is False


def test_nap_limits_cover_every_accelerator_and_use_node_sa(rendered):
    ca = _cluster(rendered[0])["clusterAutoscaling"]
    assert ca["enabled"] is True
    assert ca["autoscalingProfile"] == "OPTIMIZE_UTILIZATION"
    limits = {r["resourceType"]: r["maximum"] for r in ca["resourceLimits"]}
    # config 64 > pools' 32 chips; v5e and l4 not in config -> what the pools can scale to.
    assert limits == {
        "cpu": 4096,
        "memory": 8192,
        "tpu-v6e-slice": 64,
        "tpu-v5-lite-podslice": 12,
        "nvidia-l4": 2,
    }
    d = ca["autoProvisioningDefaults"]
    assert d["serviceAccount"] == "ray-test-nodes@ray-gke-test.iam.gserviceaccount.com"
    assert d["oauthScopes"] == ["https://www.googleapis.com/auth/cloud-platform"]


def test_network_has_secondary_ranges_private_access_and_nat(rendered):
    records = rendered[0]
    (subnet,) = of_type(records, "gcp:compute/subnetwork:Subnetwork")
    s = subnet["inputs"]
    assert s["privateIpGoogleAccess"] is True
    assert s["secondaryIpRanges"] == [
        {"rangeName": "pods", "ipCidrRange": "10.16.0.0/14"},
        {"rangeName": "services", "ipCidrRange": "10.20.0.0/20"},
    ]
    (nat,) = of_type(records, "gcp:compute/routerNat:RouterNat")
    assert nat["inputs"]["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    assert nat["parent"] == "ray-gke:network:Network::network"


def test_subnet_flow_logs_follow_config(rendered):
    (subnet,) = of_type(rendered[0], "gcp:compute/subnetwork:Subnetwork")
    assert subnet["inputs"]["logConfig"] == {
        "aggregationInterval": "INTERVAL_5_SEC",
        "flowSampling": 0.5,
        "metadata": "INCLUDE_ALL_METADATA",
    }
    flow = {"aggregation_interval": "INTERVAL_1_MIN", "flow_sampling": 0.1}
    records, _ = render(config(network={"flow_logs": flow}))
    (subnet,) = of_type(records, "gcp:compute/subnetwork:Subnetwork")
    assert subnet["inputs"]["logConfig"]["aggregationInterval"] == "INTERVAL_1_MIN"
    assert subnet["inputs"]["logConfig"]["flowSampling"] == 0.1
    records, _ = render(config(network={"flow_logs": {"enabled": False}}))
    (subnet,) = of_type(records, "gcp:compute/subnetwork:Subnetwork")
    assert "logConfig" not in subnet["inputs"]


def test_flow_sampling_out_of_range_is_one_clear_line():
    with pytest.raises(StackConfigError) as e:
        validate(config(network={"flow_logs": {"flow_sampling": 1.5}}))
    assert "network.flow_logs.flow_sampling" in str(e.value)


def test_helm_mode_has_release_and_no_addon(rendered):
    records = rendered[0]
    assert "rayOperatorConfigs" not in _cluster(records)["addonsConfig"]
    (rel,) = of_type(records, RELEASE)
    i = rel["inputs"]
    assert (i["chart"], i["version"], i["namespace"]) == ("kuberay-operator", "1.7.0", "ray")
    assert i["repositoryOpts"] == {"repo": KUBERAY_HELM_REPO}


def test_addon_mode_has_addon_and_no_release():
    records, outputs = render(config(kuberay={"mode": "gke-addon"}))
    # the add-on collects Ray logs and, with Managed Prometheus (the default), Ray metrics
    assert _cluster(records)["addonsConfig"]["rayOperatorConfigs"] == [
        {
            "enabled": True,
            "rayClusterLoggingConfig": {"enabled": True},
            "rayClusterMonitoringConfig": {"enabled": True},
        }
    ]
    assert of_type(records, RELEASE) == []
    assert outputs["kuberay_mode"] == "gke-addon"


def test_prod_like_settings():
    cluster = {
        "name": "ray-test",
        "regional": True,
        "deletion_protection": True,
        "release_channel": "STABLE",
        "min_master_version": "1.35.1-gke.1000000",
    }
    network = {"master_authorized_networks": [{"name": "vpn", "cidr": "203.0.113.0/24"}]}
    records, _ = render(config(cluster=cluster, network=network))
    c = _cluster(records)
    assert c["deletionProtection"] is True
    assert c["location"] == "us-east5"
    assert c["minMasterVersion"] == "1.35.1-gke.1000000"
    assert c["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [{"cidrBlock": "203.0.113.0/24", "displayName": "vpn"}],
        "gcpPublicCidrsAccessEnabled": False,
    }
    keys = by_name(records, "gcp:kms/cryptoKey:CryptoKey")
    assert set(keys) == {
        "gke-secrets",
        "buckets",
        "artifact-registry",
        "secret-manager",
        "boot-disks",
    }


def test_ksa_annotations_and_secret_kubeconfig(rendered):
    records, outputs = rendered
    ksas = of_type(records, "kubernetes:core/v1:ServiceAccount")
    assert {
        k["inputs"]["metadata"]["name"]: k["inputs"]["metadata"]["annotations"] for k in ksas
    } == {
        "ray-train": {
            "iam.gke.io/gcp-service-account": "ray-train@ray-gke-test.iam.gserviceaccount.com"
        },
        "ray-serve": {
            "iam.gke.io/gcp-service-account": "ray-serve@ray-gke-test.iam.gserviceaccount.com"
        },
        # issue 12: separate head accounts, each bound to its own GSA
        "ray-train-head": {
            "iam.gke.io/gcp-service-account": "ray-train-head@ray-gke-test.iam.gserviceaccount.com"
        },
        "ray-serve-head": {
            "iam.gke.io/gcp-service-account": "ray-serve-head@ray-gke-test.iam.gserviceaccount.com"
        },
    }
    assert all(k["inputs"]["automountServiceAccountToken"] is False for k in ksas)
    assert outputs["kubeconfig"] == "[secret]"
    (provider,) = of_type(records, "pulumi:providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"  # never written in clear


def test_pure_builders():
    kc = json.loads(kubeconfig("c", "1.2.3.4", "Q0E="))
    assert kc["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert kc["clusters"][0]["cluster"]["server"] == "https://1.2.3.4"
    assert kc["clusters"][0]["cluster"]["certificate-authority-data"] == "Q0E="
    assert "token" not in json.dumps(kc) and "password" not in json.dumps(kc)
    # memory is not given: NAP's default (1024 GB) is below what the pools scale to -> refused
    with pytest.raises(StackConfigError, match=r"nap.resource_limits\[memory\]: 1024"):
        validate(config(nap={"resource_limits": {"cpu": 2048}}))
    cfg = validate(config(nap={"resource_limits": {"cpu": 2048, "memory": 8192}}))
    limits = {
        x["resource_type"]: x["maximum"]
        for x in nap_resource_limits(
            cfg.nap.effective_limits, nap_needs(cfg.cluster.system_pool, cfg.node_pools)
        )
    }
    assert limits == {
        "cpu": 2048,
        "memory": 8192,
        "tpu-v6e-slice": 32,
        "tpu-v5-lite-podslice": 12,
        "nvidia-l4": 2,
    }


def test_incremental_service_enables_the_gate_and_the_gateway_api(rendered):
    # Without one: no featureGates value, Gateway API left as GKE has it.
    assert "gatewayApiConfig" not in _cluster(rendered[0])
    (rel,) = of_type(rendered[0], RELEASE)
    assert "featureGates" not in rel["inputs"]["values"]
    service = {
        "name": "lm",
        "checkpoint": "gs://ray-gke-test-ray-test-checkpoints/train",
        "node_pool": "l4",
        "upgrade_strategy": "NewClusterWithIncrementalUpgrade",
        "incremental_upgrade": {"gateway_class_name": "gke-l7-rilb"},
    }
    identities = [
        {"name": "ray-train", "buckets": {"checkpoints": "write", "artifacts": "read"}},
        {"name": "ray-serve", "buckets": {"checkpoints": "read", "artifacts": "read"}},
    ]
    records, _ = render(config(services=[service], workload_identities=identities))
    assert _cluster(records)["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    (rel,) = of_type(records, RELEASE)
    gates = {g["name"]: g["enabled"] for g in rel["inputs"]["values"]["featureGates"]}
    assert gates["RayServiceIncrementalUpgrade"] is True

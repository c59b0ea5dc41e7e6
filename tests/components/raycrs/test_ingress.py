"""Services serving a Hugging Face Hub model (``hf_model``, its token file from Secret Manager)
and reached through a GKE Gateway (``gateway``): the rendered RayService, SecretProviderClass,
Gateway, HTTPRoute and NetworkPolicy, the refusals, and the cluster flags; and jobs fine-tuning a
Hugging Face model (``args.init_model`` / ``args.tokenizer``, ``hf_token_secret``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components.cluster.render import gateway_api_channel, secret_manager_enabled
from components.kernel.base import StackConfigError
from components.kuberay.namespace import LB_HEALTH_CHECK_RANGES
from components.plan.plan import plan
from components.raycrs.ingress import (
    GKE_SECRETS_CSI_DRIVER,
    HF_TOKEN_PATH,
    render_service_objects,
)
from components.raycrs.render import render_manifests
from components.stack.loader import validate
from tests.components.kuberay.test_namespace import policies
from tests.helpers import WORKING_DIR, config, of_type, render

HUB = {"name": "chat", "hf_model": "Qwen/Qwen2.5-0.5B-Instruct", "node_pool": "l4"}
IDENTITIES = [
    {"name": "ray-train", "buckets": {"checkpoints": "write", "artifacts": "read"}},
    {"name": "ray-serve", "buckets": {"artifacts": "read"}},
]
SECRETS = [{"name": "hf-token", "readers": ["ray-serve"]}]


def _objects(cfg: Any) -> list[dict[str, Any]]:
    return render_service_objects(plan(cfg).context, cfg.services, cfg.jobs)


def _data(secrets: list[dict[str, Any]] | None = None, **service: Any) -> dict[str, Any]:
    return config(
        services=[{**HUB, **service}],
        workload_identities=IDENTITIES,
        secrets=SECRETS if secrets is None else secrets,
        # the Hub token's and the gateway's objects only (GCS fault tolerance's SecretProviderClass
        # and the add-on it needs too: tests/components/gcsft/)
        gcs_fault_tolerance={"enabled": False},
    )


def _cfg(secrets: list[dict[str, Any]] | None = None, **service: Any) -> Any:
    return validate(_data(secrets, **service))


def _service(cfg: Any) -> dict[str, Any]:
    (m,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayService"]
    return m


def _args(m: dict[str, Any]) -> dict[str, Any]:
    (app,) = yaml.safe_load(m["spec"]["serveConfigV2"])["applications"]
    return app["args"]


def _pods(m: dict[str, Any]) -> list[dict[str, Any]]:
    cluster = m["spec"]["rayClusterConfig"]
    return [cluster["headGroupSpec"]["template"]] + [
        g["template"] for g in cluster["workerGroupSpecs"]
    ]


def test_a_hub_model_is_the_model_arg_with_its_revision() -> None:
    m = _service(_cfg(hf_revision="v1.0"))
    args = _args(m)
    assert args["model"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert args["model_revision"] == "v1.0"
    assert args["accelerator"] == "gpu" and args["accelerator_type"] == "L4"
    # no revision set: none rendered (vLLM takes main)
    assert "model_revision" not in _args(_service(_cfg()))


def test_the_token_is_a_read_only_csi_file_in_head_and_workers_and_never_in_the_config() -> None:
    cfg = _cfg(hf_token_secret="hf-token")
    m = _service(cfg)
    for pod in _pods(m):
        (vol,) = [v for v in pod["spec"]["volumes"] if v["name"] == "hf-token"]
        assert vol["csi"] == {
            "driver": GKE_SECRETS_CSI_DRIVER,
            "readOnly": True,
            "volumeAttributes": {"secretProviderClass": "chat-hf-token"},
        }
        c = pod["spec"]["containers"][0]
        (mount,) = [v for v in c["volumeMounts"] if v["name"] == "hf-token"]
        assert mount == {"name": "hf-token", "mountPath": "/var/run/secrets/hf", "readOnly": True}
        assert {"name": "HF_TOKEN_PATH", "value": HF_TOKEN_PATH} in c["env"]
    assert HF_TOKEN_PATH == "/var/run/secrets/hf/hf-token"
    assert "hf-token" not in m["spec"]["serveConfigV2"]
    (spc,) = _objects(cfg)
    assert spc["apiVersion"] == "secrets-store.csi.x-k8s.io/v1"
    assert spc["kind"] == "SecretProviderClass"
    assert spc["metadata"]["name"] == "chat-hf-token"
    assert spc["metadata"]["namespace"] == cfg.kuberay.namespace
    assert spc["spec"]["provider"] == "gke"
    assert yaml.safe_load(spc["spec"]["parameters"]["secrets"]) == [
        {
            "resourceName": "projects/ray-gke-test/secrets/hf-token/versions/latest",
            "path": "hf-token",
        }
    ]


def test_without_a_token_no_volume_no_env_no_class_and_no_add_on() -> None:
    cfg = _cfg()
    for pod in _pods(_service(cfg)):
        assert all(v["name"] != "hf-token" for v in pod["spec"].get("volumes", []))
        assert all(
            e["name"] != "HF_TOKEN_PATH" for e in pod["spec"]["containers"][0].get("env", [])
        )
    assert _objects(cfg) == []
    assert secret_manager_enabled(cfg.services) is False
    assert secret_manager_enabled(_cfg(hf_token_secret="hf-token").services) is True


@pytest.mark.parametrize(
    ("service", "words"),
    [
        ({"checkpoint": "train"}, "set exactly one of checkpoint"),
        ({"hf_model": None}, "neither is set"),
        ({"hf_model": "not-a-repo"}, "hf_model 'not-a-repo': use a Hugging Face Hub repo id"),
        ({"hf_model": "a/b/c"}, "hf_model 'a/b/c'"),
        ({"hf_model": "owner/bad--name"}, "hf_model 'owner/bad--name'"),
        ({"hf_revision": "a..b"}, "hf_revision 'a..b'"),
        ({"gateway": {"hostname": "Not_A_Host"}}, "gateway.hostname 'Not_A_Host'"),
        ({"gateway": {"proxy_subnet_cidr": "10.0.0.1/23"}}, "gateway.proxy_subnet_cidr"),
    ],
)
def test_model_refusals_name_the_field_and_value(service: dict[str, Any], words: str) -> None:
    with pytest.raises(StackConfigError) as e:
        _cfg(**service)
    assert words in str(e.value)


def test_revision_and_token_need_a_hub_model() -> None:
    data = config(
        services=[
            {"name": "lm", "checkpoint": "gs://x/y", "node_pool": "l4", "hf_revision": "main"}
        ]
    )
    with pytest.raises(StackConfigError) as e:
        validate(data)
    assert "hf_revision is set but hf_model is not" in str(e.value)


def test_check_refuses_an_undeclared_token_secret_and_one_the_service_cannot_read() -> None:
    with pytest.raises(StackConfigError) as e:
        _cfg(secrets=[], hf_token_secret="hf-token")
    assert (
        "services[chat].hf_token_secret: 'hf-token' is not a declared secret (allowed: the name "
        "of a secrets: entry; declared: none)"
    ) in str(e.value)
    with pytest.raises(StackConfigError) as e:
        _cfg(secrets=[{"name": "hf-token", "readers": ["ray-train"]}], hf_token_secret="hf-token")
    assert (
        "services[chat].hf_token_secret: 'hf-token': its readers (ray-train) lack the "
        "service's service_account 'ray-serve'"
    ) in str(e.value)


def test_a_hub_service_needs_no_checkpoints_bucket() -> None:
    # ray-serve of IDENTITIES reads artifacts only: fine for a Hub model ...
    _cfg()
    # ... but a checkpoint service still needs the checkpoints bucket
    data = config(
        jobs=[{"name": "train", "workload": "train_lm", "node_pool": "cpu"}],
        services=[{"name": "lm", "checkpoint": "train", "node_pool": "l4"}],
        workload_identities=IDENTITIES,
    )
    with pytest.raises(StackConfigError) as e:
        validate(data)
    assert "cannot read the checkpoints bucket" in str(e.value)


def test_a_gateway_routes_to_the_serve_service_internally_by_default() -> None:
    cfg = _cfg(gateway={}, upgrade_strategy="NewCluster")
    gw, route = _objects(cfg)
    ns = cfg.kuberay.namespace
    assert gw["apiVersion"] == route["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert (gw["kind"], gw["metadata"]["name"], gw["metadata"]["namespace"]) == (
        "Gateway",
        "chat-gateway",
        ns,
    )
    assert gw["spec"]["gatewayClassName"] == "gke-l7-rilb"
    (listener,) = gw["spec"]["listeners"]
    assert listener["protocol"] == "HTTP" and listener["port"] == 80
    assert "hostname" not in listener
    assert route["kind"] == "HTTPRoute" and route["metadata"]["namespace"] == ns
    assert route["spec"]["parentRefs"] == [{"name": "chat-gateway"}]
    (rule,) = route["spec"]["rules"]
    assert rule["backendRefs"] == [{"name": "chat-serve-svc", "port": 8000}]
    assert "hostnames" not in route["spec"]
    assert gateway_api_channel(cfg.services) == "CHANNEL_STANDARD"
    assert gateway_api_channel(_cfg().services) is None
    # with a gateway a service upgrades incrementally (the default from 2026-12-08): KubeRay
    # creates <name>-gateway and <name>-httproute itself, on the gateway's class
    incremental = _cfg(gateway={})
    assert _objects(incremental) == []
    strategy = _service(incremental)["spec"]["upgradeStrategy"]
    assert strategy["type"] == "NewClusterWithIncrementalUpgrade"
    assert strategy["clusterUpgradeOptions"] == {
        "gatewayClassName": "gke-l7-rilb",
        "stepSizePercent": 10,
        "intervalSeconds": 30,
        "maxSurgePercent": 100,
    }
    assert gateway_api_channel(incremental.services) == "CHANNEL_STANDARD"


def test_a_gateway_hostname_is_matched_by_listener_and_route() -> None:
    gw, route = _objects(
        _cfg(gateway={"hostname": "lm.internal.example.com"}, upgrade_strategy="NewCluster")
    )
    assert gw["spec"]["listeners"][0]["hostname"] == "lm.internal.example.com"
    assert route["spec"]["hostnames"] == ["lm.internal.example.com"]


def test_check_refuses_a_public_class_unless_public_and_public_with_an_internal_class() -> None:
    for cls in ("gke-l7-global-external-managed", "gke-l7-regional-external-managed"):
        with pytest.raises(StackConfigError) as e:
            _cfg(gateway={"gateway_class_name": cls})
        assert (
            f"services[chat].gateway.gateway_class_name: {cls!r} is a public (internet-facing) "
            "load balancer and Serve's port has no authentication (allowed: an internal class"
        ) in str(e.value)
        public = {"gateway_class_name": cls, "public": True}
        (gw, _) = _objects(_cfg(gateway=public, upgrade_strategy="NewCluster"))
        assert gw["spec"]["gatewayClassName"] == cls
    with pytest.raises(StackConfigError) as e:
        _cfg(gateway={"public": True})
    assert "services[chat].gateway.public: true with the internal class 'gke-l7-rilb'" in str(
        e.value
    )


def _serve_rule(cfg: Any) -> list[dict[str, Any]]:
    (pol,) = [p for p in policies(cfg) if p["metadata"]["name"] == "chat-ray"]
    return [
        r
        for r in pol["spec"]["ingress"]
        if any("ipBlock" in f and f["ipBlock"]["cidr"] == "35.191.0.0/16" for f in r["from"])
    ]


def test_the_network_policy_admits_the_load_balancer_to_port_8000_of_the_service_only() -> None:
    assert _serve_rule(_cfg()) == []
    (rule,) = _serve_rule(_cfg(gateway={"proxy_subnet_cidr": "10.129.0.0/23"}))
    assert [f["ipBlock"]["cidr"] for f in rule["from"]] == [
        *LB_HEALTH_CHECK_RANGES,
        "10.129.0.0/23",
    ]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8000}]
    (rule,) = _serve_rule(_cfg(gateway={}))
    assert [f["ipBlock"]["cidr"] for f in rule["from"]] == list(LB_HEALTH_CHECK_RANGES)


def test_egress_stays_unrestricted_so_a_hub_model_downloads_through_nat() -> None:
    # Every policy is Ingress only: nothing selects the serving pods for Egress.
    for p in policies(_cfg(hf_token_secret="hf-token")):
        assert p["spec"]["policyTypes"] == ["Ingress"]


def test_the_program_enables_the_add_on_and_gateway_api_and_applies_the_objects() -> None:
    records, _ = render(
        _data(hf_token_secret="hf-token", gateway={}, upgrade_strategy="NewCluster")
    )
    (cluster,) = of_type(records, "gcp:container/cluster:Cluster")
    assert cluster["inputs"]["secretManagerConfig"] == {"enabled": True}
    assert cluster["inputs"]["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    kinds = {
        r["inputs"]["kind"]
        for r in records
        if r["type"] == "kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass"
        or r["type"].startswith("kubernetes:gateway.networking.k8s.io/v1:")
    }
    assert kinds == {"SecretProviderClass", "Gateway", "HTTPRoute"}
    plain, _ = render(config(workload_identities=IDENTITIES))
    (cluster,) = of_type(plain, "gcp:container/cluster:Cluster")
    assert "secretManagerConfig" not in cluster["inputs"]


# ------------------------------------------- jobs fine-tuning a Hugging Face model (issue 47)


def _job_data(job: dict[str, Any], secrets: list[dict[str, Any]] | None = None) -> Any:
    base = {"name": "tune", "workload": "train_lm", "node_pool": "cpu"}
    return config(
        jobs=[{**base, **job}],
        workload_identities=IDENTITIES,
        secrets=[{"name": "hf-token", "readers": ["ray-train"]}] if secrets is None else secrets,
    )


def _checkpoints_bucket(data: dict[str, Any]) -> str:
    from components.plan.plan import plan

    return plan(validate(config())).context.buckets["checkpoints"]


def _problems(data: dict[str, Any]) -> str:
    with pytest.raises(StackConfigError) as e:
        validate(data)
    return str(e.value)


def test_a_job_fine_tunes_from_the_checkpoints_bucket_or_a_hub_id_with_its_token() -> None:
    bucket = _checkpoints_bucket(config())
    validate(_job_data({"args": {"init_model": f"gs://{bucket}/models/tiny"}}))
    cfg = validate(
        _job_data({"args": {"init_model": "owner/model"}, "hf_token_secret": "hf-token"})
    )
    (job,) = [m for m in render_manifests(cfg, WORKING_DIR) if m["kind"] == "RayJob"]
    entry = job["spec"]["entrypoint"]
    assert json.loads(entry.split("--config-json ", 1)[1].strip("'"))["init_model"] == "owner/model"
    cluster = job["spec"]["rayClusterSpec"]
    pods = [cluster["headGroupSpec"]["template"]] + [
        g["template"] for g in cluster["workerGroupSpecs"]
    ]
    for pod in pods:
        (vol,) = [v for v in pod["spec"]["volumes"] if v["name"] == "hf-token"]
        assert vol["csi"]["volumeAttributes"] == {"secretProviderClass": "tune-job-hf-token"}
        c = pod["spec"]["containers"][0]
        assert {"name": "HF_TOKEN_PATH", "value": HF_TOKEN_PATH} in c["env"]
    (spc,) = _objects(cfg)
    assert spc["metadata"]["name"] == "tune-job-hf-token"
    assert spc["metadata"]["labels"]["ray-gke/job"] == "tune"
    assert "secrets/hf-token/versions/latest" in spc["spec"]["parameters"]["secrets"]
    assert secret_manager_enabled([*cfg.services, *cfg.jobs]) is True
    # no token: nothing mounted, no class, no add-on
    plain = validate(_job_data({"args": {"init_model": "owner/model"}}))
    assert _objects(plain) == []
    assert secret_manager_enabled([*plain.services, *plain.jobs]) is False


@pytest.mark.parametrize(
    ("job", "words"),
    [
        (
            {"args": {"init_model": "/models/tiny"}},
            "jobs[tune].args.init_model: '/models/tiny' is not readable by the job's pods; "
            "allowed: a folder gs://",
        ),
        (
            {"args": {"init_model": "gs://other-bucket/m"}},
            "jobs[tune].args.init_model: 'gs://other-bucket/m' is not readable",
        ),
        (
            {"workload": "prepare", "args": {"tokenizer": "gs://other/tok"}},
            "jobs[tune].args.tokenizer: 'gs://other/tok' is not readable by the job's pods",
        ),
        (
            {"args": {"init_model": "s3://b/m"}},
            "'s3://b/m' has scheme s3://; allowed: a local folder, a gs:// folder or a Hugging "
            "Face Hub repo id owner/name",
        ),
        (
            {"hf_token_secret": "hf-token"},
            "jobs[tune].hf_token_secret: 'hf-token' is set but neither args.init_model nor "
            "args.tokenizer of the job names a Hub repo id (allowed: only with a Hub model",
        ),
    ],
)
def test_a_job_model_source_refusal_names_the_field_the_value_and_what_is_allowed(
    job: dict[str, Any], words: str
) -> None:
    assert words in _problems(_job_data(job))


def test_a_jobs_token_is_a_declared_secret_it_reads_on_its_own_cluster() -> None:
    hub = {"args": {"init_model": "owner/model"}, "hf_token_secret": "hf-token"}
    text = _problems(_job_data(hub, secrets=[{"name": "hf-token", "readers": ["ray-serve"]}]))
    assert (
        "jobs[tune].hf_token_secret: 'hf-token': its readers (ray-serve) lack the job's "
        "service_account 'ray-train'"
    ) in text
    assert "is not a declared secret" in _problems(_job_data(hub, secrets=[]))
    data = _job_data(hub)
    data["ray_clusters"] = [{"name": "rc", "worker_groups": [{"name": "cpu", "node_pool": "cpu"}]}]
    data["jobs"][0] = {**data["jobs"][0], "cluster": "rc", "node_pool": None}
    assert (
        "jobs[tune].hf_token_secret: 'hf-token' with cluster: rc: that RayCluster's pods cannot "
        "mount the job's token (allowed: a job with node_pool"
    ) in _problems(data)


def test_a_fine_tuning_job_is_not_estimated_and_says_so() -> None:
    from components.plan.plan import plan
    from components.raycrs.serving import dataset_context
    from components.raycrs.training_fit import job_fit, training_fit_lines

    cfg = validate(_job_data({"args": {"init_model": "owner/model"}}))
    assert job_fit(plan(cfg), cfg.jobs[0], dataset_context(cfg.jobs)) is None
    assert training_fit_lines(plan(cfg), cfg.jobs) == [
        "job tune: fit not checked: it fine-tunes owner/model, whose config.json raygke check "
        "does not read (the trainer's parallelism auto measures it)"
    ]

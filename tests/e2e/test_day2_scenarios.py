"""Issue 22 item 5: the day-2 scenario suite. Each scenario is an ordered sequence of the changes a
platform team makes to a shipped stack; every step is rendered by the real program under mocks
(no cloud, no Ray) and planned from the step before by ``raygke diff``'s comparison. Each step
states the exact plan (``{resource: create | update | replace | re-run | delete}``) and the exact
disruption (``{(target, effect)}``, empty when no running work stops or restarts).

The rules the disruption follows are in :mod:`raygke.diff.disruption`; prod's long-lived
RayCluster ``training`` has ``upgrade_strategy: Recreate``, dev's ``research`` has none.

Since issue 21 (docs/capacity.md) every prod RayJob waits in the Kueue queue ``ml-batch`` and
brings its own cluster (``node_pool:``): the ``training`` RayCluster is for interactive work only,
so recreating it interrupts no RayJob, and a change to the pods of a job's own cluster re-runs
that job. Prod also has the DWS pools ``tpu-v6e-4x4-dws`` and ``h100-dws`` (labelled like every
pool), a ComputeClass on ``tpu-v6e-4x4`` and on ``h100`` (whose flavors select the class), a
ResourceFlavor per pool and NAP limits of cpu 4096, memory 20480, 64 v6e chips and 32
H100s; a scenario step never lowers a limit below what the declared pools can reach.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.e2e.day2 import Scenario, Step, plan_disruption, plan_ops, run

TRAINING = "RayCluster ray/training"
# Recreating ``training`` (upgradeStrategy Recreate) stops its pods; before issue 21
# prepare-corpus and train-lm-jax-v6e ran on it and were "interrupted" too. Now no prod RayJob
# names ``cluster: training`` (a queued job brings its own cluster), so only the cluster is hit.
TRAINING_RECREATED = {(TRAINING, "recreated")}

PROD_LABELLED = {
    "images-repository",
    "cluster-gke",
    "pool-cpu-pool",
    "pool-h100-pool",
    "pool-h100-dws-pool",  # the DWS pools (issue 21) carry the stack's labels as every pool does
    "pool-l4-serve-pool",
    "pool-system-pool",
    "pool-tpu-v6e-4x4-0-pool",
    "pool-tpu-v6e-4x4-1-pool",
    "pool-tpu-v6e-4x4-dws-0-pool",
    "pool-tpu-v6e-4x4-dws-1-pool",
    "security-boot-disks",
    "security-buckets",
    "security-gke-secrets",
    "security-registry",
    "security-secret-manager",
    "security-secret-hf-token",
    "security-secret-wandb-api-key",
    "storage-artifacts",
    "storage-checkpoints",
    "storage-datasets",
    # GCS fault tolerance (defaults 2026-12-08): the Memorystore instance, its KMS key and the
    # AUTH string's secret carry the stack's labels too
    "gcsft-key",
    "gcsft-redis",
    "gcsft-auth",
}
PROTECTED = {
    "images-repository",
    "cluster-gke",
    "security-boot-disks",
    "security-buckets",
    "security-gke-secrets",
    "security-registry",
    "security-secret-manager",
    # the Memorystore instance (deletion_protection) and its KMS key (`protect`)
    "gcsft-key",
    "gcsft-redis",
}
BUCKET_ACCESS = [
    "access-ray-serve-artifacts-objectViewer",
    "access-ray-serve-checkpoints-objectViewer",
    "access-ray-serve-head-artifacts-objectViewer",
    "access-ray-serve-head-checkpoints-objectViewer",
    "access-ray-train-artifacts-objectViewer",
    "access-ray-train-checkpoints-objectUser",
    "access-ray-train-datasets-objectUser",
    "access-ray-train-head-artifacts-objectViewer",
    "access-ray-train-head-checkpoints-objectUser",
    "access-ray-train-head-datasets-objectUser",
]
PROD_RERUNS = {
    "ray-rayjob-finetune-llama-h100": "re-run",
    "ray-rayjob-prepare-corpus": "re-run",
    "ray-rayjob-tokenize-llama": "re-run",
    "ray-rayjob-train-lm-h100": "re-run",
    "ray-rayjob-train-lm-jax-v6e": "re-run",
}
RERUN_EFFECTS = {
    ("RayJob ray/finetune-llama-h100", "re-run"),
    ("RayJob ray/prepare-corpus", "re-run"),
    ("RayJob ray/tokenize-llama", "re-run"),
    ("RayJob ray/train-lm-h100", "re-run"),
    ("RayJob ray/train-lm-jax-v6e", "re-run"),
}
# prod's lm sits behind a gateway: it upgrades with NewClusterWithIncrementalUpgrade (the default
# from defaults 2026-12-08); tests/e2e/test_upgrades.py checks the NewCluster path
INCREMENTAL = ("RayService ray/lm", "upgrade-incremental")
QUOTA = "kuberay-resourcequota-ray-quota"
GROW_CPU = {"cluster-gke": "update", "pool-cpu-pool": "update", QUOTA: "update"}
# the queued jobs that bring their own cluster on prod's cpu pool
CPU_JOBS_RERUN = {"ray-rayjob-prepare-corpus": "re-run", "ray-rayjob-tokenize-llama": "re-run"}
CPU_JOB_EFFECTS = {("RayJob ray/prepare-corpus", "re-run"), ("RayJob ray/tokenize-llama", "re-run")}


def _updates(names: set[str]) -> dict[str, str]:
    return dict.fromkeys(names, "update")


def _rc(d: dict[str, Any]) -> dict[str, Any]:
    return d["ray_clusters"][0]


def _pool(d: dict[str, Any], name: str) -> dict[str, Any]:
    (p,) = [p for p in d["node_pools"] if p["name"] == name]
    return p


def _job(d: dict[str, Any], name: str) -> dict[str, Any]:
    (j,) = [j for j in d["jobs"] if j["name"] == name]
    return j


def _queue(d: dict[str, Any], name: str) -> dict[str, Any]:
    (q,) = [q for q in d["capacity"]["cluster_queues"] if q["name"] == name]
    return q


def _move_to_pool(name: str, pool: str):
    """The job's own cluster moves to ``pool`` (prod's jobs are queued: ``node_pool:`` only)."""

    def mutate(d: dict[str, Any]) -> None:
        j = _job(d, name)
        assert "cluster" not in j and j.get("queue") == "ml-batch", j
        j["node_pool"] = pool

    return mutate


def _own_cluster_objects(job: str) -> dict[str, str]:
    """What a job with its own RayCluster comes with: its token and Secret, metrics, policies."""
    return {
        f"ray-secret-{job}-ray-auth": "create",
        f"ray-token-{job}-ray-auth": "create",
        f"ray-podmonitoring-{job}-ray-metrics": "create",
        f"kuberay-networkpolicy-{job}-ray": "create",
        f"kuberay-networkpolicy-{job}-ray-head": "create",
    }


def _add_pool_flavor(d: dict[str, Any]) -> None:
    """Node pool cpu-big (4 x n2-standard-64) and its flavor in ml-batch, after cpu."""
    d["node_pools"].append(
        {"name": "cpu-big", "machine_type": "n2-standard-64", "min_nodes": 0, "max_nodes": 4}
    )
    flavors = _queue(d, "ml-batch")["flavors"]
    at = [f["pool"] for f in flavors].index("cpu") + 1
    flavors.insert(at, {"pool": "cpu-big", "nominal": {"cpu": 240, "memory": 960}})
    d["nap"]["resource_limits"].update(cpu=8192, memory=32768)


def _add_team_queue(d: dict[str, Any]) -> None:
    """ClusterQueue vision in the ml cohort (system and cpu flavors) and its LocalQueue."""
    d["capacity"]["cluster_queues"].append(
        {
            "name": "vision",
            "cohort": "ml",
            "flavors": [
                {"pool": "system", "nominal": {"cpu": 4, "memory": "16Gi"}},
                {"pool": "cpu", "nominal": {"cpu": 60, "memory": "240Gi"}},
            ],
        }
    )
    d["capacity"]["local_queues"].append({"name": "vision", "cluster_queue": "vision"})


ROTATED_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nrotated\n-----END CERTIFICATE-----\n")

SCENARIOS = [
    Scenario(
        "rotate the cluster CA and endpoint",
        "prod",
        [
            Step(
                "GKE rotates the CA and the IP endpoint changes (kubeconfig only)",
                None,
                {},
                mocks={
                    "_fake_ca": lambda seed: ROTATED_CA.decode(),
                    "_ip": lambda seed: "34.9.9.9",
                },
            )
        ],
    ),
    Scenario(
        "rotate the Memorystore server CA",
        "prod",
        [
            Step(
                # the GCS Redis's own CA (not the cluster's): only the ConfigMap the RayService
                # heads mount changes; the RayService itself names the ConfigMap, not its data
                "Memorystore rotates the GCS Redis's server CA (the heads' CA ConfigMap follows)",
                None,
                {"ray-redis-ca": "update"},
                mocks={"_fake_redis_ca": lambda seed: base64.b64decode(ROTATED_CA).decode()},
            )
        ],
    ),
    Scenario(
        "grow a pool, then shrink it back",
        "prod",
        [
            Step(
                # prod's NAP limits are cpu 4096, memory 20480 since issue 21 (the pools reach
                # 3864 and 19616): 8 more n2-standard-16 nodes still fit, 16 more do not
                "cpu pool max 8 -> 24 nodes (NAP's CPU and memory limits raised to fit)",
                lambda d: (
                    _pool(d, "cpu").update(max_nodes=24),
                    d["nap"]["resource_limits"].update(cpu=8192, memory=32768),
                ),
                # prepare-corpus (queued since issue 21) brings its own cluster on this pool,
                # sized to it with fixed replicas (Kueue admits no in-tree autoscaling): its
                # worker group goes 8 -> 24 replicas, so the RayJob re-runs
                {**GROW_CPU, **CPU_JOBS_RERUN},
                CPU_JOB_EFFECTS,
            ),
            Step(
                "back to 8 nodes (and prod's limits)",
                lambda d: (
                    _pool(d, "cpu").update(max_nodes=8),
                    d["nap"]["resource_limits"].update(cpu=4096, memory=20480),
                ),
                {**GROW_CPU, **CPU_JOBS_RERUN},
                CPU_JOB_EFFECTS,
            ),
        ],
    ),
    Scenario(
        "a bigger head for the long-lived RayCluster",
        "prod",
        [
            Step(
                "training head 4 -> 8 CPUs (upgradeStrategy Recreate)",
                lambda d: _rc(d)["head"].update(cpu="8"),
                {"ray-raycluster-training": "update"},
                TRAINING_RECREATED,
            )
        ],
    ),
    Scenario(
        "a label on every resource (buckets included)",
        "prod",
        [
            Step(
                "labels.owner: ml-infra",
                lambda d: d["labels"].update(owner="ml-infra"),
                _updates(PROD_LABELLED),
            )
        ],
    ),
    Scenario(
        "bump Ray",
        "prod",
        [
            Step(
                "ray.version 2.60.0 -> 2.61.0: images rebuilt, Ray CRs follow",
                lambda d: d["ray"].update(version="2.61.0"),
                {
                    "images-cpu": "update",
                    "images-gpu": "update",
                    "images-tpu": "update",
                    "ray-raycluster-training": "update",
                    "ray-rayservice-lm": "update",
                    **PROD_RERUNS,
                },
                TRAINING_RECREATED | RERUN_EFFECTS | {INCREMENTAL},
            )
        ],
    ),
    Scenario(
        "change a job argument, twice",
        "prod",
        [
            Step(
                "train-lm-jax-v6e steps 20000 -> 30000",
                lambda d: _job(d, "train-lm-jax-v6e")["args"].update(steps=30000),
                {"ray-rayjob-train-lm-jax-v6e": "re-run"},
                {("RayJob ray/train-lm-jax-v6e", "re-run")},
            ),
            Step(
                "then max_failures 3 -> 5",
                lambda d: _job(d, "train-lm-jax-v6e").update(max_failures=5),
                {"ray-rayjob-train-lm-jax-v6e": "re-run"},
                {("RayJob ray/train-lm-jax-v6e", "re-run")},
            ),
        ],
    ),
    Scenario(
        "change a Serve argument",
        "prod",
        [
            Step(
                "lm target_ongoing_requests 16 -> 32 (serveConfigV2 only)",
                lambda d: d["services"][0]["args"].update(target_ongoing_requests=32),
                {"ray-rayservice-lm": "update"},
                {("RayService ray/lm", "rolling-restart")},
            )
        ],
    ),
    Scenario(
        "give the RayService fewer workers",
        "prod",
        [
            Step(
                # serve-autoscaling-fit: Serve's max_replicas may not outgrow the worker group,
                # so it comes down with it (a serveConfigV2 change, applied in place)
                "lm max_workers 3 -> 2 (rayClusterConfig, outside the upgrade hash) and "
                "args.max_replicas 3 -> 2",
                lambda d: (
                    d["services"][0].update(max_workers=2),
                    d["services"][0]["args"].update(max_replicas=2),
                ),
                {"ray-rayservice-lm": "update"},
                {("RayService ray/lm", "rolling-restart")},
            ),
            Step(
                "then a bigger head: a new cluster (NewClusterWithIncrementalUpgrade)",
                lambda d: d["services"][0].setdefault("head", {}).update(cpu="4", memory="16Gi"),
                {"ray-rayservice-lm": "update"},
                {INCREMENTAL},
            ),
        ],
    ),
    Scenario(
        "H100 capacity to spot",
        "prod",
        [
            Step(
                "h100 provisioning on-demand -> spot (node_config.spot forces a new pool)",
                lambda d: _pool(d, "h100").update(provisioning="spot"),
                # the pool's Kueue flavor selects the h100-fallback ComputeClass and the GPU
                # shape, not the pool nor gke-spot (components/capacity/render.py
                # class_flavor_labels), so nothing else changes with it
                {"pool-h100-pool": "replace"},
                {("node pool h100", "recreated")},
            )
        ],
    ),
    Scenario(
        "lower, then raise, a worker group's limits",
        "prod",
        [
            Step(
                "training cpu group max_replicas 8 -> 4",
                lambda d: _rc(d)["worker_groups"][0].update(max_replicas=4),
                {"ray-raycluster-training": "update"},
                {(f"{TRAINING} group cpu", "scaled-down")},
            ),
            Step(
                "then min_replicas 0 -> 1 (a scale-up; replica counts are outside the hash)",
                lambda d: _rc(d)["worker_groups"][0].update(min_replicas=1),
                {"ray-raycluster-training": "update"},
            ),
        ],
    ),
    Scenario(
        "rename the bucket prefix",
        "prod",
        [
            Step(
                "buckets.prefix: mlp-prod (new bucket names: everything that names them follows)",
                lambda d: d["buckets"].update(prefix="mlp-prod"),
                {
                    "storage-artifacts": "replace",
                    "storage-checkpoints": "replace",
                    "storage-datasets": "replace",
                    **dict.fromkeys(BUCKET_ACCESS, "replace"),
                    "ray-workloads": "replace",
                    "ray-raycluster-training": "update",
                    "ray-rayservice-lm": "update",
                    **PROD_RERUNS,
                },
                TRAINING_RECREATED | RERUN_EFFECTS | {INCREMENTAL},
            )
        ],
    ),
    Scenario(
        "a bigger machine for the CPU pool",
        "prod",
        [
            Step(
                "cpu n2-standard-16 -> n2-standard-32: nodes recreated, Ray pods resized",
                # prod's cpu limit (4096) already fits 8 x 32 vCPUs; memory 20480 -> 32768
                lambda d: (
                    _pool(d, "cpu").update(machine_type="n2-standard-32"),
                    d["nap"]["resource_limits"].update(memory=32768),
                ),
                # prepare-corpus now runs on its own cluster on the cpu pool (issue 21): its
                # pods are resized, so the job re-runs instead of being interrupted on training;
                # the lm service serves from the l4-serve pool and is not touched
                {
                    "cluster-gke": "update",
                    "pool-cpu-pool": "update",
                    QUOTA: "update",
                    "ray-raycluster-training": "update",
                    **CPU_JOBS_RERUN,
                },
                {
                    ("node pool cpu", "drained"),
                    *TRAINING_RECREATED,
                    *CPU_JOB_EFFECTS,
                },
            )
        ],
    ),
    Scenario(
        "turn deletion protection off, then on",
        "prod",
        [
            Step(
                "cluster.deletion_protection false (and `protect` off the stateful resources)",
                lambda d: d["cluster"].update(deletion_protection=False),
                _updates(PROTECTED),
            ),
            Step(
                "and on again",
                lambda d: d["cluster"].update(deletion_protection=True),
                _updates(PROTECTED),
            ),
        ],
    ),
    Scenario(
        "bump KubeRay between the carried versions",
        "dev",
        [
            Step(
                "chart 1.7.0 -> 1.6.2 (CRDs, then the operator)",
                lambda d: d["kuberay"].update(chart_version="1.6.2"),
                {
                    "kuberay-crd-rayclusters": "update",
                    "kuberay-crd-rayjobs": "update",
                    "kuberay-crd-rayservices": "update",
                    "kuberay-operator": "update",
                },
                {("KubeRay operator (kuberay-operator)", "restarted")},
            ),
            Step(
                "and 1.6.2 -> 1.7.0",
                lambda d: d["kuberay"].update(chart_version="1.7.0"),
                {
                    "kuberay-crd-rayclusters": "update",
                    "kuberay-crd-rayjobs": "update",
                    "kuberay-crd-rayservices": "update",
                    "kuberay-operator": "update",
                },
                {("KubeRay operator (kuberay-operator)", "restarted")},
            ),
        ],
    ),
    Scenario(
        "move to the REGULAR channel, then a GKE minor bump",
        "prod",
        [
            Step(
                "release_channel STABLE -> REGULAR",
                lambda d: d["cluster"].update(release_channel="REGULAR"),
                {"cluster-gke": "update"},
            ),
            Step(
                "min_master_version 1.35 -> 1.36 (node auto-upgrades drain the pools)",
                lambda d: d["cluster"].update(min_master_version="1.36"),
                {"cluster-gke": "update"},
                {("cluster ray-prod", "drained")},
            ),
        ],
    ),
    Scenario(
        "add a pool, then move a job onto it",
        "prod",
        [
            Step(
                # a queued job can only land on a pool its ClusterQueue has a flavor for (issue
                # 21): the pool comes with its ResourceFlavor and a flavor in ml-batch
                "node pool cpu-big (n2-standard-64) with its flavor in ml-batch, NAP limits raised",
                _add_pool_flavor,
                {
                    "pool-cpu-big": "create",
                    "pool-cpu-big-pool": "create",
                    "capacity-resourceflavor-cpu-big": "create",
                    "capacity-clusterqueue-ml-batch": "update",
                    "cluster-gke": "update",
                    QUOTA: "update",
                },
            ),
            Step(
                # before issue 21 the job left the training cluster and got its own cluster's
                # token, Secret, metrics and policies; now it has them: only its pool changes
                "prepare-corpus's own cluster moves from the cpu pool to cpu-big",
                _move_to_pool("prepare-corpus", "cpu-big"),
                {"ray-rayjob-prepare-corpus": "re-run"},
                {("RayJob ray/prepare-corpus", "re-run")},
            ),
        ],
    ),
    Scenario(
        "remove a worker group",
        "prod",
        [
            Step(
                "training drops its h100 group (the spec hash changes: Recreate)",
                lambda d: _rc(d)["worker_groups"].pop(2),
                {"ray-raycluster-training": "update"},
                TRAINING_RECREATED | {(f"{TRAINING} group h100", "deleted")},
            )
        ],
    ),
    Scenario(
        "drop the upgrade strategy, grow the head, restore Recreate",
        "prod",
        [
            Step(
                "upgrade_strategy Recreate -> None",
                lambda d: _rc(d).update(upgrade_strategy="None"),
                {"ray-raycluster-training": "update"},
            ),
            Step(
                "head 4 -> 8 CPUs: running pods keep their template (a note only)",
                lambda d: _rc(d)["head"].update(cpu="8"),
                {"ray-raycluster-training": "update"},
            ),
            Step(
                "upgrade_strategy None -> Recreate: the changed spec now recreates every pod",
                lambda d: _rc(d).update(upgrade_strategy="Recreate"),
                {"ray-raycluster-training": "update"},
                TRAINING_RECREATED,
            ),
        ],
    ),
    Scenario(
        "move the maintenance window",
        "prod",
        [
            Step(
                "04:00 -> 02:00",
                lambda d: d["cluster"].update(maintenance_window={"start_time": "02:00"}),
                {"cluster-gke": "update"},
            )
        ],
    ),
    Scenario(
        "add a job, then remove it",
        "prod",
        [
            # prod's jobs are queued since issue 21: the new job waits in ml-batch and brings
            # its own cluster on the cpu pool (before: a job on the training cluster, which
            # created only the RayJob)
            Step(
                "prepare-more, queued in ml-batch, on its own cluster on the cpu pool",
                lambda d: d["jobs"].append(
                    {
                        "name": "prepare-more",
                        "workload": "prepare",
                        "node_pool": "cpu",
                        "queue": "ml-batch",
                        "args": {"data": "gs://ray-gke-prod-corpus/more/"},
                    }
                ),
                {"ray-rayjob-prepare-more": "create", **_own_cluster_objects("prepare-more")},
            ),
            Step(
                "and removed",
                lambda d: d["jobs"].pop(),
                {
                    "ray-rayjob-prepare-more": "delete",
                    **dict.fromkeys(_own_cluster_objects("prepare-more"), "delete"),
                },
                {("RayJob ray/prepare-more", "deleted")},
            ),
        ],
    ),
    Scenario(
        "add a canary Serve application, then change its argument",
        "prod",
        [
            Step(
                "RayService lm-canary: lm with target_ongoing_requests 32",
                lambda d: d["services"].append(
                    {
                        **d["services"][0],
                        "name": "lm-canary",
                        "args": {**d["services"][0]["args"], "target_ongoing_requests": 32},
                    }
                ),
                {
                    "ray-rayservice-lm-canary": "create",
                    "ray-secret-lm-canary-ray-auth": "create",
                    "ray-token-lm-canary-ray-auth": "create",
                    "ray-podmonitoring-lm-canary-ray-metrics": "create",
                    "kuberay-networkpolicy-lm-canary-ray": "create",
                    "kuberay-networkpolicy-lm-canary-ray-head": "create",
                },
            ),
            Step(
                "canary target_ongoing_requests 32 -> 8, max_ongoing_requests to 32 (serveConfigV2 "
                "only)",
                lambda d: d["services"][1]["args"].update(
                    target_ongoing_requests=8, max_ongoing_requests=32
                ),
                {"ray-rayservice-lm-canary": "update"},
                {("RayService ray/lm-canary", "rolling-restart")},
            ),
        ],
    ),
    Scenario(
        "a larger TPU topology",
        "prod",
        [
            Step(
                "tpu-v6e 4x4 -> 4x8 (placement policy forces new pools: the slices are lost)",
                lambda d: (
                    _pool(d, "tpu-v6e-4x4")["tpu"].update(topology="4x8"),
                    # 2 slices of 4x8 (64 chips) plus the DWS pool's 2 of 4x4 (32): 96 chips
                    d["nap"]["resource_limits"].update(
                        cpu=8192, memory=65536, **{"tpu-v6e-slice": 128}
                    ),
                ),
                # the pool's ResourceFlavor carries its topology label (issue 21) and its
                # ComputeClass's Spot priority the slice's topology: both updated too
                {
                    "cluster-gke": "update",
                    QUOTA: "update",
                    "capacity-resourceflavor-tpu-v6e-4x4": "update",
                    "ray-computeclass-tpu-v6e-4x4-fallback": "update",
                    "pool-tpu-v6e-4x4-0-pool": "replace",
                    "pool-tpu-v6e-4x4-1-pool": "replace",
                    "ray-raycluster-training": "update",
                    "ray-rayjob-train-lm-jax-v6e": "re-run",
                },
                TRAINING_RECREATED
                | {
                    ("node pool tpu-v6e-4x4-0", "recreated"),
                    ("node pool tpu-v6e-4x4-1", "recreated"),
                    ("RayJob ray/train-lm-jax-v6e", "re-run"),
                },
            )
        ],
    ),
    Scenario(
        "add a team queue, then move a job to it",
        "prod",
        [
            Step(
                "ClusterQueue vision in the ml cohort and its LocalQueue in the ray namespace",
                _add_team_queue,
                {
                    "capacity-clusterqueue-vision": "create",
                    "capacity-localqueue-vision": "create",
                },
            ),
            Step(
                "prepare-corpus queue ml-batch -> vision (its kueue.x-k8s.io/queue-name label)",
                lambda d: _job(d, "prepare-corpus").update(queue="vision"),
                {"ray-rayjob-prepare-corpus": "re-run"},
                {("RayJob ray/prepare-corpus", "re-run")},
            ),
        ],
    ),
]


def test_the_suite_has_at_least_20_sequences() -> None:
    assert len(SCENARIOS) >= 20
    assert len({s.name for s in SCENARIOS}) == len(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario, base_render, monkeypatch, ray_261_locked) -> None:
    plans = run(scenario, monkeypatch, base_render[scenario.stack])
    for step, plan in zip(scenario.steps, plans, strict=True):
        assert plan_ops(plan) == step.plan, step.what
        assert plan_disruption(plan) == step.disruption, step.what
        assert plan.disruptive() is bool(step.disruption), step.what

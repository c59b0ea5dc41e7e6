"""The disruption rules (raygke/diff/disruption.py) on small hand-made records, and how
``raygke diff`` shows them (pure, fast)."""

from __future__ import annotations

import copy
import io

import yaml
from rich.console import Console

from raygke.diff import disruption as dis
from raygke.diff.compare import compare
from raygke.diff.formats import render_markdown, render_text
from raygke.diff.review_flags import pool_max_nodes

OPTS = {
    "protect": False,
    "ignore_changes": [],
    "replace_on_changes": [],
    "delete_before_replace": False,
    "retain_on_delete": False,
    "depends_on": [],
    "provider": None,
}


def _rec(typ: str, name: str, inputs: dict, **opts) -> dict:
    return {
        "type": typ,
        "name": name,
        "urn": f"urn:{typ}::{name}",
        "parent": None,
        "inputs": inputs,
        "options": {**OPTS, **opts},
    }


def _rc(strategy: str | None = None, head_cpu: str = "4", min_replicas: int = 0) -> dict:
    spec: dict = {
        "rayVersion": "2.60.0",
        "enableInTreeAutoscaling": True,
        "headGroupSpec": {"template": {"spec": {"containers": [{"resources": {"cpu": head_cpu}}]}}},
        "workerGroupSpecs": [
            {
                "groupName": "cpu",
                "minReplicas": min_replicas,
                "maxReplicas": 8,
                "template": {"spec": {"nodeSelector": {"cloud.google.com/gke-nodepool": "cpu"}}},
            }
        ],
    }
    if strategy:
        spec["upgradeStrategy"] = {"type": strategy}
    meta = {"name": "training", "namespace": "ray"}
    return _rec(dis.RAYCLUSTER, "rc", {"metadata": meta, "spec": spec})


JOB = _rec(
    dis.RAYJOB,
    "job",
    {
        "metadata": {"name": "train", "namespace": "ray"},
        "spec": {"clusterSelector": {"ray.io/cluster": "training"}, "entrypoint": "python a.py"},
    },
    replace_on_changes=["spec"],
    delete_before_replace=True,
)


def _effects(base: list[dict], head: list[dict]) -> set[tuple[str, str]]:
    plan = compare(base, head, "prod")
    return {(d["target"], d["effect"]) for c in plan.changes for d in c.disruption}


def test_raycluster_template_change_recreates_only_under_recreate() -> None:
    assert _effects([_rc(), JOB], [_rc(head_cpu="8"), JOB]) == set()
    assert _effects([_rc("Recreate"), JOB], [_rc("Recreate", head_cpu="8"), JOB]) == {
        ("RayCluster ray/training", "recreated"),
        ("RayJob ray/train", "interrupted"),
    }
    # replica counts are outside KubeRay's Recreate hash
    assert _effects([_rc("Recreate")], [_rc("Recreate", min_replicas=2)]) == set()


def test_recreate_drops_the_template_note() -> None:
    plan = compare([_rc("Recreate")], [_rc("Recreate", head_cpu="8")], "prod")
    assert plan.changes[0].notes == []
    plan = compare([_rc()], [_rc(head_cpu="8")], "prod")
    assert plan.changes[0].notes and "upgradeStrategy" in plan.changes[0].notes[0]


def _svc(strategy: str | None, batch: int = 16, head_cpu: str = "2") -> dict:
    serve = yaml.safe_dump({"applications": [{"name": "lm", "args": {"max_batch_size": batch}}]})
    cluster = {
        "enableInTreeAutoscaling": True,
        "headGroupSpec": {"template": {"spec": {"containers": [{"resources": {"cpu": head_cpu}}]}}},
        "workerGroupSpecs": [],
    }
    spec: dict = {"serveConfigV2": serve, "rayClusterConfig": cluster}
    if strategy:
        spec["upgradeStrategy"] = {"type": strategy}
    return _rec(
        dis.RAYSERVICE, "svc", {"metadata": {"name": "lm", "namespace": "ray"}, "spec": spec}
    )


def test_rayservice_upgrades_by_strategy() -> None:
    target = "RayService ray/lm"
    assert _effects([_svc(None)], [_svc(None, head_cpu="4")]) == {(target, "upgrade-new-cluster")}
    inc = "NewClusterWithIncrementalUpgrade"
    assert _effects([_svc(inc)], [_svc(inc, head_cpu="4")]) == {(target, "upgrade-incremental")}
    assert _effects([_svc("None")], [_svc("None", head_cpu="4")]) == set()
    plan = compare([_svc(None)], [_svc(None, batch=32)], "prod")
    (d,) = plan.changes[0].disruption
    assert d["effect"] == "rolling-restart" and "application(s) lm" in d["detail"]


def _served(strategy: str | None, head_cpu: str = "2", **options: int) -> dict:
    """:func:`_svc` with an L4 worker group (1 to 3 replicas) and ``clusterUpgradeOptions``."""
    rec = _svc(strategy, head_cpu=head_cpu)
    spec = rec["inputs"]["spec"]
    head = spec["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["resources"] = {"requests": {"cpu": head_cpu, "memory": "8Gi"}}
    spec["rayClusterConfig"]["workerGroupSpecs"] = [
        {
            "groupName": "l4",
            "minReplicas": 1,
            "maxReplicas": 3,
            "template": {"spec": {"nodeSelector": {"cloud.google.com/gke-nodepool": "l4-serve"}}},
        }
    ]
    if options:
        spec["upgradeStrategy"]["clusterUpgradeOptions"] = {
            "gatewayClassName": "gke-l7-rilb",
            **options,
        }
    return rec


L4_POOL = _rec(
    dis.NODEPOOL,
    "pool",
    {"name": "l4-serve", "autoscaling": {"totalMaxNodeCount": 4}, "nodeConfig": {}},
)


def _detail(base: dict, head: dict) -> tuple[str, str, list[str]]:
    plan = compare([base, L4_POOL], [head, L4_POOL], "prod")
    (change,) = [c for c in plan.changes if c.type == dis.RAYSERVICE]
    (d,) = change.disruption
    return d["effect"], d["detail"], change.flags


def test_diff_names_the_upgrade_kind_its_steps_and_the_capacity_while_both_run() -> None:
    inc = "NewClusterWithIncrementalUpgrade"
    opts = {"maxSurgePercent": 34, "stepSizePercent": 25, "intervalSeconds": 60}
    effect, detail, flags = _detail(_served(inc, **opts), _served(inc, head_cpu="4", **opts))
    assert effect == "upgrade-incremental"
    assert detail.startswith("incremental upgrade (NewClusterWithIncrementalUpgrade)")
    assert "rises 34% per round (3 round(s))" in detail
    assert (
        "traffic moves 25% every 60 s through Gateway gke-l7-rilb (4 step(s), at least 4 min"
        in detail
    )
    # 34% of 1..3 workers (rounded up), beside a second head
    assert (
        "a head pod (cpu 4, memory 8Gi) and 1 (up to 2) worker pod(s) of group l4 on pool "
        "l4-serve" in detail
    )
    assert flags == []
    effect, detail, flags = _detail(_served("NewCluster"), _served("NewCluster", head_cpu="4"))
    assert effect == "upgrade-new-cluster" and detail.startswith("new cluster (NewCluster)")
    assert "1 (up to 3) worker pod(s) of group l4 on pool l4-serve" in detail
    base, head = _served(None), _served(None)
    head["inputs"]["spec"]["serveConfigV2"] = yaml.safe_dump(
        {"applications": [{"name": "lm", "args": {"max_batch_size": 8}}]}
    )
    effect, detail, _ = _detail(base, head)
    assert effect == "rolling-restart" and detail.startswith("in-place Serve config update:")


def test_an_incremental_upgrade_without_room_for_its_first_round_is_flagged() -> None:
    inc = "NewClusterWithIncrementalUpgrade"
    opts = {"maxSurgePercent": 100, "stepSizePercent": 10, "intervalSeconds": 30}
    base, head = _served(inc, **opts), _served(inc, head_cpu="4", **opts)
    for rec in (base, head):  # the old cluster may hold all 4 nodes of the pool
        rec["inputs"]["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["maxReplicas"] = 4
    _, _, flags = _detail(base, head)
    assert len(flags) == 1 and "incremental (100% surge) upgrade" in flags[0]
    assert "needs 1 more node(s) on pool l4-serve" in flags[0]
    opts["maxSurgePercent"] = 25
    base, head = _served(inc, **opts), _served(inc, head_cpu="4", **opts)
    for rec in (base, head):
        rec["inputs"]["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["maxReplicas"] = 4
    _, _, flags = _detail(base, head)
    assert len(flags) == 1 and "incremental (25% surge) upgrade" in flags[0]


def test_crd_delete_operator_update_and_pools() -> None:
    crd = _rec(
        dis.CRD,
        "crd",
        {"metadata": {"name": "rayclusters.ray.io"}, "spec": {"names": {"kind": "RayCluster"}}},
    )
    assert _effects([crd], []) == {("every RayCluster", "deleted")}
    rel = _rec(dis.RELEASE, "op", {"name": "kuberay-operator", "version": "1.6.2"})
    new = copy.deepcopy(rel)
    new["inputs"]["version"] = "1.7.0"
    assert _effects([rel], [new]) == {("KubeRay operator (kuberay-operator)", "restarted")}
    tpu = _rec(
        dis.NODEPOOL,
        "tpu",
        {
            "name": "v6e",
            "placementPolicy": {"tpuTopology": "4x4"},
            "nodeConfig": {"machineType": "ct6e-standard-4t", "resourceLabels": {"a": "1"}},
            "autoscaling": {"maxNodeCount": 4},
        },
    )
    relabel = copy.deepcopy(tpu)
    relabel["inputs"]["nodeConfig"]["resourceLabels"] = {"a": "2"}
    assert _effects([tpu], [relabel]) == set()
    bumped = copy.deepcopy(tpu)
    bumped["inputs"]["version"] = "1.36.1-gke.100"
    plan = compare([tpu], [bumped], "prod")
    (d,) = plan.changes[0].disruption
    assert d["effect"] == "drained" and "multi-host TPU slice is recreated" in d["detail"]
    assert pool_max_nodes(tpu) == 4


def test_text_and_markdown_show_the_disruption() -> None:
    plan = compare([_rc("Recreate"), JOB], [_rc("Recreate", head_cpu="8"), JOB], "prod")
    assert plan.disruptive() and plan.to_json()["disruptive"] is True
    buf = io.StringIO()
    render_text(plan, Console(file=buf, width=300, no_color=True))
    text = buf.getvalue()
    assert "disrupts: RayCluster ray/training: recreated" in text
    assert "Disruption: 1 change stops or restarts running work" in text
    md = render_markdown(plan)
    assert "🛑 RayJob ray/train: interrupted" in md
    quiet = compare([_rc()], [_rc(head_cpu="8")], "prod")
    assert "**Disruption: none (no running work stops or restarts)**" in render_markdown(quiet)


def _with(record: dict, path: tuple, value: object) -> dict:
    """A copy of ``record`` with ``inputs.spec.<path>`` set to ``value``."""
    out = copy.deepcopy(record)
    cur = out["inputs"]["spec"]
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    return out


def test_recreate_ignores_the_fields_kuberay_leaves_out_of_its_hash() -> None:
    """KubeRay v1.7.0 GenerateHashWithoutReplicasAndWorkersToDelete (utils/util.go) mutes every
    pod template's tolerations and schedulingGates and upgradeStrategy itself: under Recreate a
    change of only those recreates nothing, and the template note stays (running pods keep
    their tolerations); turning Recreate on is the exception (shouldRecreatePodsForUpgrade
    compares with the head pod's hash from its creation)."""
    rc = _rc("Recreate")
    tol = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    worker_tol = _with(
        rc, ("workerGroupSpecs",), copy.deepcopy(rc["inputs"]["spec"]["workerGroupSpecs"])
    )
    worker_tol["inputs"]["spec"]["workerGroupSpecs"][0]["template"]["spec"]["tolerations"] = tol
    head_gate = copy.deepcopy(rc)
    head_gate["inputs"]["spec"]["headGroupSpec"]["template"]["spec"]["schedulingGates"] = [
        {"name": "kueue.x-k8s.io/admission"}
    ]
    for head in (worker_tol, head_gate):
        plan = compare([rc, JOB], [head, JOB], "prod")
        assert [c.op for c in plan.changes] == ["update"]
        assert plan.changes[0].disruption == []
        assert plan.changes[0].notes and "upgradeStrategy" in plan.changes[0].notes[0]
    # changing the strategy while it stays Recreate-free, or dropping Recreate, recreates nothing
    assert _effects([_rc("None"), JOB], [_rc(), JOB]) == set()
    assert _effects([_rc("Recreate"), JOB], [_rc("None"), JOB]) == set()
    # turning Recreate on does: the head pod keeps the hash of the spec it was created with, and
    # a diff of two renders cannot see what changed while Recreate was off
    assert ("RayCluster ray/training", "recreated") in _effects(
        [_rc(), JOB], [_rc("Recreate"), JOB]
    )
    # a toleration change together with a hashed one does recreate
    both = copy.deepcopy(worker_tol)
    both["inputs"]["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"] = {
        "cpu": "8"
    }
    assert ("RayCluster ray/training", "recreated") in _effects([rc, JOB], [both, JOB])


def test_rayservice_suspend_and_tolerations_bring_up_no_new_cluster() -> None:
    """rayservice_controller.go rayClusterSpecForHashing also mutes ``suspend``."""
    svc = _svc(None)
    suspended = _with(svc, ("rayClusterConfig", "suspend"), True)
    assert _effects([svc], [suspended]) == set()
    tol = copy.deepcopy(svc)
    tol["inputs"]["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"][
        "tolerations"
    ] = [{"key": "x", "operator": "Exists"}]
    assert _effects([svc], [tol]) == set()

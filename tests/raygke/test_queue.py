"""`raygke queue` (raygke/queue.py) through the real entry point, and the `raygke local` note."""

from __future__ import annotations

from components.plan.plan import plan
from components.stack.loader import load_stack_file
from raygke.queue import local_queue_note
from tests.raygke.test_cli import ROOT, raygke, write_stack


def test_prod_jobs_are_previewed_and_admitted() -> None:
    r = raygke("queue", "--stack", "prod")
    assert r.returncode == 0, r.stderr
    for job in ("prepare-corpus", "train-lm-jax-v6e", "train-lm-h100"):
        assert f"{job}: admitted at once" in r.stdout
    assert "ml-batch -> ml-batch" in r.stdout and "system, nominal" in r.stdout


def test_a_job_that_can_never_be_admitted_fails_queue_and_check(tmp_path) -> None:
    def shrink(config):
        flavors = config["ray-gke:capacity"]["cluster_queues"][0]["flavors"]
        flavors[1]["nominal"]["nvidia.com/gpu"] = 0  # the l4 flavor: no GPU quota at all

    path = write_stack(tmp_path, shrink)
    r = raygke("queue", "--config", str(path))
    assert r.returncode == 1
    assert "train-lm-l4: can never be admitted" in r.stdout
    assert "needs nvidia.com/gpu 2; cluster queue dev has 0" in r.stdout
    r = raygke("check", "--config", str(path), "--no-policy")
    assert r.returncode == 1
    assert (
        "jobs[train-lm-l4]: can never be admitted by queue dev: pod set 'l4' needs nvidia.com/gpu "
        "2; cluster queue dev has 0 (nominal plus borrowable)"
    ) in r.stderr


def test_local_says_queues_do_not_apply_for_a_queued_job() -> None:
    cfg = load_stack_file(ROOT / "Pulumi.dev.yaml")
    note = local_queue_note(cfg.jobs, ["prepare", "train_lm", "evaluate"])
    assert note is not None and "train-lm-l4 (queue dev)" in note
    assert "queues do not apply locally" in note
    assert local_queue_note(cfg.jobs, ["prepare", "evaluate"]) is None


def test_diff_shows_a_quota_change_as_a_cluster_queue_update() -> None:
    """The diff compares every record's inputs (raygke/diff/compare.py), so a nominalQuota change is an
    in-place update of the ClusterQueue naming the quota's path."""
    import copy

    from components.capacity.render import render_capacity
    from raygke.diff.compare import compare

    cfg = load_stack_file(ROOT / "Pulumi.prod.yaml")

    def records(objects):
        return [
            {
                "type": f"kubernetes:{o['apiVersion']}:{o['kind']}",
                "name": f"capacity-{o['kind'].lower()}-{o['metadata']['name']}",
                "inputs": o,
            }
            for o in objects
        ]

    base = render_capacity(plan(cfg), cfg.capacity)
    head = copy.deepcopy(base)
    (cq,) = [o for o in head if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "ml-batch"]
    (flavor,) = [
        f for f in cq["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "tpu-v6e-4x4"
    ]
    tpu = flavor["resources"][2]
    assert tpu["name"] == "google.com/tpu"
    tpu["nominalQuota"] = "16"
    diff = compare(records(base), records(head), "prod")
    (change,) = diff.changes
    assert (change.op, change.name) == ("update", "capacity-clusterqueue-ml-batch")
    (f,) = change.fields
    assert f.path.endswith("nominalQuota") and (f.old, f.new) == ("32", "16")


def test_queue_tries_a_set_and_gives_json() -> None:
    """``--set`` tries a quota cut without editing the file; ``--format json`` gives the verdicts
    as data (the never-admitted job's pod sets, its reason) and still exits 1."""
    import json

    cut = "capacity.cluster_queues[dev].flavors[system].nominal[cpu]=1"
    r = raygke("queue", "--stack", "dev", "--set", cut, "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    (job,) = doc["jobs"]
    assert (job["job"], job["state"]) == ("train-lm-l4", "never")
    assert job["reason"].startswith("pod set 'head' needs cpu 2; cluster queue dev has 1")
    head = job["pod_sets"][0]
    assert (head["name"], head["pods"], head["per_pod"]["cpu"]) == ("head", 1, 2.0)
    assert head["topology"] is None
    assert doc["not_queued"] == ["prepare-stdlib", "train-lm-jax-v5e"]
    r = raygke("queue", "--stack", "dev", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["jobs"][0]["state"] == "admitted"
    assert raygke("queue", "--stack", "dev", "--format", "xml").returncode == 2


def test_queue_shows_a_services_replicas_beside_the_queued_jobs() -> None:
    """RayServices are not Kueue workloads: prod's service shows its replicas on its worker
    group (1 L4 each, 1..3 of the 3 the l4-serve pool holds) and its autoscaling and routing."""
    import json

    r = raygke("queue", "--stack", "prod")
    assert r.returncode == 0, r.stderr
    assert "Services: replicas on their worker groups" in r.stdout
    assert "1 x NVIDIA L4 (1 per pod)" in r.stdout and "1..3 (group holds 3)" in r.stdout
    assert "up after 30 s (Ray's), down after 600 s (Ray's)" in r.stdout
    r = raygke("queue", "--stack", "prod", "--format", "json")
    (svc,) = json.loads(r.stdout)["services"]
    assert (svc["service"], svc["fits"], svc["routing"]) == ("lm", 3, "power_of_two")

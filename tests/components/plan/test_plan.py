"""The plan of a stack (:mod:`components.plan.plan`): every reference resolved once into records;
a broken reference is one problem, reported once with the resolver's message (by the rules and
by ``raygke check``); the plan of one ``StackConfig`` is computed once."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
import yaml

import components.plan.plan as plan_module
from components.kernel.base import StackConfigError
from components.plan.plan import plan
from components.plan.resolve import ResolveError, resolve_job
from components.raycrs.render import render_manifests
from components.stack.checks import check_stack
from components.stack.loader import validate
from raygke.cli import main
from tests.components.config.test_stack import base
from tests.helpers import ROOT, STACKS, WORKING_DIR, stack

# The resolver's own lines (its format is the resolver's; the plan and the rules keep it as is).
JOB_LINE = str(
    ResolveError("jobs[prep].node_pool", "'x' is not a declared node pool; declared: cpu, tpu, l4")
)
GROUP_LINE = str(
    ResolveError(
        "ray_clusters[research].worker_groups[tpu].node_pool",
        "'y' is not a declared node pool; declared: cpu, tpu, l4",
    )
)


def _broken() -> dict[str, Any]:
    """``base()`` with a job on an undeclared pool and a worker group on another."""
    d = base()
    d["jobs"][0].update(cluster=None, worker_group=None, node_pool="x")
    d["ray_clusters"][0]["worker_groups"][1]["node_pool"] = "y"
    return d


@pytest.mark.parametrize("name", STACKS)
def test_plan_of_a_shipped_stack_has_every_record(name: str) -> None:
    cfg = stack(name)
    p = plan(cfg)
    assert p.problems == ()
    assert list(p.pools) == [pool.name for pool in cfg.node_pools]
    assert list(p.clusters) == [rc.name for rc in cfg.ray_clusters]
    assert list(p.identities) == [w.name for w in cfg.workload_identities]
    assert [(t.cluster, t.group) for t in p.groups] == [
        (rc, g) for rc in cfg.ray_clusters for g in rc.worker_groups
    ]
    assert [t.job for t in p.jobs] == list(cfg.jobs)
    assert [s for s, _ in p.services] == list(cfg.services)
    for job in cfg.jobs:  # the records are the resolver's
        assert p.job(job) == resolve_job(cfg, job)
        assert p.runs_as(job) == p.job(job).runs_as
    for rc in cfg.ray_clusters:
        for g in rc.worker_groups:
            assert p.group(rc, g).pool is p.pools[g.node_pool]
    for svc in cfg.services:
        assert p.service(svc).pool is p.pools[svc.node_pool]
    ctx = p.context
    assert (ctx.project, ctx.region, ctx.cluster) == (cfg.project, cfg.region, cfg.cluster.name)
    assert ctx.namespace == cfg.kuberay.namespace
    assert ctx.ray_version == cfg.ray.version
    assert dict(ctx.labels) == cfg.labels
    assert ctx.bucket_url("checkpoints").startswith("gs://") and ctx.buckets["checkpoints"]


def test_prod_plan_has_a_service() -> None:
    """prod declares a RayService, so the service records are exercised (dev has none)."""
    p = plan(stack("prod"))
    assert len(p.services) >= 1


def test_a_broken_reference_leaves_its_record_out_and_is_one_problem() -> None:
    cfg = validate(base())
    d = _broken()
    with pytest.raises(StackConfigError) as exc:
        validate(d)
    # each broken reference once, with the resolver's message; the job on the broken group is
    # not reported a second time
    assert exc.value.problems.count(JOB_LINE) == 1
    assert exc.value.problems.count(GROUP_LINE) == 1
    assert [p for p in exc.value.problems if "is not a declared node pool" in p] == [
        GROUP_LINE,
        JOB_LINE,
    ]
    # the plan of such a stack exists: the broken records are left out, the problems kept
    jobs = [
        {"name": "prep", "workload": "prepare", "node_pool": "x"},
        {"name": "ok", "workload": "prepare", "cluster": "research", "worker_group": "cpu"},
    ]
    broken = cfg.model_copy(
        update={
            "jobs": [cfg.jobs[0].model_copy(update=j) for j in jobs],
            "ray_clusters": [
                cfg.ray_clusters[0].model_copy(
                    update={
                        "worker_groups": [
                            cfg.ray_clusters[0].worker_groups[0],
                            cfg.ray_clusters[0]
                            .worker_groups[1]
                            .model_copy(update={"node_pool": "y"}),
                        ]
                    }
                )
            ],
        }
    )
    p = plan(broken)
    assert [str(u.error) for u in p.problems] == [GROUP_LINE, JOB_LINE]
    assert [u.kind for u in p.problems] == ["worker_group", "job"]
    assert [t.job.name for t in p.jobs] == ["ok"]
    assert [t.group.name for t in p.groups] == ["cpu"]
    prep, ok = broken.jobs
    with pytest.raises(ResolveError) as e:
        p.job(prep)
    assert str(e.value) == JOB_LINE and e.value.field == "jobs[prep].node_pool"
    assert JOB_LINE.startswith("jobs[prep].node_pool") and "'x' is not a declared" in JOB_LINE
    assert p.job(ok).pool.name == "cpu"
    rc = broken.ray_clusters[0]
    with pytest.raises(ResolveError, match=r"^ray_clusters\[research\]\.worker_groups\[tpu\]"):
        p.group(rc, rc.worker_groups[1])
    with pytest.raises(KeyError, match="not in this plan"):
        p.job(stack("dev").jobs[0])  # an entry of another stack


def test_raygke_check_prints_a_broken_reference_once(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    conf = doc["config"]
    job = next(j for j in conf["ray-gke:jobs"] if j.get("node_pool"))
    job["node_pool"] = "nope"
    group = conf["ray-gke:ray_clusters"][0]["worker_groups"][1]
    group["node_pool"] = "nope"
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(["check", "--config", str(path), "--no-render"])
    text = out.getvalue()
    assert rc == 1
    rc_name = conf["ray-gke:ray_clusters"][0]["name"]
    pools = ", ".join(p["name"] for p in conf["ray-gke:node_pools"])
    what = f"'nope' is not a declared node pool; declared: {pools}"
    for line in (
        str(ResolveError(f"jobs[{job['name']}].node_pool", what)),
        str(
            ResolveError(f"ray_clusters[{rc_name}].worker_groups[{group['name']}].node_pool", what)
        ),
    ):
        assert text.count(line) == 1, text
    assert text.count("is not a declared node pool") == 2, text


def test_the_plan_is_computed_once_per_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    build = plan_module._build

    def counting(cfg: Any) -> Any:
        calls.append(id(cfg))
        return build(cfg)

    monkeypatch.setattr(plan_module, "_build", counting)
    cfg = validate(base())  # every rule of the validation reads one plan
    assert calls == [id(cfg)]
    render_manifests(cfg, WORKING_DIR)  # and so do the renders and the checks of the stack
    check_stack(cfg)
    assert calls == [id(cfg)]
    assert plan(cfg) is plan(cfg)
    other = cfg.model_copy(update={"jobs": []})  # another config object: its own plan
    assert plan(other).jobs == () and len(plan(cfg).jobs) == 1
    assert calls == [id(cfg), id(other)]


def test_a_stack_validated_in_part_has_a_plan_without_context() -> None:
    d = base()
    d["region"] = "moon"
    with pytest.raises(StackConfigError) as exc:  # the rules still ran over the plan
        validate(d)
    assert any(p.startswith("region:") for p in exc.value.problems)
    cfg = validate(base())
    partial = cfg.model_construct(
        **{k: getattr(cfg, k) for k in type(cfg).model_fields if k != "region"}
    )
    p = plan(partial)
    assert len(p.jobs) == 1
    with pytest.raises(ValueError, match="validated only in part"):
        p.context  # noqa: B018


@pytest.mark.parametrize("key", ["project", "region"])
def test_an_invalid_context_key_is_a_config_error_not_a_render_error(key: str) -> None:
    """A stack whose ``project`` or ``region`` does not validate has a plan without context;
    the rules that render node pools (the capacity rules: flavors, queues) are skipped for it
    ("not checked because ..."), never run into the missing context (the spec fuzz found a
    ValueError here)."""
    from components.stack.loader import stack_data_from_yaml

    data = stack_data_from_yaml((ROOT / "Pulumi.prod.yaml").read_text())
    data[key] = 5
    with pytest.raises(StackConfigError) as e:
        validate(data)
    text = str(e.value)
    assert f"{key}: Input should be a valid string" in text
    assert f"not checked because {key} is invalid" in text and "capacity rules" in text


@pytest.mark.slow  # the whole program under mocks per stack: make test, not make test-fast
@pytest.mark.parametrize("name", ["dev", "prod", "scale"])
def test_the_rendered_node_pools_are_the_plans_specs(name: str) -> None:
    """The node pools the program creates, the ComputeClasses' first priorities and the Kueue
    flavors of a shipped stack are the plan's node-pool records (:attr:`Plan.node_pool_specs`,
    :attr:`Plan.pool_specs`), not specs built again."""
    from components.capacity.render import class_flavor_labels, flavor_labels, render_capacity
    from components.computeclass.render import render_compute_classes
    from components.nodepools.render import node_pool_specs
    from raygke.synth import read_stack_config, run_program
    from tests.helpers import by_name

    cfg = stack(name)
    p = plan(cfg)
    records, _ = run_program(
        read_stack_config(ROOT / f"Pulumi.{name}.yaml"), name, crd_specs="digest"
    )
    pools = by_name(records, "gcp:container/nodePool:NodePool")
    assert sorted(s.name for s in p.node_pool_specs) == sorted(pools)  # every one, no other
    for s in p.node_pool_specs:
        assert pools[s.name]["nodeConfig"]["machineType"] == s.machine_type
        assert pools[s.name]["nodeLocations"] == s.zones
    assert p.pool_specs["system"] == (p.node_pool_specs[0],)
    assert list(p.pool_specs) == ["system", *(pool.name for pool in cfg.node_pools)]
    for pool, specs in p.pool_specs.items():
        assert all(s.pool == pool for s in specs) and specs
    # the entry point hands out the plan's own records
    assert all(a is b for a, b in zip(node_pool_specs(plan(cfg)), p.node_pool_specs, strict=True))
    class_pools = {c.name: c.node_pool for c in cfg.compute_classes}
    for cc in render_compute_classes(plan(cfg)):
        pool = class_pools[cc["metadata"]["name"]]
        assert cc["spec"]["priorities"][0] == {"nodepools": [s.name for s in p.pool_specs[pool]]}
    flavors = [o for o in render_capacity(plan(cfg), cfg.capacity) if o["kind"] == "ResourceFlavor"]
    for f in flavors:
        pool, labels = f["metadata"]["name"], f["spec"]["nodeLabels"]
        cc = p.compute_classes.get(pool)
        expected = (
            flavor_labels(p.pool_specs[pool])
            if cc is None
            else class_flavor_labels(p.pool_specs[pool], cc)
        )
        assert labels.items() <= expected.items()
    if name == "scale":  # the scale stack exercises the records beyond the system pool
        assert len(p.node_pool_specs) > len(cfg.node_pools) + 1
        assert flavors


def test_the_node_pool_records_are_built_once_per_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every render and check of one stack reads the plan's node-pool records: each declared
    pool's specs are built once (:func:`components.plan.nodepools.pool_specs`), however many
    renders (node pools, Ray CRs, ComputeClasses, Kueue objects, outputs, checks) ask."""
    from components.capacity.render import render_capacity
    from components.computeclass.render import render_compute_classes
    from components.nodepools.render import node_pool_specs
    from components.stack.outputs import accelerator_summary

    calls: list[str] = []
    build = plan_module.pool_specs

    def counting(ctx: Any, pool: Any, compute_class: str | None = None) -> Any:
        calls.append(pool.name)
        return build(ctx, pool, compute_class)

    monkeypatch.setattr(plan_module, "pool_specs", counting)
    cfg = validate(base())
    render_manifests(cfg, WORKING_DIR)
    check_stack(cfg)
    render_capacity(plan(cfg), cfg.capacity)
    render_compute_classes(plan(cfg))
    accelerator_summary(cfg)
    node_pool_specs(plan(cfg))
    assert sorted(calls) == sorted(pool.name for pool in cfg.node_pools)
    other = cfg.model_copy(update={"node_pools": cfg.node_pools[:1]})  # its own records
    assert [s.pool for s in plan(other).node_pool_specs][:2] == ["system", cfg.node_pools[0].name]
    assert calls[len(cfg.node_pools) :] == [cfg.node_pools[0].name]


@pytest.mark.parametrize("name", ["dev", "prod", "scale"])
def test_the_rendered_flavors_and_classes_are_the_plans_records(name: str) -> None:
    """The Kueue ResourceFlavors and the ComputeClasses that the renders hand out are the plan's
    records (:attr:`Plan.resource_flavors`, :attr:`Plan.compute_class_manifests`), as copies:
    changing a rendered object leaves the plan's record as it was."""
    import copy

    from components.capacity.render import flavor_pools, render_capacity, resource_flavor
    from components.computeclass.render import render_compute_classes

    cfg = stack(name)
    p = plan(cfg)
    assert list(p.resource_flavors) == list(p.pool_specs)  # every pool, system included
    for pool, flavor in p.resource_flavors.items():
        assert flavor["kind"] == "ResourceFlavor" and flavor["metadata"]["name"] == pool
        assert resource_flavor(plan(cfg), pool) == flavor
    rendered = [
        o for o in render_capacity(plan(cfg), cfg.capacity) if o["kind"] == "ResourceFlavor"
    ]
    listed = flavor_pools(cfg.capacity.cluster_queues) if cfg.capacity.enabled else []
    assert rendered == [p.resource_flavors[pool] for pool in listed]
    classes = render_compute_classes(plan(cfg))
    assert classes == list(p.compute_class_manifests)
    assert [c["metadata"]["name"] for c in classes] == [cc.name for cc in cfg.compute_classes]
    records = copy.deepcopy((dict(p.resource_flavors), p.compute_class_manifests))
    for o in [*rendered, *classes]:  # the caller owns what a render returns
        o["spec"].clear()
        o["metadata"]["labels"]["changed"] = "yes"
    assert (dict(p.resource_flavors), p.compute_class_manifests) == records
    if name == "prod":  # prod exercises both: class flavors and ComputeClasses
        assert classes and any(
            "cloud.google.com/compute-class" in f["spec"]["nodeLabels"]
            for f in p.resource_flavors.values()
        )


@pytest.mark.slow  # the whole program under mocks per stack: make test, not make test-fast
@pytest.mark.parametrize("name", ["dev", "prod", "scale"])
def test_the_declared_flavors_and_classes_are_the_plans_records(name: str) -> None:
    """The ResourceFlavors and ComputeClasses the Pulumi program of a shipped stack declares are
    the plan's records, each one, no other."""
    from raygke.synth import read_stack_config, run_program

    cfg = stack(name)
    p = plan(cfg)
    records, _ = run_program(
        read_stack_config(ROOT / f"Pulumi.{name}.yaml"), name, crd_specs="digest"
    )

    def declared(kind: str) -> dict[str, dict[str, Any]]:
        return {
            r["inputs"]["metadata"]["name"]: r["inputs"]
            for r in records
            if r["type"].endswith(f":{kind}") and r["type"].startswith("kubernetes:")
        }

    flavors = declared("ResourceFlavor")
    if cfg.capacity.enabled:
        assert flavors
    for pool, inputs in flavors.items():
        assert inputs == p.resource_flavors[pool]
    classes = declared("ComputeClass")
    assert sorted(classes) == sorted(c["metadata"]["name"] for c in p.compute_class_manifests)
    for c in p.compute_class_manifests:
        assert classes[c["metadata"]["name"]] == c
    if name == "prod":
        assert classes


def test_the_flavor_and_class_records_are_built_once_per_stack(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every render and check of one stack reads the plan's ResourceFlavors and ComputeClasses:
    each pool's flavor (:func:`components.plan.flavors.resource_flavor`) and each class's
    object (:func:`components.plan.computeclasses.compute_class_manifest`) is built once,
    however many renders, checks and previews ask."""
    from components.capacity.preview import preview
    from components.capacity.render import render_capacity, resource_flavor
    from components.computeclass.checks import compute_class_problems
    from components.computeclass.render import render_compute_classes
    from components.stack.loader import stack_data_from_yaml

    flavors: list[str] = []
    classes: list[str] = []
    build_flavor, build_class = plan_module.resource_flavor, plan_module.compute_class_manifest

    def count_flavor(pool: str, *args: Any) -> Any:
        flavors.append(pool)
        return build_flavor(pool, *args)

    def count_class(ctx: Any, cc: Any, *args: Any) -> Any:
        classes.append(cc.name)
        return build_class(ctx, cc, *args)

    import components.computeclass.render as class_render
    import components.plan.computeclasses as class_module
    import components.plan.flavors as flavor_module

    for module in (plan_module, flavor_module):  # wherever a render would look the builder up
        monkeypatch.setattr(module, "resource_flavor", count_flavor)
    for module in (plan_module, class_module, class_render):
        monkeypatch.setattr(module, "compute_class_manifest", count_class)
    # prod: capacity queues, class flavors and ComputeClasses; a fresh config, its own plan
    cfg = validate(stack_data_from_yaml((ROOT / "Pulumi.prod.yaml").read_text()))
    assert cfg.compute_classes and cfg.capacity.cluster_queues
    manifests = render_manifests(cfg, WORKING_DIR)
    for _ in range(2):
        check_stack(cfg)
        render_capacity(plan(cfg), cfg.capacity)
        render_compute_classes(plan(cfg))
        compute_class_problems(plan(cfg))
        preview(plan(cfg), cfg.capacity, manifests)
        for pool in plan(cfg).pool_specs:
            resource_flavor(plan(cfg), pool)
    assert sorted(flavors) == sorted(plan(cfg).pool_specs)
    assert classes == [cc.name for cc in cfg.compute_classes]
    other = cfg.model_copy(update={"compute_classes": cfg.compute_classes[:1]})  # its own records
    assert len(render_compute_classes(plan(other))) == 1
    assert classes[len(cfg.compute_classes) :] == [cfg.compute_classes[0].name]

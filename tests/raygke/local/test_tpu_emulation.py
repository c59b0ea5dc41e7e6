"""Emulated TPU slice: NodeLaunch contents, and a two-host JaxTrainer run through the TPU path.

The Ray test starts a private cluster with real ``ray start --block`` processes (one head, one
per :class:`raygke.local.tpu_emulation.NodeLaunch`, each with its own env), on free ports only (never
6379/8265/10001), and stops exactly those processes afterwards. The driver is a subprocess
``python -m workloads.train_lm_jax`` with ``RAY_ADDRESS`` set, as a Ray job would run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from components.catalog import CatalogError, tpu_slice
from raygke.local.cluster import LOCAL_DRAIN_ENV, LOCAL_DRAIN_S, free_port, ray_command
from raygke.local.tpu_emulation import (
    LABEL_POD_TYPE,
    LABEL_SLICE_NAME,
    LABEL_WORKER_ID,
    emulated_tpu_nodes,
    parse_spec,
    scaling_for_spec,
    tpu_job_args,
)

REPO = Path(__file__).resolve().parents[3]


def test_catalog_multi_host_slice_nodes_match_ray_tpu_conventions() -> None:
    nodes = emulated_tpu_nodes("v6e:4x4")
    assert len(nodes) == 4
    heads = [n for n in nodes if "TPU-v6e-16-head" in n.resources]
    assert heads == [nodes[0]]
    for i, n in enumerate(nodes):
        assert n.resources["TPU"] == 4
        assert n.resources["accelerator_type:TPU-V6E"] == 1
        assert n.env["TPU_WORKER_ID"] == str(i) == n.labels[LABEL_WORKER_ID]
        assert n.env["TPU_ACCELERATOR_TYPE"] == "v6e-16" == n.labels[LABEL_POD_TYPE]
        assert n.env["TPU_TOPOLOGY"] == "4x4"
        assert n.env["JAX_PLATFORMS"] == "cpu"
        assert len(n.env["TPU_WORKER_HOSTNAMES"].split(",")) == 4
    assert len({n.env["TPU_NAME"] for n in nodes}) == 1


def test_labels_and_resources_agree_with_rays_own_detection(monkeypatch) -> None:
    """What Ray's TPUAcceleratorManager derives from the env equals what NodeLaunch declares."""
    from ray._private.accelerators.tpu import TPUAcceleratorManager

    for node in emulated_tpu_nodes("v5e:4x4@2"):
        for k, v in node.env.items():
            monkeypatch.setenv(k, v)
        assert TPUAcceleratorManager.get_current_node_accelerator_labels() == {
            k: v for k, v in node.labels.items() if k != "ray.io/accelerator-type"
        }
        assert (
            node.labels["ray.io/accelerator-type"]
            == TPUAcceleratorManager.get_current_node_accelerator_type()
        )
        extra = TPUAcceleratorManager.get_current_node_additional_resources()
        assert {k: v for k, v in node.resources.items() if k in extra} == extra
        assert set(node.resources) - set(extra) == {"TPU", "accelerator_type:TPU-V5LITEPOD"}


def test_two_slices_have_distinct_names_and_one_head_each() -> None:
    nodes = emulated_tpu_nodes("v5e:4x4@2", slices=2)
    assert [n.labels[LABEL_SLICE_NAME] for n in nodes] == [
        "raygke-local-tpu-0",
        "raygke-local-tpu-0",
        "raygke-local-tpu-1",
        "raygke-local-tpu-1",
    ]
    assert [("TPU-v5litepod-16-head" in n.resources) for n in nodes] == [True, False] * 2
    assert all(n.resources["TPU"] == 8 for n in nodes)


def test_scaling_is_the_catalogs_for_catalog_shapes_and_follows_the_split_otherwise() -> None:
    assert scaling_for_spec("v6e:4x4", 2) == tpu_slice("v6e", "4x4").scaling_config(2)
    assert tpu_job_args({"tpu": "v5e:2x2"}) == {"scaling": tpu_slice("v5e", "2x2").scaling_config()}
    split = tpu_job_args({"tpu": {"spec": "v5e:4x4@2", "slices": 1}})["scaling"]
    assert split["num_workers"] == 2 and split["resources_per_worker"] == {"TPU": 8}
    assert split["topology"] == "4x4" and split["accelerator_type"] == "TPU-V5LITEPOD"
    assert parse_spec("v5e:4x4@2").test_only and not parse_spec("v5e:4x4").test_only


@pytest.mark.parametrize("bad", ["v5e", "v7x:2x2", "v5e:3x3", "v5e:2x2@3", "v6e-16"])
def test_bad_specs_are_refused_with_the_spec_named(bad: str) -> None:
    with pytest.raises(CatalogError) as e:
        emulated_tpu_nodes(bad)
    assert bad.split(":")[0] in str(e.value) or bad in str(e.value)


def test_local_env_without_tpu_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="--tpu"):
        tpu_job_args({})


# ---------------------------------------------------------------------------------------------
# A private multi-node cluster of real `ray start` processes


def _node_ports() -> dict[str, int]:
    return {
        k: free_port()
        for k in (
            "node-manager-port",
            "object-manager-port",
            "dashboard-agent-listen-port",
            "dashboard-agent-grpc-port",
            "metrics-export-port",
            "runtime-env-agent-port",
        )
    }


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "TPU_"))}
    env["RAY_TRAIN_V2_ENABLED"] = "1"
    # A private, loopback-only test cluster: token auth off, so no shared token file is needed
    # (other engineers' clusters on this machine rewrite theirs).
    env["RAY_AUTH_MODE"] = "disabled"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    # stopped at the end without Ray's SIGTERM drain (up to 30 s per node), as `raygke local
    # down` stops its nodes (raygke.local.cluster.LOCAL_DRAIN_S)
    env[LOCAL_DRAIN_ENV] = LOCAL_DRAIN_S
    return env


def _wait_started(proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    """Wait for ``ray start`` to print that the node runtime started (cheap: reads its log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "Ray runtime started" in text:
            return
        if proc.poll() is not None:
            raise RuntimeError(f"ray start exited {proc.returncode}: {text[-2000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"ray start not up after {timeout}s: {log.read_text()[-2000:]}")


@pytest.fixture
def emulated_cluster(tmp_path: Path):
    """Head (2 CPUs) + the two hosts of the test-only shape v5e:4x4@2. Yields the address."""
    import ray._private.services as services

    ip = services.get_node_ip_address()
    gcs_port = free_port()
    address = f"{ip}:{gcs_port}"
    env = _base_env()
    procs: list[subprocess.Popen] = []
    logs = tmp_path / "ray-logs"
    logs.mkdir()
    head = [
        *ray_command(), "start", "--head", "--block", f"--port={gcs_port}", "--num-cpus=2", "--num-gpus=0",
        "--include-dashboard=false", f"--ray-client-server-port={free_port()}",
        *(f"--{k}={v}" for k, v in _node_ports().items()),
    ]  # fmt: skip
    try:
        launches = [(head, env, "head")] + [
            ([*n.ray_start_args(address, _node_ports()), "--block"], {**env, **n.env}, n.name)
            for n in emulated_tpu_nodes("v5e:4x4@2", num_cpus=1)
        ]
        for args, node_env, name in launches:  # one at a time: 2 cores, other users
            log_path = logs / f"{name}.log"
            with open(log_path, "w") as log:
                procs.append(subprocess.Popen(args, env=node_env, stdout=log,
                                              stderr=subprocess.STDOUT, start_new_session=True))  # fmt: skip
            _wait_started(procs[-1], log_path)
        yield address, env
    finally:
        for p in reversed(procs):  # only the processes this fixture started (and their groups)
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def _tiny_dataset(root: Path, context: int = 32) -> Path:
    import pyarrow.fs as pafs

    from workloads.prepare import windows, write_shard

    text = (REPO / "workloads" / "model_jax.py").read_bytes()
    rows = windows([text], context)
    fs = pafs.LocalFileSystem()
    write_shard(fs, str(root / "train" / "part-00000.parquet"), rows[: len(rows) // 2])
    write_shard(fs, str(root / "train" / "part-00001.parquet"), rows[len(rows) // 2 :])
    (root / "_manifest.json").write_text(json.dumps({"context_length": context}))
    return root


@pytest.mark.ray
@pytest.mark.slow
def test_two_host_emulated_slice_trains_through_the_tpu_path(emulated_cluster, tmp_path) -> None:
    address, env = emulated_cluster
    placement = tmp_path / "placement.jsonl"
    config = {
        "dataset": str(_tiny_dataset(tmp_path / "ds")),
        "storage_path": str(tmp_path / "runs"),
        "name": "emu",
        "scaling": tpu_job_args({"tpu": "v5e:4x4@2"})["scaling"],
        "steps": 6,
        "batch_size": 4,
        "lr": 3e-3,
        "warmup": 2,
        "d_model": 32,
        "n_layers": 1,
        "n_heads": 2,
        "checkpoint_every": 3,
        "log_every": 1000,
        "max_failures": 0,
        "seed": 0,
        "placement_log": str(placement),
        # the slice's two hosts on the mesh's fsdp axis: the state sharded across processes
        "parallelism": "fsdp",
    }
    out = subprocess.run(
        [sys.executable, "-m", "workloads.train_lm_jax", "--config-json", json.dumps(config)],
        env={**env, "RAY_ADDRESS": address},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("RAYGKE_RESULT ")
    result = json.loads(last.removeprefix("RAYGKE_RESULT "))
    assert result["steps"] == 6 and result["devices"] == 2
    assert result["mesh"] == {"data": 1, "fsdp": 2, "tensor": 1}
    assert result["parallelism"] == "fsdp"
    assert "mesh: data 1 x fsdp 2 x tensor 1 (set by the parallelism argument)" in out.stdout
    assert np.isfinite(result["last_loss"]) and result["tokens_per_s"] > 0

    records = [json.loads(line) for line in placement.read_text().splitlines()]
    where = {r["rank"]: r for r in records if "node_id" in r}
    final = {r["rank"]: r for r in records if "params_sha256" in r}
    assert sorted(where) == [0, 1] == sorted(final)
    # Two distinct emulated hosts of one slice, each holding all 8 of its TPU "chips".
    assert where[0]["node_id"] != where[1]["node_id"]
    assert {w["labels"]["ray.io/tpu-worker-id"] for w in where.values()} == {"0", "1"}
    assert {w["labels"]["ray.io/tpu-slice-name"] for w in where.values()} == {"raygke-local-tpu-0"}
    for w in where.values():
        assert w["assigned"]["TPU"] == 8 and len(w["tpu_ids"]) == 8
        assert w["env"]["TPU_WORKER_ID"] == w["labels"]["ray.io/tpu-worker-id"]
        assert w["labels"]["ray.io/tpu-pod-type"] == "v5litepod-16"
        assert w["env"]["TPU_VISIBLE_CHIPS"] is not None  # set by Ray for TPU-holding workers
        # jax.distributed was initialised by JaxTrainer's TPU backend: 2 processes, 2 devices.
        assert (w["jax_process_count"], w["jax_devices"], w["jax_backend"]) == (2, 2, "cpu")
        assert w["jax_process_index"] == w["rank"]
    # The slice was reserved through its head resource, on the host labelled worker 0.
    heads = where[0]["tpu_head_placement_groups"]
    head_nodes = {n for pg in heads for n in pg["nodes"].values()}
    worker0 = [w["node_id"] for w in where.values() if w["env"]["TPU_WORKER_ID"] == "0"]
    assert heads and head_nodes == set(worker0)
    # Different batch rows per worker, parameter shards across them, and after training the
    # same whole parameters gathered on both.
    assert final[0]["params_sha256"] == final[1]["params_sha256"]
    assert final[0]["step"] == final[1]["step"] == 6

    from workloads.checkpoint import verify_checkpoint

    meta = verify_checkpoint(result["checkpoint"])
    assert meta["framework"] == "jax" and meta["step"] == 6

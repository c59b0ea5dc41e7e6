"""A local cluster takes free ports unless the stack file fixes them, so two checkouts' clusters
run side by side; ``make local``'s EXIT trap stops a cluster only once one is up."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from components.config.stack import LocalConfig
from raygke.local import cluster as local_cluster
from tests.raygke.local.test_commands import RAYGKE, REPO, _raygke


def test_unset_ports_are_free_ones_the_recorded_ones_or_the_stack_files(tmp_path: Path) -> None:
    assert LocalConfig().gcs_port is None and LocalConfig().dashboard_port is None
    a = local_cluster.make_target("local", LocalConfig(root=str(tmp_path / "a")))
    b = local_cluster.make_target("local", LocalConfig(root=str(tmp_path / "b")))
    for t in (a, b):
        assert t.gcs_port != t.dashboard_port
        assert not local_cluster.port_in_use(t.gcs_port)
        assert not local_cluster.port_in_use(t.dashboard_port)
    # the cluster that is up: its recorded ports, whatever is free now
    a.dir.mkdir(parents=True)
    a.state_file.write_text(json.dumps({"gcs_port": 40123, "dashboard_port": 40124}))
    again = local_cluster.make_target("local", LocalConfig(root=str(tmp_path / "a")))
    assert (again.gcs_port, again.dashboard_port) == (40123, 40124)
    fixed = LocalConfig(root=str(tmp_path / "a"), gcs_port=6380, dashboard_port=8266)
    t = local_cluster.make_target("local", fixed)
    assert (t.gcs_port, t.dashboard_port) == (6380, 8266)  # the stack file wins


def _fake_venv(tmp_path: Path, up_rc: int, run_rc: int) -> Path:
    """A venv whose ``bin/raygke`` logs its calls and fails ``up`` / ``run`` as told."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    script = venv / "bin" / "raygke"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {tmp_path}/calls\n'
        f'case "$2" in up) [ {up_rc} = 0 ] || {{ echo "error: port taken" >&2; exit {up_rc}; }};;\n'
        f"  run) exit {run_rc};;\n"
        '  down) echo "no local cluster is recorded for stack; nothing to stop";;\n'
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    stamp = venv / ".raygke-installed"
    stamp.write_text("")
    newer = (REPO / "pyproject.toml").stat().st_mtime + 10
    os.utime(stamp, (newer, newer))
    return venv


def _make_local(venv: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "local", f"VENV={venv}"], cwd=REPO, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip


def test_make_local_stops_nothing_when_up_failed_and_ends_on_its_error(tmp_path: Path) -> None:
    r = _make_local(_fake_venv(tmp_path, up_rc=1, run_rc=0))
    assert r.returncode != 0
    assert "nothing to stop" not in r.stdout + r.stderr
    # not make's own lines ("make: ***", or "make[1]: ***" under an outer make, as in CI)
    ours = [ln for ln in r.stderr.splitlines() if not re.match(r"make(\[\d+\])?:", ln)]
    assert ours[-1] == "error: port taken"
    assert [c.split()[1] for c in (tmp_path / "calls").read_text().splitlines()] == ["up"]


def test_make_local_stops_the_cluster_when_the_run_fails(tmp_path: Path) -> None:
    r = _make_local(_fake_venv(tmp_path, up_rc=0, run_rc=3))
    assert r.returncode != 0
    calls = [c.split()[1] for c in (tmp_path / "calls").read_text().splitlines()]
    assert calls == ["up", "run", "down"]
    assert "next:" not in r.stdout, "a failed run names no next step"
    assert (tmp_path / "calls").read_text().splitlines()[-1] == "local down --if-mine"


def test_make_local_that_succeeded_ends_on_the_next_step(tmp_path: Path) -> None:
    r = _make_local(_fake_venv(tmp_path, up_rc=0, run_rc=0))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith("next: make serve  (the trained model behind")


def _portless_stack(folder: Path, root: Path) -> Path:
    path = folder / "Pulumi.t.yaml"
    path.write_text(
        "config:\n"
        "  ray-gke:project: local-test\n"
        "  ray-gke:region: us-central1\n"
        "  ray-gke:zones: [us-central1-a]\n"
        "  ray-gke:local:\n"
        "    workers: 0\n"
        "    cpus_per_node: 1\n"
        f"    root: {root}\n"
    )
    return path


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.skipif(not RAYGKE.exists(), reason=f"console script {RAYGKE} missing")
def test_a_cluster_comes_up_beside_one_on_the_old_fixed_ports(tmp_path: Path) -> None:
    """Another checkout's cluster holds 6380 and 8266 (sockets stand in for it where those
    ports are free): ``up`` without ports in the stack file takes free ones and comes up."""
    pytest.importorskip("ray")
    cfg = _portless_stack(tmp_path, tmp_path / "root")
    state_file = tmp_path / "root" / "t" / "state.json"
    with contextlib.ExitStack() as held:
        for port in (6380, 8266):
            if not local_cluster.port_in_use(port):
                s = held.enter_context(socket.socket())
                s.bind(("127.0.0.1", port))
                s.listen()
        try:
            r = _raygke("up", "--config", str(cfg), cwd=tmp_path)
            assert r.returncode == 0, r.stdout + r.stderr
            state = json.loads(state_file.read_text())
            assert {state["gcs_port"], state["dashboard_port"]}.isdisjoint({6380, 8266})
            r = _raygke("status", "--config", str(cfg), cwd=tmp_path)  # finds it again
            assert r.returncode == 0 and state["dashboard_url"] in r.stdout, r.stderr
        finally:
            if state_file.exists():
                _raygke("down", "--config", str(cfg), cwd=tmp_path)


# Run in a fresh interpreter: Ray reads its token-auth settings once, at import, and this test
# process may have imported it before ``use_cluster_auth`` set them.
_RETRY_SCRIPT = """
import json, sys
from components.config.stack import LocalConfig
from raygke.local import cluster as c

real_launch, calls, said = c._launch, [], []
timed_out = (
    "import sys; print('Exception: The current node timed out during startup. This could "
    "happen because some of the raylet failed to startup'); sys.exit(1)"
)

def first_head_times_out(target, name, role, args, *rest, **kw):
    calls.append(name)
    if calls == ["head"]:
        return real_launch(target, name, role, args, *rest[:4], script=timed_out)
    return real_launch(target, name, role, args, *rest, **kw)

c._launch = first_head_times_out
target = c.make_target("t", LocalConfig(root=sys.argv[1], workers=0, cpus_per_node=1))
state = c.start_cluster(target, on_progress=said.append)
alive = c.nodes_of(state)[0].alive
left = c.stop_nodes(c.nodes_of(state))
print(json.dumps({"calls": calls, "said": said, "status": state["status"], "alive": alive,
                  "left": left, "log1": (target.dir / "logs" / "head.log.1").read_text()}))
"""


@pytest.mark.ray
def test_a_head_that_timed_out_registering_is_started_once_more(tmp_path: Path) -> None:
    """``ray start`` exits when its raylet has not registered with the GCS within 30 s (a loaded
    machine; a CI failure): ``start_cluster`` starts that node once more and comes up, the first
    try's log kept as ``head.log.1``."""
    r = subprocess.run(
        [str(RAYGKE.parent / "python"), "-c", _RETRY_SCRIPT, str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["calls"] == ["head", "head"] and out["status"] == "up" and out["alive"]
    assert "head timed out registering with Ray's GCS; starting it again" in out["said"]
    assert "timed out during startup" in out["log1"]
    assert out["left"] == []

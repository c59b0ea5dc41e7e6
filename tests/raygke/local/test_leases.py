"""Who started a local cluster and who uses it (raygke/local/leases.py, issue 50): ``down`` at the
end of a command stops only a cluster that command started and nobody else uses, ``down`` by hand
names what it would interrupt and wants ``--force``, a second pipeline on a busy cluster is
refused without changing anything, and a ``down`` leaves a note that says who stopped the cluster.

The cluster here is fake (no Ray): one ``sleep`` in its own session stands for a node, recorded
in ``state.json`` as ``raygke local up`` records a node, so ``down`` stops it like a node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from raygke.local import cluster as local_cluster
from raygke.local import leases
from tests.raygke.local.test_commands import REPO, _raygke, _stack_file


def _fake_cluster(tmp_path: Path, owner_pid: int) -> tuple[Path, Path, subprocess.Popen]:
    """A stack file and a recorded 'cluster' of one sleeping node, started by ``owner_pid``."""
    cfg = _stack_file(
        tmp_path, tmp_path / "root", local_cluster.free_port(), local_cluster.free_port()
    )
    folder = tmp_path / "root" / "t"
    folder.mkdir(parents=True, exist_ok=True)
    node = subprocess.Popen(["sleep", "120"], start_new_session=True)
    record = local_cluster.NodeRecord(
        "head", "head", node.pid, local_cluster.proc_start_ticks(node.pid), 1, "", []
    )
    state = {
        "stack": "t",
        "nodes": [record.__dict__],
        "buckets": {b: str(folder / "buckets" / b) for b in local_cluster.BUCKETS},
        "dashboard_url": "http://127.0.0.1:1",
        "address": "127.0.0.1:1",
        "token_file": str(folder / "auth_token"),
        "tpu": None,
        "started_by": {
            "pid": owner_pid,
            "start_ticks": local_cluster.proc_start_ticks(owner_pid),
            "command": "make local",
            "at": time.time(),
        },
    }
    (folder / "state.json").write_text(json.dumps(state))
    return cfg, folder, node


def _foreign_lease(folder: Path, command: str = "raygke local run") -> subprocess.Popen:
    """A live process holding a lease, as another terminal's command would."""
    other = subprocess.Popen(["sleep", "120"])
    (folder / leases.LEASES).mkdir(exist_ok=True)
    lease = leases.Lease(
        str(other.pid), other.pid, local_cluster.proc_start_ticks(other.pid), command,
        "make local", time.time(),
    )  # fmt: skip
    (folder / leases.LEASES / f"{other.pid}.json").write_text(json.dumps(lease.__dict__))
    return other


def _stop(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


def test_a_command_stops_only_the_cluster_it_started_and_nobody_else_uses(tmp_path: Path) -> None:
    # the CLI's parent is this test process: "this shell" for `down --if-mine`
    cfg, folder, node = _fake_cluster(tmp_path, owner_pid=os.getpid())
    other = _foreign_lease(folder)
    try:
        # a second pipeline on the busy cluster: refused, nothing written
        r = _raygke("run", "prepare", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 1, r.stdout + r.stderr
        assert f'is in use by "raygke local run" (pid {other.pid}, from make local' in r.stderr
        assert "Nothing was submitted" in r.stderr
        assert not (folder / "runs").exists() and not (folder / "pending_run.json").exists()
        assert [x.pid for x in leases.live_leases(folder)] == [other.pid], "refused: no lease"

        # `down` at the end of this command (the Makefile's trap): in use, so left up
        r = _raygke("down", "--if-mine", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "left local cluster 't' up: in use by \"raygke local run\"" in r.stdout
        assert node.poll() is None

        # `down` by hand: names what it would interrupt, wants --force
        r = _raygke("down", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 1
        assert "stopping it would interrupt:" in r.stderr and f"(pid {other.pid}," in r.stderr
        assert f"`raygke local down --force --config {cfg}`" in r.stderr
        assert node.poll() is None

        # the other command ends: now this command's exit step stops what it started
        _stop(other)
        r = _raygke("down", "--if-mine", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0 and "down local cluster 't'" in r.stdout, r.stdout + r.stderr
        node.wait(timeout=10)
        assert not (folder / "state.json").exists()
    finally:
        _stop(node, other)


def test_a_cluster_started_elsewhere_is_left_up_and_force_says_whom_it_interrupted(
    tmp_path: Path,
) -> None:
    starter = subprocess.Popen(["sleep", "120"])  # another terminal's shell ran `up`
    cfg, folder, node = _fake_cluster(tmp_path, owner_pid=starter.pid)
    other = _foreign_lease(folder)
    try:
        r = _raygke("down", "--if-mine", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0
        assert (
            f"left local cluster 't' up: it was started by `make local` (pid {starter.pid}), "
            'not by this command; in use by "raygke local run"'
        ) in r.stdout
        assert node.poll() is None

        t0 = time.time() - 1
        r = _raygke("down", "--force", "--config", str(cfg), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert f'interrupted "raygke local run" (pid {other.pid}, from make local' in r.stdout
        node.wait(timeout=10)
        # the interrupted command can now say who stopped its cluster, when, and what next
        note = leases.vanished_note(folder, t0, "run it again")
        assert note is not None and "by `raygke local down --force` (pid " in note, note
        assert note.endswith("while this command ran; run it again")
        assert leases.vanished_note(folder, time.time() + 60, "x") is None, "an older down"
        assert leases.live_leases(folder) == []
    finally:
        _stop(node, other, starter)


def test_a_serve_application_holds_the_cluster_until_serve_stop(tmp_path: Path) -> None:
    cfg, folder, node = _fake_cluster(tmp_path, owner_pid=os.getpid())
    try:
        leases.serve_lease(folder, "lm")
        r = _raygke("down", "--if-mine", "--config", str(cfg), cwd=tmp_path)
        assert 'in use by "raygke local serve (application lm)"' in r.stdout, r.stdout
        r = _raygke("status", "--config", str(cfg), cwd=tmp_path)
        assert "started by `make local`" in r.stdout
        assert 'used by    "raygke local serve (application lm)"' in r.stdout
        leases.drop_serve_lease(folder, "lm")
        assert leases.live_leases(folder) == []
    finally:
        _stop(node)


def test_a_lease_is_exclusive_per_command_and_gone_with_its_process(tmp_path: Path) -> None:
    other = _foreign_lease(tmp_path)
    try:
        with (
            pytest.raises(leases.Busy, match=f"pid {other.pid}"),
            leases.hold(tmp_path, exclusive_of="raygke local run"),
        ):
            pass
        with leases.hold(tmp_path, exclusive_of="raygke local serve") as mine:
            assert {x.pid for x in leases.live_leases(tmp_path)} == {other.pid, mine.pid}
        assert [x.pid for x in leases.live_leases(tmp_path)] == [other.pid]
        _stop(other)
        assert leases.live_leases(tmp_path) == [], "a dead process holds no lease"
    finally:
        _stop(other)


def test_describe_names_the_command_behind_a_shell_wrapper() -> None:
    inner = subprocess.Popen(["sh", "-c", "sleep 30; true"])
    try:
        deadline = time.monotonic() + 10
        child = None
        while child is None and time.monotonic() < deadline:
            kids = Path(f"/proc/{inner.pid}/task/{inner.pid}/children").read_text().split()
            child = int(kids[0]) if kids else None
            time.sleep(0.05)
        assert child is not None
        assert leases.describe(child, "x") == "sleep 30"
        # `sh -c` is a wrapper: its command is what ran it (this test process)
        assert leases.describe(inner.pid, "x") == leases.describe(os.getpid(), "x") != "x"
    finally:
        _stop(inner)


def test_make_local_stops_the_cluster_only_through_down_if_mine() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "trap 'rc=$$?; $(BIN)/raygke local down --if-mine; " in makefile


def test_a_command_whose_cluster_was_stopped_says_who_stopped_it_and_how_to_go_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import typer

    from raygke.local import app

    state = {"token_file": str(tmp_path / "auth_token"), "dashboard_url": "http://127.0.0.1:1"}
    entry = {"by": "raygke local down --force", "caller": "", "pid": 77, "at": time.time() + 1}
    (tmp_path / leases.LAST_DOWN).write_text(json.dumps(entry))
    with pytest.raises(typer.Exit) as e, app.api_errors(state, "train_lm", "rerun it"):
        raise ConnectionError("('Connection aborted.', RemoteDisconnected(...))")
    assert e.value.exit_code == 1
    err = capsys.readouterr().err
    assert "error: job train_lm: the local cluster was stopped at " in err
    assert "by `raygke local down --force` (pid 77) while this command ran; rerun it" in err
    assert "Connection aborted" not in err
    # no such record: the Jobs API's failure, as before
    (tmp_path / leases.LAST_DOWN).unlink()
    with pytest.raises(typer.Exit), app.api_errors(state, "train_lm"):
        raise ConnectionError("refused")
    assert "the Jobs API at http://127.0.0.1:1 failed: refused" in capsys.readouterr().err

"""The fair setting of ``bench/serve_openai.py`` (issue 51 item 1): which CPUs the vLLM engine
processes run on, what each process of the request path costs in CPU per output token, and the
Serve variants measured. Linux only (``/proc``, ``sched_setaffinity``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _descendants(root: int) -> list[int]:
    """Process ids below ``root`` (from ``/proc/<pid>/stat``'s parent ids)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def pin_engines(cpus: set[int]) -> list[str]:
    """Pin every thread of each vLLM engine process below this one (a command line starting
    ``VLLM::``, vLLM's process titles: ``VLLM::EngineCore``, ``VLLM::Worker``) to ``cpus``;
    returns the titles of the processes pinned."""
    pinned: list[str] = []
    for pid in _descendants(os.getpid()):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if not title.startswith(b"VLLM::"):
            continue
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                os.sched_setaffinity(int(tid), cpus)
        except OSError:  # the process or a thread ended meanwhile
            continue
        pinned.append(title.split(b"\0")[0].decode(errors="replace"))
    return pinned


def cpu_split(spec: str | None) -> tuple[set[int], set[int]]:
    """(engine CPUs, the rest) of this process' CPUs; ``spec``: ``1`` or ``2,3`` (default: the
    last CPU). With one CPU both are that CPU.

    Raises:
        ValueError: a CPU of ``spec`` is not this process'."""
    mine = sorted(os.sched_getaffinity(0))
    engine = {int(x) for x in spec.split(",")} if spec else {mine[-1]}
    if not engine <= set(mine):
        raise ValueError(f"--engine-cpus {spec}: this process may use CPUs {mine} only")
    rest = set(mine) - engine
    return engine, rest or set(mine)


def _hop(pid: int, cmdline: bytes) -> str:
    """The request path's part a process is (for the CPU cost per token): Ray's worker
    processes by their titles (``ray::ProxyActor``, ``ray::ServeReplica:lm:OpenAiIngress``,
    ``ray::ServeReplica:lm:LLMServer:lm``), vLLM's (``VLLM::EngineCore``), vLLM's own API
    server, this driver (the load clients), else the program's name (raylet, gcs_server)."""
    if pid == os.getpid():
        return "bench clients"
    first = cmdline.split(b"\0")[0].decode(errors="replace")
    if first.startswith(("ray::", "VLLM::")):
        # a Ray worker's title names the task it runs (ray::ServeController.listen_for_change)
        return first.split(" ")[0].split(".")[0]
    if b"vllm.entrypoints" in cmdline:
        return "vllm api_server"
    return Path(first).name or "?"


def cpu_by_process() -> dict[int, tuple[str, float]]:
    """Per process (this one and every one below it): its :func:`_hop` and the CPU seconds
    (user + system) it has used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[str, float]] = {}
    for pid in [os.getpid(), *_descendants(os.getpid())]:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out[pid] = (_hop(pid, cmdline), (int(fields[11]) + int(fields[12])) / tick)
    return out


def cpu_used(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds each hop used between two :func:`cpu_by_process` snapshots (per process,
    then summed: a process started in between counts from its start)."""
    used: dict[str, float] = {}
    for pid, (hop, sec) in after.items():
        used[hop] = used.get(hop, 0.0) + sec - before.get(pid, (hop, 0.0))[1]
    return used


VARIANT_ENV = {"throughput": {"RAY_SERVE_THROUGHPUT_OPTIMIZED": "1"}}


def variant_settings(name: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(environment, serve_llm arguments) of a variant (see the module docstring).

    Raises:
        ValueError: an unknown part."""
    env: dict[str, str] = {}
    args: dict[str, Any] = {}
    for part in name.split("+"):
        if part == "default":
            continue
        if part in VARIANT_ENV:
            env.update(VARIANT_ENV[part])
        elif part.startswith("batch") and part[5:].isdigit():
            args["stream_batching_interval_ms"] = int(part[5:])
        else:
            raise ValueError(
                f"variant part {part!r}: allowed: default, throughput, batch<ms>, joined with +"
            )
    return env, args


def hop_costs(runs: list[dict[str, Any]]) -> str:
    """Each process group's CPU milliseconds per output token over ``runs`` (their ``cpu`` and
    ``tokens``), largest first, those of 0.01 ms or more, and the total."""
    tokens = sum(r["tokens"] for r in runs) or 1
    cost: dict[str, float] = {}
    for r in runs:
        for hop, sec in r["cpu"].items():
            cost[hop] = cost.get(hop, 0.0) + sec * 1e3 / tokens
    shown = sorted(((v, h) for h, v in cost.items() if v >= 0.01), reverse=True)
    parts = ", ".join(f"{h} {v:.2f}" for v, h in shown)
    return f"{parts}; total {sum(cost.values()):.2f}"

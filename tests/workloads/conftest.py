"""Fixtures of the workload tests: ``tiny_dataset``, a small prepared corpus (real local Ray)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_dataset(ray_cluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workloads.prepare import main

    root = tmp_path_factory.mktemp("corpus")
    for i in range(16):
        body = "".join(f"def f{j}(x):\n    return x + {j}\n\n" for j in range(40))
        (root / f"m{i}.py").write_text(body)
    ds = tmp_path_factory.mktemp("data") / "ds"
    main(
        {
            "data": str(root),
            "dataset": str(ds),
            "context_length": 32,
            "val_fraction": 0.2,
            "num_shards": 2,
        }
    )
    return ds

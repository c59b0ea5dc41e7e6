"""The history-server collector's backend rules (components/raycrs/operator/features.py
``collector_backend_env``, KubeRay v1.7.0 validation.go validateCollectorOptions), and that the
stack has no key that renders ``historyServerOptions``."""

from __future__ import annotations

import pytest

from components.raycrs.operator.features import collector_backend_env
from components.stack.loader import StackConfigError, validate
from tests.helpers import config


def _env(**values: str | None) -> dict[str, dict]:
    """Env entries by name; ``None`` stands for a ``valueFrom`` (a Secret reference)."""
    return {
        k: ({"name": k, "value": v} if v is not None else {"name": k, "valueFrom": {}})
        for k, v in values.items()
    }


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        (_env(STORAGE_BACKEND="GCS", GCS_BUCKET="b"), []),
        (_env(STORAGE_BACKEND="gcs", GCS_BUCKET=None), []),  # valueFrom counts; case-insensitive
        (_env(STORAGE_BACKEND="GCS", GCS_BUCKET=""), ["GCS_BUCKET"]),
        (_env(STORAGE_BACKEND="S3", S3_BUCKET="b"), ["S3_REGION"]),
        (_env(STORAGE_BACKEND="S3", S3_REGION="us-east-1"), []),
        (_env(STORAGE_BACKEND="aliyunoss", OSS_BUCKET="b"), ["OSS_ENDPOINT", "OSS_REGION"]),
        (
            _env(STORAGE_BACKEND="AZUREBLOB", AZURE_STORAGE_AUTH_MODE="connection_string"),
            ["AZURE_STORAGE_CONNECTION_STRING"],
        ),
        (
            _env(STORAGE_BACKEND="AZUREBLOB", AZURE_STORAGE_AUTH_MODE=" Workload_Identity "),
            ["AZURE_STORAGE_ACCOUNT_URL"],
        ),
        (
            _env(STORAGE_BACKEND="AZUREBLOB"),
            ["either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL"],
        ),
        (_env(STORAGE_BACKEND="AZUREBLOB", AZURE_STORAGE_ACCOUNT_URL="https://a"), []),
        (_env(STORAGE_BACKEND="local"), []),  # no rule for another backend
    ],
)
def test_collector_backend_needs_its_variables(env: dict, missing: list[str]) -> None:
    found = collector_backend_env(env)
    assert len(found) == len(missing)
    for why, name in zip(found, missing, strict=True):
        assert why.startswith(name) and "STORAGE_BACKEND is" in why


@pytest.mark.parametrize("key", ["history_server", "historyServerOptions"])
def test_the_stack_has_no_key_for_the_history_server(key: str) -> None:
    """The collector rules guard manifests only: a stack cannot render historyServerOptions, and
    a ray cluster key for it is refused as unknown rather than ignored."""
    data = config(
        ray_clusters=[
            {
                "name": "research",
                key: {"collector": {"image": "c:1"}},
                "worker_groups": [{"name": "cpu", "node_pool": "cpu", "max_replicas": 1}],
            }
        ]
    )
    with pytest.raises(StackConfigError) as e:
        validate(data)
    assert any(key in p and p.path.startswith("ray_clusters") for p in e.value.problems)

"""contract.quantity: Kubernetes' quantity grammar, exact base units, the API server's limits."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contract.quantity import (
    QUANTITY_MAX,
    QuantityError,
    cpu_quantity,
    kept_as_written,
    memory_quantity,
    parse_quantity,
    quantity_float,
    quantity_int,
)


@pytest.mark.parametrize(
    ("text", "base"),
    [
        ("1.5Gi", Decimal(3 * 2**29)),
        ("500m", Decimal("0.5")),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("2Ki", Decimal(2048)),
        ("16Gi", Decimal(16 * 2**30)),
        ("1500M", Decimal(1_500_000_000)),
        ("4", Decimal(4)),
        ("0.001", Decimal("0.001")),
        ("1E", Decimal(10) ** 18),  # a bare E is exa, not an exponent
        ("1Pi", Decimal(2**50)),
        ("1Ei", Decimal(2**60)),
        ("2.5e-3", Decimal("0.0025")),
        (".5", Decimal("0.5")),
        ("5.", Decimal(5)),
        ("2n", Decimal("2e-9")),  # nano and micro: suffix.go newSuffixer (Kueue's weights)
        ("1u", Decimal("0.000001")),
        (4, Decimal(4)),
        (0.25, Decimal("0.25")),
    ],
)
def test_parses_kubernetes_quantities(text: str | int | float, base: Decimal) -> None:
    assert parse_quantity(text) == base


@pytest.mark.parametrize(
    "text",
    [
        "4GB",
        "1.5 Gi",
        " 4",
        "",
        "Gi",
        ".",
        "e3",
        "1e",
        "1e3Gi",
        "1gi",
        "1K",
        "1N",
        "1U",
        "0x10",
        "1_000",
        "--1",
    ],
)
def test_refuses_what_kubernetes_refuses(text: str) -> None:
    with pytest.raises(
        QuantityError, match=r"is not a Kubernetes quantity \(e\.g\. 4, 500m, 16Gi\)"
    ):
        parse_quantity(text)


@pytest.mark.parametrize("value", [True, float("nan"), float("inf"), -1, "-1", "+1"])
def test_refuses_signs_and_non_numbers_by_default(value: object) -> None:
    with pytest.raises(QuantityError, match=f"^{value!r}".replace("+", r"\+")) as e:
        parse_quantity(value)  # type: ignore[arg-type]
    signed = value in (-1, "-1", "+1")
    assert ("has a sign; this takes a quantity of 0 or more" in str(e.value)) == signed


def test_signed_when_asked() -> None:
    assert parse_quantity("-1Gi", signed=True) == -(2**30)
    assert parse_quantity("+500m", signed=True) == Decimal("0.5")


def test_an_exponent_beyond_decimal_is_refused_not_raised() -> None:
    with pytest.raises(QuantityError):
        parse_quantity("1e99999999999")


def test_float_and_int_views() -> None:
    assert quantity_float("500m") == 0.5
    assert quantity_int("1500M") == 1_500_000_000
    assert quantity_int("1.5") == 1  # rounded down
    assert quantity_int("4Gi") == 4 * 2**30


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("9223372036854775808", "larger than"),
        ("9" * 20 + "Gi", "larger than"),
        ("1" + "0" * 40, "larger than"),
        ("0.0001", "finer than"),
        ("0.5m", "finer than"),
        ("1e-4", "finer than"),
    ],
)
def test_what_the_api_server_would_cap_or_round(text: str, why: str) -> None:
    assert why in (kept_as_written(text) or "")


@pytest.mark.parametrize("text", [str(QUANTITY_MAX), "1.5Gi", "500m", "0.001", "64", "1e3"])
def test_kept_as_written(text: str) -> None:
    assert kept_as_written(text) is None


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "k", "M", "Ki", "Mi", "Gi"]))
def test_suffix_scales_the_number(n: int, suffix: str) -> None:
    factor = {"": 1, "k": 10**3, "M": 10**6, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}[suffix]
    assert parse_quantity(f"{n}{suffix}") == n * factor
    assert parse_quantity(f"{n}m") * 1000 == n


@pytest.mark.parametrize(
    ("cores", "text"), [(3.97, "3900m"), (4.0, "4"), (0.15, "100m"), (12.0, "12")]
)
def test_cpu_quantity_floors_to_100m(cores: float, text: str) -> None:
    assert cpu_quantity(cores) == text
    assert parse_quantity(text) <= Decimal(str(cores))


@pytest.mark.parametrize(
    ("gib", "text"),
    [
        (30.7, "30Gi"),
        (16.0, "16Gi"),
        (3.3, "3328Mi"),
        (3.0, "3Gi"),
        (1.6, "1536Mi"),
        (0.3, "256Mi"),
    ],
)
def test_memory_quantity_floors(gib: float, text: str) -> None:
    assert memory_quantity(gib) == text
    assert parse_quantity(text) <= Decimal(str(gib)) * 2**30


@pytest.mark.parametrize(
    ("written", "hint"),
    [
        ("8GB", "; write 8G (10^9 bytes) or 8Gi (2^30)"),
        ("8gb", "; write 8G (10^9 bytes) or 8Gi (2^30)"),
        ("16GiB", "; write 16Gi (2^30 bytes) or 16G (10^9)"),
        ("512mi", "; write 512Mi (2^20 bytes) or 512M (10^6)"),
        ("8 Gi", "; write 8Gi (2^30 bytes) or 8G (10^9)"),
    ],
)
def test_a_unit_spelled_another_way_says_how_kubernetes_spells_it(written: str, hint: str) -> None:
    with pytest.raises(QuantityError) as e:
        parse_quantity(written)
    assert str(e.value).endswith(hint)


def test_other_non_quantities_get_no_unit_hint() -> None:
    with pytest.raises(QuantityError) as e:
        parse_quantity("4x")
    assert "write" not in str(e.value)

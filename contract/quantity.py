"""Kubernetes resource quantities: one parser and the formatting the renders use.

Standard library only (imported by the infrastructure and available to the workloads). The
grammar is Kubernetes' own (``k8s.io/apimachinery/pkg/api/resource/quantity.go``, documented at
https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/)::

    <quantity>        ::= <signedNumber><suffix>
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>

(quantity.go's comment lists ``m`` as the finest decimal suffix, but its parser takes ``n`` and
``u`` too: ``suffix.go`` ``newSuffixer``; Kueue's own tests write fair-sharing weights ``1u``,
``2n``.) ("1E" is 10^18, "1E3" is 1000.) The API server keeps a quantity as written only when it holds
at most 2^63-1 base units and is no finer than 1m ("no quantity may represent a number greater
than 2^63-1 in magnitude, nor may it have more than 3 decimal places"): :func:`kept_as_written`.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, localcontext

from contract.errors import ConfigurationError

# The largest quantity the API server holds without capping it: 2^63-1 base units (page above).
QUANTITY_MAX = 2**63 - 1
EXAMPLES = "e.g. 4, 500m, 16Gi"

BINARY_SI = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL_SI = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("0.001"), "": Decimal(1), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
}  # fmt: skip

_GRAMMAR = re.compile(
    r"(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)"
)


# Significant digits of the arithmetic: enough that any quantity of a few dozen digits is exact.
_DIGITS = 100


class QuantityError(ConfigurationError):
    """Not a Kubernetes quantity; the message names the value and gives examples."""


# a signed quantity where a request, a limit or a quota is meant (Kubernetes takes the sign)
_UNSIGNED = "{value} has a sign; this takes a quantity of 0 or more (" + EXAMPLES + ")"


def parse_quantity(value: str | int | float, *, signed: bool = False) -> Decimal:
    """``value`` in base units, exactly: ``"1.5Gi"`` -> 1610612736, ``"500m"`` -> 0.5,
    ``"1e3"`` -> 1000, ``"2Ki"`` -> 2048 (cores for ``cpu``, bytes for ``memory``).

    Args:
        value: a quantity string, or an int / float taken as that many base units (a YAML
            ``cpu: 4``).
        signed: accept a leading ``+`` / ``-`` (Kubernetes does; resource requests and the
            stack's fields do not, so the default refuses a sign).

    Raises:
        QuantityError: not a quantity of the grammar above (``"4GB"``, ``"1.5 Gi"``, ``""``,
            ``"-1"`` unless ``signed``), or a bool, NaN or infinite number.
    """
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a Kubernetes quantity ({EXAMPLES})")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a Kubernetes quantity ({EXAMPLES})")
        if value < 0 and not signed:
            raise QuantityError(_UNSIGNED.format(value=value))
        return Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    m = _GRAMMAR.fullmatch(str(value))
    if m and m.group("sign") and not signed:
        raise QuantityError(_UNSIGNED.format(value=repr(value)))
    if not m:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity ({EXAMPLES}){_hint(value)}")
    suffix = m.group("suffix") or ""
    with localcontext(prec=_DIGITS):
        try:
            number = Decimal(m.group("sign") + m.group("number"))
            if m.group("exp"):
                return number.scaleb(int(m.group("exp")[1:]))
        except ArithmeticError:  # an exponent beyond what Decimal holds
            raise QuantityError(f"{value!r} is not a Kubernetes quantity ({EXAMPLES})") from None
        return number * (BINARY_SI.get(suffix) or DECIMAL_SI[suffix])


_SUFFIX_SLIP = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([kKmMgGtTpPeE])([iI]?)[bB]?")


def _hint(value: object) -> str:
    """What to write for a unit Kubernetes does not spell so (``8GB``, ``8gb``, ``8 Gi``,
    ``512mi``): ``8G`` (10^9) or ``8Gi`` (2^30); ``""`` for anything else."""
    m = _SUFFIX_SLIP.fullmatch(str(value).strip())
    if not m:
        return ""
    number, letter, binary = m.groups()
    big = "k" if letter in "kK" else letter.upper()
    decimal, power = f"{number}{big}", {"k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}[big]
    iec = f"{number}{big.upper()}i"
    if str(value) in (decimal, iec):
        return ""
    first, second = (iec, decimal) if binary else (decimal, iec)
    exp = {"K": 10, "M": 20, "G": 30, "T": 40, "P": 50, "E": 60}[big.upper()]
    what = {iec: f"2^{exp}", decimal: f"10^{power}"}
    return f"; write {first} ({what[first]} bytes) or {second} ({what[second]})"


def quantity_float(value: str | int | float) -> float:
    """:func:`parse_quantity` as a float (``"500m"`` -> 0.5, ``"1Gi"`` -> 1073741824.0).

    Raises:
        QuantityError: as :func:`parse_quantity`.
    """
    return float(parse_quantity(value))


def quantity_int(value: str | int | float) -> int:
    """:func:`parse_quantity` rounded down to whole base units (``"1500M"`` -> 1500000000,
    ``"1.5"`` -> 1).

    Raises:
        QuantityError: as :func:`parse_quantity`.
    """
    return math.floor(parse_quantity(value))


def kept_as_written(value: str | int | float) -> str | None:
    """Why the API server would not keep ``value`` as written (it caps a quantity above
    2^63-1 base units and rounds one finer than 1m up), else None.

    Raises:
        QuantityError: as :func:`parse_quantity`.
    """
    base = parse_quantity(value)
    if abs(base) > QUANTITY_MAX:
        return "larger than a Kubernetes quantity holds (2^63-1 base units; the API server would cap it)"
    if (base * 1000) % 1:
        return (
            "finer than a Kubernetes quantity holds (1m, three decimal places; the API server "
            "would round it up)"
        )
    return None


def cpu_quantity(cores: float) -> str:
    """``cores`` rounded down to 100m, in the shortest form: 3.97 -> ``"3900m"``, 4.0 -> ``"4"``
    (a request that never exceeds what was measured)."""
    milli = math.floor(cores * 10) * 100
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def memory_quantity(gib: float) -> str:
    """``gib`` GiB rounded down to 1Gi from 16 GiB up, else to 256Mi: 30.7 -> ``"30Gi"``,
    3.3 -> ``"3328Mi"``, 1.6 -> ``"1536Mi"``."""
    if gib >= 16:
        return f"{math.floor(gib)}Gi"
    mi = math.floor(gib * 1024 / 256) * 256
    return f"{mi // 1024}Gi" if mi % 1024 == 0 else f"{mi}Mi"

"""The CEL rules of a CRD (``x-kubernetes-validations``), evaluated as the API server does on
create (:func:`rule_problems`; rules compiled once per process by :func:`compile_rule`).
Transition rules (:func:`transition`) are skipped; a rule the runtime cannot compile is a note,
never passed silently. The API server's semantics this follows, and the runtime:
docs/sources.md#kernel-crdcel
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

RULES_KEY = "x-kubernetes-validations"
NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)  # validation.go: the line the API server adds when a type error blocks the CEL rules

# escaping.go: CEL's reserved words; a property named like one is ``__<word>__`` in a rule
_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_IDENT = re.compile(r"[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*")


def escape(name: str) -> str | None:
    """The CEL identifier of property ``name`` (``escaping.go`` ``Escape``): a reserved word is
    ``__<word>__``; ``__`` -> ``__underscores__``, ``.`` -> ``__dot__``, ``-`` -> ``__dash__``,
    ``/`` -> ``__slash__``; None when ``name`` cannot be one (it is then not visible to rules)."""
    if name in _RESERVED:
        return f"__{name}__"
    if not _IDENT.fullmatch(name):
        return None
    out = name.replace("__", "__underscores__")
    for ch, word in ((".", "dot"), ("-", "dash"), ("/", "slash")):
        out = out.replace(ch, f"__{word}__")
    return out


# ------------------------------------------------------------ Kubernetes library functions

_CTL = re.compile(r"[\x00-\x1f\x7f]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HOST_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:\[\]<>\"%]*")


def is_url(s: str) -> bool:
    """``isURL(string)`` (``k8s.io/apiserver/pkg/cel/library/urls.go``): Go's
    ``url.ParseRequestURI(s)`` succeeds - an absolute URI (``scheme:...``) or an absolute path,
    no control characters, valid ``%`` escapes, a numeric port, host characters allowed by
    ``net/url`` (``shouldEscape`` in host mode)."""
    if not s or _CTL.search(s):
        return False
    scheme, colon, rest = s.partition(":")
    if colon and _SCHEME.fullmatch(scheme):
        if not rest.startswith("/"):
            return True  # opaque (mailto:x): valid for ParseRequestURI
    elif colon and (not scheme or "/" not in scheme):
        return False  # "missing protocol scheme" / "first path segment in URL cannot contain colon"
    else:
        rest = s
        if not rest.startswith("/"):
            return False  # "invalid URI for request"
    path = rest
    if rest.startswith("//") and colon:
        authority, _, path = rest[2:].partition("/")
        host = authority.rpartition("@")[2]
        if host.startswith("["):
            end = host.find("]")
            if end < 0:
                return False
            port = host[end + 1 :]
            if port and not ((port.startswith(":") and port[1:].isdigit()) or port == ":"):
                return False
        else:
            name, _, port = host.partition(":")
            if ":" in port or (port and not port.isdigit()) or not _HOST_OK.fullmatch(name):
                return False
        if _BAD_ESCAPE.search(authority):
            return False
    return not _BAD_ESCAPE.search(path.partition("?")[0])


def _sorted(xs: list) -> bool:
    return all(a <= b for a, b in itertools.pairwise(xs))


def _find(s: str, pattern: str) -> str:
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str) -> list[str]:
    return [m.group(0) for m in re.finditer(pattern, s)]


@functools.cache
def _env() -> Any:
    """The CEL environment: ``self`` and ``oldSelf`` dynamic, the strings extension, and the
    Kubernetes functions above (each an overload of the signature ``library/*.go`` declares)."""
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_strings

    t = cel.Type
    lst, dyn = t.List(t.DYN), t.DYN

    def fn(name: str, overloads: list[tuple[str, Any, list[Any], bool, Any]]) -> Any:
        return cel.FunctionDecl(
            name,
            [cel.Overload(i, r, ps, is_member=m, impl=f) for i, r, ps, m, f in overloads],
        )

    functions = [
        fn("isURL", [("isURL_string", t.BOOL, [t.STRING], False, is_url)]),
        fn("isSorted", [("list_is_sorted", t.BOOL, [lst], True, _sorted)]),
        fn("sum", [("list_sum", dyn, [lst], True, lambda xs: sum(xs))]),
        fn("min", [("list_min", dyn, [lst], True, min)]),
        fn("max", [("list_max", dyn, [lst], True, max)]),
        fn("find", [("string_find", t.STRING, [t.STRING, t.STRING], True, _find)]),
        fn(
            "findAll",
            [("string_find_all", t.List(t.STRING), [t.STRING, t.STRING], True, _find_all)],
        ),
    ]
    return cel.NewEnv(
        variables={"self": dyn, "oldSelf": dyn},
        extensions=[ext_strings.ExtStrings()],
        functions=functions,
    )


@functools.lru_cache(maxsize=1024)
def compile_rule(text: str) -> tuple[Any | None, str | None]:
    """``(program, None)`` for a CEL expression the runtime compiles, else ``(None, why)`` with
    the compiler's first message (an undeclared function, a syntax error). Cached: each rule
    text is compiled once per process."""
    try:
        return _env().compile(text), None
    except RuntimeError as e:
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        return None, (lines[0] if lines else str(e)).removeprefix("INVALID_ARGUMENT: ")


_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def transition(rule: dict[str, Any]) -> bool:
    """The rule reads ``oldSelf`` (outside string literals): a transition rule, run on update
    only (``optionalOldSelf`` rules included)."""
    return (
        re.search(r"\boldSelf\b", _STRING_LITERAL.sub("''", str(rule.get("rule", "")))) is not None
    )


def schema_rules(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every ``x-kubernetes-validations`` rule of ``schema`` with its schema path
    (``.spec.endpoints[*].tls``; ``<root>`` for the top)."""
    if not isinstance(schema, dict):
        return
    for rule in schema.get(RULES_KEY) or ():
        yield path or "<root>", rule
    for key, sub in (schema.get("properties") or {}).items():
        yield from schema_rules(sub, f"{path}.{key}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from schema_rules(schema["additionalProperties"], f"{path}[*]")
    if isinstance(schema.get("items"), dict):
        yield from schema_rules(schema["items"], f"{path}[*]")


# ------------------------------------------------------------------------------ values

_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?)\s*(ns|us|µs|ms|s|m|h|d|w)")
_NANOS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9}
_NANOS |= {"h": 3600 * 10**9, "d": 86400 * 10**9, "w": 604800 * 10**9}


def parse_duration(s: str) -> int | None:
    """A ``format: duration`` string in nanoseconds, as go-openapi ``strfmt.ParseDuration``
    reads it (units ns, us, ms, s, m, h, d, w, each ``<number><unit>``, summed); None when it is
    not one."""
    pos, total = 0, 0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            return None
        total += round(float(m.group(1)) * _NANOS[m.group(2)])
        pos = m.end()
    if pos == 0 or s[pos:].strip():
        return None
    return total


def _duration(s: str) -> Any:
    """``s`` as a CEL duration (a ``google.protobuf.Duration``, the runtime's input type for
    one), or ``s`` unchanged when it does not parse (the schema's pattern reports it)."""
    from google.protobuf import duration_pb2

    nanos = parse_duration(s)
    if nanos is None:
        return s
    return duration_pb2.Duration(seconds=nanos // 10**9, nanos=nanos % 10**9)


def cel_value(value: Any, schema: Any) -> Any:
    """``value`` as a CEL rule sees it under ``schema`` (see the module docstring)."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        if props is None:
            sub = addl if isinstance(addl, dict) else None
            return {k: cel_value(v, sub) for k, v in value.items()}
        out = {}
        for k, v in value.items():
            name = escape(k)
            if name is not None:
                out[name] = cel_value(v, props.get(k))
        return out
    if isinstance(value, list):
        return [cel_value(v, schema.get("items")) for v in value]
    if isinstance(value, str) and schema.get("format") == "duration":
        return _duration(value)
    if isinstance(value, int) and not isinstance(value, bool) and schema.get("type") == "number":
        return float(value)
    return value


# -------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class RuleResult:
    """One refusal or note of :func:`rule_problems`: ``path`` is the object path (a tuple of keys
    and indexes), ``message`` what the API server says; ``note`` True for a rule not evaluated
    (it did not compile here)."""

    path: tuple
    message: str
    note: bool = False


_HAS_RULES: dict[int, tuple[Any, bool]] = {}


def _has_rules(schema: Any) -> bool:
    """``schema`` or a schema below it carries a rule; cached by identity (each CRD schema is
    loaded once per process), the schema kept with its answer so that its id is never reused."""
    entry = _HAS_RULES.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = _HAS_RULES[id(schema)] = (schema, any(True for _ in schema_rules(schema)))
    return entry[1]


def _message(rule: dict[str, Any], value: Any) -> str:
    """The refusal's words: ``messageExpression``'s string when it evaluates to a non-empty one,
    else ``message``, else ``failed rule: <rule>`` (validation.go ``ruleMessageOrDefault``)."""
    expr = rule.get("messageExpression")
    if expr:
        program, _ = compile_rule(expr)
        if program is not None:
            result = program.eval(data={"self": value})  # an error value is no message
            out = result.value() if result.type().name() == "STRING" else None
            if isinstance(out, str) and out.strip():
                return out
    return rule.get("message") or f"failed rule: {str(rule.get('rule', '')).strip()}"


def _evaluate(rule: dict[str, Any], value: Any, path: tuple) -> RuleResult | None:
    text = str(rule.get("rule", ""))
    if rule.get("optionalOldSelf"):  # runs on create with oldSelf an absent optional
        return RuleResult(
            path,
            f"x-kubernetes-validations rule {text!r} not checked: "
            "optionalOldSelf (oldSelf as an optional) is not modelled",
            True,
        )
    program, why = compile_rule(text)
    if program is None:
        return RuleResult(path, f"x-kubernetes-validations rule {text!r} not checked: {why}", True)
    result = program.eval(data={"self": value})
    out = result.value()
    if out is True:
        return None
    where = path
    if rule.get("fieldPath"):
        steps = re.findall(r"\.(\w+)|\['([^']*)'\]|\[(\d+)\]", str(rule["fieldPath"]))
        where = (*path, *(a or b or int(c) for a, b, c in steps))
    if out is False:
        return RuleResult(where, _message(rule, value))
    return RuleResult(path, f"{out} evaluating rule: {text.strip()}")


def rule_problems(obj: Any, schema: Any, path: tuple = ()) -> list[RuleResult]:
    """Every create-time CEL rule of ``schema`` over ``obj`` (the object as the API server stores
    it: defaults applied), depth first; transition rules skipped (module docstring)."""
    out: list[RuleResult] = []
    if obj is None or not isinstance(schema, dict) or not _has_rules(schema):
        return out  # a null value is not validated (validation.go: nothing to evaluate)
    rules = [
        r for r in schema.get(RULES_KEY) or () if r.get("optionalOldSelf") or not transition(r)
    ]
    if rules:
        value = cel_value(obj, schema)
        out += [r for rule in rules if (r := _evaluate(rule, value, path))]
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for key, value in obj.items():
            sub = props.get(key, addl if isinstance(addl, dict) else None)
            out += rule_problems(value, sub, (*path, key))
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            out += rule_problems(item, schema.get("items"), (*path, i))
    return out

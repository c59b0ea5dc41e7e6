"""The request of the LM application's ``POST /generate`` (:mod:`workloads.serve_lm`): the JSON
body's keys, their limits from the application's arguments (:class:`contract.args.serve_lm.ServeLmArgs`)
and the one-line error a bad body answers with (``{"error": "<field>: <why>"}``, status 400 or
413). Standard library only, so a bare server (``bench/serve_load.py``) parses requests the same
way as the Serve replicas."""

from __future__ import annotations

import json
from dataclasses import dataclass

from contract.args.serve_lm import ServeLmArgs

REQUEST_KEYS = ("prompt", "max_new_tokens", "temperature", "seed", "stop")
MAX_STOPS = 4  # stop sequences per request (as OpenAI's ``stop``)
MAX_STOP_BYTES = 64  # UTF-8 bytes per stop sequence


class RequestError(ValueError):
    """A request that is refused: ``status`` 400 or 413, ``str()`` the one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class GenerateRequest:
    """One parsed ``POST /generate`` body: prompt bytes, tokens to generate, temperature (0 =
    greedy), seed, stop sequences (generation ends when the output ends with one; it is cut
    from the answer)."""

    prompt: bytes
    max_new_tokens: int
    temperature: float
    seed: int
    stop: tuple[bytes, ...] = ()


def parse_request(body: bytes, args: ServeLmArgs) -> GenerateRequest:
    """Validate a ``POST /generate`` body against the limits in ``args``.

    Raises:
        RequestError: 413 when ``body`` is longer than ``max_body_bytes``; 400 for anything else
            (not a JSON object, unknown key, wrong type, prompt over ``max_prompt_bytes`` UTF-8
            bytes, ``max_new_tokens`` outside 1..limit, temperature outside 0..10, ``stop`` not a
            string or a list of at most ``MAX_STOPS`` non-empty strings of at most
            ``MAX_STOP_BYTES`` bytes).
    """
    if len(body) > args.max_body_bytes:
        raise RequestError(
            413, f"body: {len(body)} bytes is over the limit of {args.max_body_bytes} bytes"
        )
    try:
        doc = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError) as e:
        raise RequestError(400, f"body: not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise RequestError(400, 'body: expected a JSON object like {"prompt": "def "}')
    unknown = sorted(set(doc) - set(REQUEST_KEYS))
    if unknown:
        raise RequestError(400, f"{unknown[0]}: unknown key; accepted: {', '.join(REQUEST_KEYS)}")
    prompt = doc.get("prompt")
    if not isinstance(prompt, str):
        raise RequestError(400, f"prompt: expected a string, got {json.dumps(prompt)}")
    data = prompt.encode("utf-8", errors="replace")
    if len(data) > args.max_prompt_bytes:
        raise RequestError(
            400, f"prompt: {len(data)} bytes is over the limit of {args.max_prompt_bytes} bytes"
        )
    n = doc.get("max_new_tokens", min(args.default_new_tokens, args.max_new_tokens))
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= args.max_new_tokens:
        raise RequestError(
            400, f"max_new_tokens: {json.dumps(n)} is not an integer in 1..{args.max_new_tokens}"
        )
    t = doc.get("temperature", 0.0)
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0 <= t <= 10:
        raise RequestError(400, f"temperature: {json.dumps(t)} is not a number in 0..10")
    seed = doc.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise RequestError(400, f"seed: {json.dumps(seed)} is not an integer in 0..2**63-1")
    stop = doc.get("stop", [])
    stops = [stop] if isinstance(stop, str) else stop
    if (
        not isinstance(stops, list)
        or len(stops) > MAX_STOPS
        or not all(isinstance(s, str) and 0 < len(s.encode()) <= MAX_STOP_BYTES for s in stops)
    ):
        raise RequestError(
            400,
            f"stop: {json.dumps(stop)} is not a string or a list of at most {MAX_STOPS} "
            f"non-empty strings of at most {MAX_STOP_BYTES} bytes",
        )
    return GenerateRequest(data, n, float(t), seed, tuple(s.encode() for s in stops))

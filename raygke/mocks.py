"""The Pulumi mocks a render runs the program under (:mod:`raygke.synth`): :class:`SynthMocks`
answers each registration with realistic, deterministic outputs (ids, self links, endpoints,
emails, project numbers); :class:`RecordingMonitor` remembers what each registration sent; and
:func:`no_stack_traces` spares the SDK a stack walk per resource that nothing under mocks reads.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import ipaddress
import json
import threading
from typing import Any

import pulumi
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import resource as presource
from pulumi.runtime import rpc


def project_number(project: str) -> str:
    """A stable fake 12-digit project number for a project id."""
    return str(int(hashlib.sha256(project.encode()).hexdigest(), 16) % 10**12).rjust(12, "1")


def _ip(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).digest()
    return f"34.{h[0]}.{h[1]}.{h[2] or 1}"


def _fake_ca(seed: str) -> str:
    body = base64.b64encode(hashlib.sha512(seed.encode()).digest() * 8).decode()
    pem = "-----BEGIN CERTIFICATE-----\n" + body + "\n-----END CERTIFICATE-----\n"
    return base64.b64encode(pem.encode()).decode()


def _fake_redis_ca(seed: str) -> str:
    """The PEM of a Memorystore instance's server CA (``server_ca_certs[].cert``): the instance's
    own CA, apart from the GKE cluster's (:func:`_fake_ca`), so a cluster CA rotation leaves it,
    and the ConfigMap that holds it, as they were."""
    body = base64.b64encode(hashlib.sha512(f"redis-ca/{seed}".encode()).digest() * 8).decode()
    return "-----BEGIN CERTIFICATE-----\n" + body + "\n-----END CERTIFICATE-----\n"


DOCKER_IMAGE_TYPE = "docker-build:index:Image"


def fake_digest(inputs: dict[str, Any]) -> str:
    """``sha256:<64 hex>``: a deterministic stand-in for a pushed image's digest, a hash of the
    build's inputs (secrets left out), so a changed Dockerfile, requirement set or build argument
    changes the digest the rendered Ray resources reference, as a real build would."""
    public = {k: v for k, v in inputs.items() if k != "registries"}
    text = json.dumps(public, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


MOCK_TOKEN = "mock-ray-auth-token-not-a-secret"


class SynthMocks(pulumi.runtime.Mocks):
    """Deterministic, realistic outputs for the resources and invokes the program uses."""

    def __init__(self, project: str) -> None:
        self.project = project
        self.number = project_number(project)
        self.ranges: dict[str, str] = {}  # global address name -> its CIDR (private services)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        t, n, i = args.typ, args.name, dict(args.inputs)
        p = i.get("project", self.project)
        name = i.get("name", n)
        state: dict[str, Any] = {}
        rid = f"{n}-id"
        if t == "gcp:compute/network:Network":
            rid = f"projects/{p}/global/networks/{name}"
        elif t == "gcp:compute/subnetwork:Subnetwork":
            rid = f"projects/{p}/regions/{i.get('region')}/subnetworks/{name}"
            state["gatewayAddress"] = i.get("ipCidrRange", "10.0.0.0/20").split("/")[0][:-1] + "1"
        elif t == "gcp:compute/router:Router":
            rid = f"projects/{p}/regions/{i.get('region')}/routers/{name}"
        elif t == "gcp:compute/routerNat:RouterNat":
            rid = f"{p}/{i.get('region')}/{i.get('router')}/{name}"
        elif t == "gcp:kms/keyRing:KeyRing":
            rid = f"projects/{p}/locations/{i.get('location')}/keyRings/{name}"
        elif t == "gcp:kms/cryptoKey:CryptoKey":
            rid = f"{i.get('keyRing')}/cryptoKeys/{name}"
        elif t == "gcp:serviceaccount/account:Account":
            email = f"{i['accountId']}@{p}.iam.gserviceaccount.com"
            rid = f"projects/{p}/serviceAccounts/{email}"
            uid = int(hashlib.sha256(email.encode()).hexdigest(), 16) % 10**21
            state.update(email=email, name=rid, uniqueId=str(uid), member=f"serviceAccount:{email}")
        elif t == "gcp:container/cluster:Cluster":
            rid = f"projects/{p}/locations/{i.get('location')}/clusters/{name}"
            state.update(
                endpoint=_ip(rid),
                masterAuth={"clusterCaCertificate": _fake_ca(rid)},
                masterVersion=i.get("minMasterVersion") or "1.32.2-gke.1297002",
                labelFingerprint=hashlib.sha256(rid.encode()).hexdigest()[:8],
            )
            cpe = dict(i.get("controlPlaneEndpointsConfig") or {})
            dns = dict(cpe.get("dnsEndpointConfig") or {})
            uid = hashlib.sha256(rid.encode()).hexdigest()[:24]
            dns["endpoint"] = f"gke-{uid}.{i.get('location')}.gke.goog"
            state["controlPlaneEndpointsConfig"] = {**cpe, "dnsEndpointConfig": dns}
        elif t == "gcp:container/nodePool:NodePool":
            rid = f"{i.get('cluster')}/nodePools/{name}"
        elif t == "gcp:storage/bucket:Bucket":
            rid = name
            state.update(
                url=f"gs://{name}", selfLink=f"https://www.googleapis.com/storage/v1/b/{name}"
            )
        elif t == "gcp:storage/bucketObject:BucketObject":
            rid = f"{i.get('bucket')}-{name}"
            state.update(
                selfLink=f"https://www.googleapis.com/storage/v1/b/{i.get('bucket')}/o/{name}",
                mediaLink=f"https://storage.googleapis.com/download/storage/v1/b/{i.get('bucket')}/o/{name}",
            )
        elif t == "gcp:secretmanager/secret:Secret":
            rid = f"projects/{p}/secrets/{i.get('secretId')}"
            state["name"] = f"projects/{self.number}/secrets/{i.get('secretId')}"
        elif t == "gcp:compute/globalAddress:GlobalAddress" and i.get("prefixLength"):
            self.ranges[name] = f"{i.get('address')}/{int(i['prefixLength'])}"
        elif t == "gcp:redis/instance:Instance":
            rid = f"projects/{p}/locations/{i.get('region')}/instances/{name}"
            h = hashlib.sha256(rid.encode()).digest()
            ca = _fake_redis_ca(rid)
            # the first host of its reserved range, as an offline render plans it
            # (components.gcsft.render.planned_address)
            cidr = self.ranges.get(str(i.get("reservedIpRange")), "10.24.0.0/20")
            state.update(
                host=str(next(ipaddress.ip_network(cidr).hosts())),
                port=6378 if i.get("transitEncryptionMode") == "SERVER_AUTHENTICATION" else 6379,
                authString="mock-redis-auth-not-a-secret",
                serverCaCerts=[{"cert": ca, "sha1Fingerprint": h.hex()[:40]}],
            )
        elif t == "gcp:secretmanager/secretVersion:SecretVersion":
            rid = f"{i.get('secret')}/versions/1"
            state["name"] = rid
        elif t.startswith("kubernetes:") and not t.startswith("kubernetes:helm"):
            meta = i.get("metadata") or {}
            ns = meta.get("namespace")
            rid = f"{ns}/{meta.get('name', n)}" if ns else str(meta.get("name", n))
        elif t == "kubernetes:helm.sh/v3:Release":
            rid = f"{i.get('namespace')}/{name}"
            state["status"] = {"status": "deployed", "version": i.get("version"), "revision": 1}
        elif t == "gcp:artifactregistry/repository:Repository":
            rid = f"projects/{p}/locations/{i.get('location')}/repositories/{i.get('repositoryId')}"
            state["name"] = i.get("repositoryId")
        elif t == "gcp:monitoring/dashboard:Dashboard":
            uid = hashlib.sha256(f"{p}/{n}".encode()).hexdigest()
            rid = (
                f"projects/{self.number}/dashboards/{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:28]}"
            )
        elif t == DOCKER_IMAGE_TYPE:
            digest = fake_digest(i)
            tags = list(i.get("tags") or [])
            repo = tags[0].rsplit(":", 1)[0] if tags else n
            rid = digest
            state.update(digest=digest, ref=f"{repo}@{digest}")
        elif t == "random:index/randomPassword:RandomPassword":
            # a fixed fake: the render never holds a real token
            state.update(result=MOCK_TOKEN, bcryptHash="mock")
        elif "IAMMember" in t or "IamMember" in t:
            rid = f"{n}/{i.get('role')}/{i.get('member')}"
            state["etag"] = "BwY" + hashlib.sha256(rid.encode()).hexdigest()[:9]
        if "selfLink" not in state and t.startswith("gcp:compute/"):
            state["selfLink"] = f"https://www.googleapis.com/compute/v1/{rid}"
        return rid, {**i, **state}

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list | None]:
        a = dict(args.args)
        if args.token == "gcp:organizations/getProject:getProject":
            p = a.get("projectId", self.project)
            return {
                "id": f"projects/{p}",
                "projectId": p,
                "name": p,
                "number": self.number,
            }, []
        if args.token == "gcp:storage/getProjectServiceAccount:getProjectServiceAccount":
            email = f"service-{self.number}@gs-project-accounts.iam.gserviceaccount.com"
            return {
                "id": email,
                "emailAddress": email,
                "member": f"serviceAccount:{email}",
                "project": a.get("project", self.project),
            }, []
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            return {"project": self.project, "accessToken": "mock", "id": "mock"}, []
        return a, []


class _InputsTap(pulumi.runtime.Mocks):
    """The mocks of a :class:`RecordingMonitor`: ``mocks``' answers, remembering on each thread
    the inputs of its last :meth:`new_resource` call (the monitor runs each registration on one
    thread of the SDK's executor, several at a time)."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        self.mocks = mocks
        self.last = threading.local()

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        self.last.inputs = args.inputs
        return self.mocks.new_resource(args)

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return self.mocks.call(args)


class RecordingMonitor(pmocks.MockMonitor):
    """A mock monitor that also remembers each resource's URN, parent, registration inputs and
    resource options (read from the registration request itself, so every option the SDK sends is
    seen, for custom and component resources alike). The inputs are those the mock monitor
    deserialised from the request for ``mocks.new_resource`` (which must not mutate them;
    :class:`SynthMocks` does not): deserialising the request's properties again would double the
    cost of the largest ones (a CRD's schema)."""

    def __init__(self, mocks: SynthMocks) -> None:
        self.tap = _InputsTap(mocks)
        super().__init__(self.tap)
        self.records: list[dict[str, Any]] = []

    def RegisterResource(self, request: Any) -> Any:
        self.tap.last.inputs = None
        resp = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = self.tap.last.inputs
            if inputs is None:  # a monitor that did not ask the mocks
                inputs = rpc.deserialize_properties(request.object)
            self.records.append(
                {
                    "type": request.type,
                    "name": request.name,
                    "urn": resp.urn,
                    "parent": _urn_ref(request.parent),
                    "inputs": inputs,
                    "options": _options(request),
                }
            )
        return resp


def _options(request: Any) -> dict[str, Any]:
    """The resource options of a ``RegisterResourceRequest`` as plain, sorted data."""
    provider = request.provider.split("::", 4)
    provider_ref = _urn_ref("::".join(provider[:4])) if request.provider else None
    return {
        "protect": bool(request.protect) if request.HasField("protect") else False,
        "ignore_changes": sorted(request.ignoreChanges),
        "replace_on_changes": sorted(request.replaceOnChanges),
        "delete_before_replace": bool(request.deleteBeforeReplace),
        "retain_on_delete": bool(request.retainOnDelete)
        if request.HasField("retainOnDelete")
        else False,
        "depends_on": sorted({_urn_ref(u) for u in request.dependencies if u}),
        "provider": provider_ref,
    }


def _urn_ref(urn: str) -> str | None:
    """``urn:pulumi:s::p::a$b::name`` -> ``b::name``."""
    if not urn:
        return None
    _, _, rest = urn.partition("::")
    _, _, rest = rest.partition("::")
    typ, _, name = rest.partition("::")
    return f"{typ.split('$')[-1]}::{name}"


def _empty_stack_trace() -> Any:
    return presource.source_pb2.StackTrace()


@contextlib.contextmanager
def no_stack_traces() -> Any:
    """Within the block, Pulumi's SDK sends each registration an empty stack trace (and so no
    source position), as it does when it finds no resource constructor on the stack.

    The trace is for the engine's diagnostics; under mocks nothing reads it (the records take
    neither), yet collecting it walks the whole Python stack and makes a file URI of every frame
    for each resource: 15-30 % of a mocked run, more the deeper the caller's stack (a test
    runner's). ``_get_stack_trace`` is the SDK's private helper (pulumi 3.272): should a release
    drop it, the traces are simply collected."""
    original = getattr(presource, "_get_stack_trace", None)
    if original is None:
        yield
        return
    presource._get_stack_trace = _empty_stack_trace
    try:
        yield
    finally:
        presource._get_stack_trace = original

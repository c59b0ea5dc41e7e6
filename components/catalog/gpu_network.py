"""GPU-to-GPU networking per GPU machine family: which GPUDirect stack a machine type has, how
many extra NICs, the networks GKE multi-networking gives a pod, the NCCL plugin installer and the
NCCL environment of a workload pod.

Sources (the tags [GCE-NET], [GKE-TCPX], [RDMA-PROFILE], [CEA], [CT] cited below):
docs/sources.md#catalog-gpu-network
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .accelerators import network_kind
from .gpudirect import TCPXO_PRE_INSTALL_IMAGE, TCPXO_PRE_INSTALL_SCRIPT

GpuNetKind = str  # "tcpx" | "tcpxo" | "rdma"
KINDS = ("tcpx", "tcpxo", "rdma")
# The MTU Google's blueprints give the extra GPU VPCs [CT].
GPU_VPC_MTU = 8244
# The host directory the installers copy the NCCL plugin into, which GKE mounts at
# /usr/local/nvidia in every container that requests nvidia.com/gpu [CEA], [GKE-GPU] in
# components.catalog.gpu ("the CUDA libraries ... /usr/local/nvidia/lib64").
NCCL_LIB_DIR = "/usr/local/nvidia/lib64"


@dataclass(frozen=True)
class GpuNetFamily:
    """The GPU-to-GPU networking of one machine type.

    Attributes:
        machine_type: Compute Engine machine type (``a3-highgpu-8g``).
        family: the family's name in Google's pages (``A3 High``).
        kind: ``tcpx`` (GPUDirect-TCPX), ``tcpxo`` (GPUDirect-TCPXO) or ``rdma`` (GPUDirect RDMA
            over MRDMA NICs) [GCE-NET].
        nics: extra NICs that carry GPU traffic (4, 8, 8, 8, 4) [GKE-TCPX], [GCE-NET].
        bandwidth_gbps: the machine's total network bandwidth with it [GCE-NET].
        gvnic_extra: RDMA machines' second gVNIC, attached to a regular VPC (node NIC ``eth1``,
            not given to pods) [GCE-NET], [CT].
        first_pod_interface: the pod interface of the first GPU NIC: ``eth1`` for TCPX(O),
            ``eth2`` for RDMA (``eth1`` is the second gVNIC) [CEA].
        accelerators: the ``cloud.google.com/gke-accelerator`` values its installer selects [CEA].
        arch: ``kubernetes.io/arch`` of its nodes (``arm64`` for A4X) [CEA].
    """

    machine_type: str
    family: str
    kind: GpuNetKind
    nics: int
    bandwidth_gbps: int
    accelerators: tuple[str, ...]
    gvnic_extra: bool = False
    first_pod_interface: int = 1
    arch: str = "amd64"

    def pod_interfaces(self, networks: list[str]) -> list[dict[str, str]]:
        """The ``networking.gke.io/interfaces`` list of a pod: ``eth0`` on ``default``, then one
        interface per GPU network from :attr:`first_pod_interface` on [CEA]."""
        return [{"interfaceName": "eth0", "network": "default"}] + [
            {"interfaceName": f"eth{self.first_pod_interface + i}", "network": n}
            for i, n in enumerate(networks)
        ]

    def gpu_ifnames(self) -> str:
        """The pod's GPU NIC names, comma-separated (``eth1,eth2,eth3,eth4``)."""
        return ",".join(f"eth{self.first_pod_interface + i}" for i in range(self.nics))


# Machine type -> its GPU networking; the kind comes from the accelerator record
# (:func:`components.catalog.accelerators.network_kind`), the rest from [GCE-NET], [CEA].
GPU_NET_FAMILIES: Mapping[str, GpuNetFamily] = {
    f.machine_type: f
    for f in (
        GpuNetFamily(
            "a3-highgpu-8g",
            "A3 High",
            network_kind("a3-highgpu-8g"),
            4,
            1000,
            ("nvidia-h100-80gb",),
        ),
        GpuNetFamily(
            "a3-megagpu-8g",
            "A3 Mega",
            network_kind("a3-megagpu-8g"),
            8,
            1800,
            ("nvidia-h100-mega-80gb",),
        ),
        GpuNetFamily(
            "a3-ultragpu-8g",
            "A3 Ultra",
            network_kind("a3-ultragpu-8g"),
            8,
            3600,
            ("nvidia-h200-141gb", "nvidia-b200"),
            gvnic_extra=True,
            first_pod_interface=2,
        ),
        GpuNetFamily(
            "a4-highgpu-8g",
            "A4",
            network_kind("a4-highgpu-8g"),
            8,
            3600,
            ("nvidia-h200-141gb", "nvidia-b200"),
            gvnic_extra=True,
            first_pod_interface=2,
        ),
        GpuNetFamily(
            "a4x-highgpu-4g",
            "A4X",
            network_kind("a4x-highgpu-4g"),
            4,
            2000,
            ("nvidia-gb200",),
            gvnic_extra=True,
            first_pod_interface=2,
            arch="arm64",
        ),
    )
}


def gpu_net_family(machine_type: str) -> GpuNetFamily | None:
    """The GPU networking of ``machine_type``, None for one without GPUDirect (G2, A2, the A3
    High shapes below 8 GPUs: Google's pages give GPUDirect-TCPX for ``a3-highgpu-8g`` only)."""
    return GPU_NET_FAMILIES.get(machine_type)


@dataclass(frozen=True)
class Installer:
    """The NCCL plugin installer DaemonSet of one GPUDirect kind [CEA].

    Attributes:
        name: DaemonSet name (in ``kube-system``, as Google ships it).
        image: the installer image as Google publishes it (a tag).
        command: the init container's shell script.
        host_dirs: volume name -> (host path, mount path) of the init container.
        arch: ``kubernetes.io/arch`` it runs on, None for any.
        pre_install: ``(image, command)`` of an init container that runs first, in the host's
            namespaces (the TCPXO installer's ``pre-installation``,
            :data:`components.catalog.gpudirect.TCPXO_PRE_INSTALL_SCRIPT`); None for none.
    """

    name: str
    image: str
    script: str
    host_dirs: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    arch: str | None = None
    pre_install: tuple[str, tuple[str, ...]] | None = None


_TCPX_SCRIPT = (
    "set -ex\n{chmod}/scripts/container_entry.sh install --install-nccl\n"
    "mkdir -p /usr/local/nvidia/lib64\ncp -r /var/lib/{d}/lib64/. /usr/local/nvidia/lib64\n"
    'echo "installation finishes"\n'
)
_GIB_SCRIPT = (
    "set -ex\n/scripts/container_entry.sh install\n"
    "cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64\n"
    "cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib\n"
    'echo "installation finishes"\n'
)
_TCPX_DIRS = {
    "var-lib": ("/var/lib", "/var/lib"),
    "library-dir-host": ("/home/kubernetes/bin", "/usr/local"),
}
_GIB_DIRS = {
    "library-dir-host": (
        "/home/kubernetes/bin/nvidia/lib64",
        "/usr/local/home/kubernetes/bin/nvidia/lib64",
    ),
    "gib": ("/home/kubernetes/bin/gib", "/usr/local/home/kubernetes/bin/gib"),
}
# Installer per (kind, arch) [CEA]. Pinned to the tags of container-engine-accelerators @992db81.
INSTALLERS: Mapping[tuple[str, str], Installer] = {
    ("tcpx", "amd64"): Installer(
        "nccl-tcpx-installer",
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx-dev:v3.1.9",
        _TCPX_SCRIPT.format(d="tcpx", chmod=""),
        _TCPX_DIRS,
    ),
    ("tcpxo", "amd64"): Installer(
        "nccl-tcpxo-installer",
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15",
        _TCPX_SCRIPT.format(d="tcpxo", chmod="chmod 755 /scripts/container_entry.sh\n"),
        _TCPX_DIRS,
        pre_install=(
            TCPXO_PRE_INSTALL_IMAGE,
            ("nsenter", "-at", "1", "--", "sh", "-c", TCPXO_PRE_INSTALL_SCRIPT),
        ),
    ),
    ("rdma", "amd64"): Installer(
        "nccl-rdma-installer",
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1",
        _GIB_SCRIPT,
        _GIB_DIRS,
    ),
    ("rdma", "arm64"): Installer(
        "nccl-rdma-installer-arm64",
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-arm64:v1.1.0",
        _GIB_SCRIPT,
        _GIB_DIRS,
        arch="arm64",
    ),
}
INSTALLER_NAMES = tuple(sorted(i.name for i in INSTALLERS.values()))
INSTALLER_NAMESPACE = "kube-system"
PAUSE_IMAGE = (
    "gke.gcr.io/pause:3.8@sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
)

# NCCL environment of a Ray worker per kind. TCPX: gpudirect-tcpx/nccl-config.yaml [CEA]; TCPXO:
# the Jan 2026 release's configs in gpudirect-tcpxo/README.md [CEA]; RDMA: the values of
# set_nccl_env.sh as cluster-toolkit's A3 Ultra Dockerfile copies them [CT]. The interface
# lists are filled in from the family (:func:`nccl_env`).
_TCPX_ENV = {
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_CROSS_NIC": "0",
    "NCCL_NET_GDR_LEVEL": "PIX",
    "NCCL_P2P_PXN_LEVEL": "0",
    "NCCL_GPUDIRECTTCPX_CTRL_DEV": "eth0",
    "NCCL_DYNAMIC_CHUNK_SIZE": "524288",
    "NCCL_P2P_NET_CHUNKSIZE": "524288",
    "NCCL_P2P_PCI_CHUNKSIZE": "524288",
    "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
    "NCCL_BUFFSIZE": "4194304",
    "NCCL_NSOCKS_PERTHREAD": "4",
    "NCCL_SOCKET_NTHREADS": "1",
    "NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS": "500000",
}
_TCPXO_ENV = {
    "NCCL_FASTRAK_CTRL_DEV": "eth0",
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_CROSS_NIC": "0",
    "NCCL_PROTO": "Simple,LL128",
    "NCCL_MIN_NCHANNELS": "4",
    "NCCL_TUNER_PLUGIN": "libnccl-tuner.so",
    "NCCL_TUNER_CONFIG_PATH": f"{NCCL_LIB_DIR}/a3plus_tuner_config.textproto",
    "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": f"{NCCL_LIB_DIR}/a3plus_guest_config.textproto",
    "NCCL_DYNAMIC_CHUNK_SIZE": "524288",
    "NCCL_P2P_NET_CHUNKSIZE": "524288",
    "NCCL_P2P_PCI_CHUNKSIZE": "524288",
    "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
    "NCCL_FASTRAK_NUM_FLOWS": "2",
    "NCCL_FASTRAK_USE_SNAP": "1",
    "NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS": "600000",
    "NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL": "0",
    "NCCL_BUFFSIZE": "8388608",
    "NCCL_NET_GDR_LEVEL": "PIX",
    "NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING": "0",
    "NCCL_FASTRAK_USE_LLCM": "1",
}
_RDMA_ENV = {
    "NCCL_NET": "gIB",
    "NCCL_SOCKET_IFNAME": "eth0",
    "NCCL_CROSS_NIC": "0",
    "NCCL_NET_GDR_LEVEL": "PIX",
    "NCCL_P2P_NET_CHUNKSIZE": "131072",
    "NCCL_NVLS_CHUNKSIZE": "524288",
    "NCCL_IB_ADAPTIVE_ROUTING": "1",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_IB_TC": "52",
    "NCCL_IB_FIFO_TC": "84",
}


# What GPUDirect-TCPX(O) needs in the workload pod beside NCCL [CEA]: the RxDM sidecar
# (``tcpx-daemon`` / ``tcpxo-daemon``) with these capabilities and hostPath volumes. Pod Security
# ``restricted`` and ``baseline`` forbid both (hostPath volumes; capabilities beyond the baseline
# set: https://kubernetes.io/docs/concepts/security/pod-security-standards/), so the stack, which
# keeps the Ray namespace ``restricted``, renders the sidecar only for a pool that opts in
# (``gpu_networking: gpudirect``), in a namespace of its own (:mod:`components.catalog.gpudirect`,
# :mod:`components.gpunet.gpudirect`); elsewhere the Ray pods get :func:`ray_nccl_env`.
RXDM_NEEDS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "tcpx": (("NET_ADMIN",), ("/sys", "/proc/sys", "/home/kubernetes/bin/nvidia/lib64")),
    "tcpxo": (
        ("NET_ADMIN", "NET_BIND_SERVICE"),
        ("/sys", "/proc/sys", "/home/kubernetes/bin/nvidia/lib64", "/dev/aperture_devices"),
    ),
}


def ray_nccl_env(fam: GpuNetFamily) -> dict[str, str]:
    """The NCCL environment the stack gives a Ray worker on a ``fam`` node, whose namespace
    enforces Pod Security ``restricted`` (a ``gpudirect`` pool's workers get Google's full
    recipe, :func:`nccl_env`, beside the RxDM sidecar).

    RDMA: Google's environment (:func:`nccl_env`): the gIB plugin needs no sidecar, no
    capability and no hostPath (its libraries reach ``/usr/local/nvidia/lib64`` through the GPU
    mount GKE gives the container). TCPX / TCPXO: their receive path needs the RxDM sidecar
    (:data:`RXDM_NEEDS`), which ``restricted`` forbids, so NCCL runs its own socket transport
    (``NCCL_NET=Socket``, which also keeps NCCL from loading a TCPX plugin it could not use)
    striped over the pod's GPU NICs (``NCCL_SOCKET_IFNAME`` = the interfaces Google's manifests
    give ``NCCL_GPUDIRECTTCPX_SOCKET_IFNAME`` / ``NCCL_FASTRAK_IFNAME``), rail-aligned
    (``NCCL_CROSS_NIC=0``: NIC i of every node is in the same VPC) with the socket counts of
    Google's TCPX config (``NCCL_NSOCKS_PERTHREAD=4``, ``NCCL_SOCKET_NTHREADS=1``) [CEA]: up to
    4 / 8 x 200 Gbps instead of the primary NIC's 200 [GKE-TCPX], without GPUDirect's
    zero-copy receive.
    """
    if fam.kind == "rdma":
        return nccl_env(fam)
    return {
        "NCCL_NET": "Socket",
        "NCCL_SOCKET_IFNAME": fam.gpu_ifnames(),
        "NCCL_CROSS_NIC": "0",
        "NCCL_NSOCKS_PERTHREAD": "4",
        "NCCL_SOCKET_NTHREADS": "1",
    }


def nccl_env(fam: GpuNetFamily) -> dict[str, str]:
    """The NCCL environment Google's manifests give a workload container of ``fam``'s kind
    (module docstring), with ``LD_LIBRARY_PATH`` at the installed plugin (:data:`NCCL_LIB_DIR`)
    and the family's GPU interfaces (``NCCL_GPUDIRECTTCPX_SOCKET_IFNAME`` /
    ``NCCL_FASTRAK_IFNAME``) where the kind names them. For TCPX(O) this is Google's full
    recipe, which needs the RxDM sidecar (:data:`RXDM_NEEDS`); the Ray pods get
    :func:`ray_nccl_env`."""
    env = {"LD_LIBRARY_PATH": NCCL_LIB_DIR}
    if fam.kind == "tcpx":
        env.update(_TCPX_ENV, NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=fam.gpu_ifnames())
    elif fam.kind == "tcpxo":
        env.update(_TCPXO_ENV, NCCL_FASTRAK_IFNAME=fam.gpu_ifnames())
        env["NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY"] = "/dev/aperture_devices"
    else:
        env.update(_RDMA_ENV)
    return env

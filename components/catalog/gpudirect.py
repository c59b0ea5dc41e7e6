"""GPUDirect-TCPX / GPUDirect-TCPXO in the workload pod: what ``gpu_networking: gpudirect`` adds on
A3 High (``a3-highgpu-8g``, TCPX) and A3 Mega (``a3-megagpu-8g``, TCPXO) beside the extra NICs
of :mod:`components.catalog.gpu_network`: the RxDM sidecar (the receive-data-path manager that
programs the NICs' flow steering and hands received buffers to the GPUs), the NCCL plugin installer
DaemonSet, the NRI device injector that gives the sidecar the GPU devices, and what the GPU
container of the workload pod mounts. GPUDirect RDMA (A3 Ultra, A4, A4X) has none of this.

Sources (the tags [CEA], [CT], [PSS], [GCE-NET] cited below, and what differs from Google's
manifests and why): docs/sources.md#catalog-gpudirect
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

KINDS = ("tcpx", "tcpxo")
"""The GPUDirect kinds whose receive path needs the RxDM sidecar ([CEA])."""

GPU_LIB_DIR = "/usr/local/nvidia/lib64"
"""Where the sidecar and the GPU container see the installed plugin ([CEA], [CT])."""

_GPUS = (*(f"/dev/nvidia{i}" for i in range(8)), "/dev/nvidiactl", "/dev/nvidia-uvm")


@dataclass(frozen=True)
class Rxdm:
    """The RxDM sidecar of one GPUDirect kind and what the workload pod gets with it.

    Attributes:
        kind: ``tcpx`` or ``tcpxo``.
        container: the sidecar's container name (``tcpx-daemon``), which the device annotation
            names (``devices.gke.io/container.<container>``) [CEA].
        image: its image, as Google publishes it (a tag; [CEA] pins none).
        command / args: its command and arguments [CEA], [CT].
        capabilities: what it adds (``NET_ADMIN``, and ``NET_BIND_SERVICE`` for TCPXO) [CEA].
        devices: the device files the NRI injector gives it [CEA].
        host_paths: volume name -> host path of the pod's hostPath volumes [CEA], [CT].
        empty_dirs: the pod's ``emptyDir`` volumes shared by the sidecar and the GPU container.
        sidecar_mounts: volume name -> mount path in the sidecar.
        worker_mounts: volume name -> (mount path, read-only) in the GPU (Ray) container.
        accelerator: the ``cloud.google.com/gke-accelerator`` of the kind's nodes.
    """

    kind: str
    container: str
    image: str
    command: tuple[str, ...]
    args: tuple[str, ...]
    capabilities: tuple[str, ...]
    devices: tuple[str, ...]
    host_paths: Mapping[str, str]
    sidecar_mounts: Mapping[str, str]
    worker_mounts: Mapping[str, tuple[str, bool]]
    accelerator: str
    empty_dirs: tuple[str, ...] = field(default=())

    def device_annotation(self) -> tuple[str, str]:
        """``(key, value)`` of the pod annotation the NRI device injector reads:
        ``devices.gke.io/container.<container>`` and a YAML list of ``- path: <device>`` [CEA]."""
        return (
            f"devices.gke.io/container.{self.container}",
            "".join(f"- path: {d}\n" for d in self.devices),
        )


RXDM: Mapping[str, Rxdm] = {
    "tcpx": Rxdm(
        kind="tcpx",
        container="tcpx-daemon",
        image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12",
        command=(
            "/tcpgpudmarxd/build/app/tcpgpudmarxd",
            "--gpu_nic_preset",
            "a3vm",
            "--gpu_shmem_type",
            "fd",
            "--uds_path",
            "/run/tcpx",
            "--setup_param",
            '\\"--verbose 128 2 0 \\"',  # as Google's manifest writes it (a YAML plain scalar)
        ),
        args=(),
        capabilities=("NET_ADMIN",),
        devices=_GPUS,
        host_paths={
            "libraries": "/home/kubernetes/bin/nvidia/lib64",
            "sys": "/sys",
            "proc-sys": "/proc/sys",
        },
        empty_dirs=("tcpx-socket",),
        sidecar_mounts={
            "libraries": GPU_LIB_DIR,
            "tcpx-socket": "/run/tcpx",
            "sys": "/hostsysfs",
            "proc-sys": "/hostprocsysfs",
        },
        worker_mounts={"tcpx-socket": ("/tmp", False), "libraries": (GPU_LIB_DIR, True)},
        accelerator="nvidia-h100-80gb",
    ),
    "tcpxo": Rxdm(
        kind="tcpxo",
        container="tcpxo-daemon",
        image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21",
        command=("/bin/sh", "-c"),
        args=(
            "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n"
            "/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=8 --uid= "
            "--alsologtostderr\n",
        ),
        capabilities=("NET_ADMIN", "NET_BIND_SERVICE"),
        devices=(*_GPUS, "/dev/dmabuf_import_helper"),
        host_paths={
            "libraries": "/home/kubernetes/bin/nvidia/lib64",
            "sys": "/sys",
            "proc-sys": "/proc/sys",
            "aperture-devices": "/dev/aperture_devices",
        },
        sidecar_mounts={
            "libraries": GPU_LIB_DIR,
            "sys": "/hostsysfs",
            "proc-sys": "/hostprocsysfs",
        },
        worker_mounts={
            "libraries": (GPU_LIB_DIR, True),
            "aperture-devices": ("/dev/aperture_devices", False),
        },
        accelerator="nvidia-h100-mega-80gb",
    ),
}

# The sidecar's requests (= limits, so the Ray worker pod stays Guaranteed): what Google's
# Autopilot TCPX sample requests for it ([CEA] gpudirect-tcpx/nccl-test-latest-autopilot.yaml:
# cpu 1, memory 2Gi; Autopilot sets limits to requests). Google's Standard samples set none,
# which the LimitRange of the stack's namespaces would fill with its defaults; the Ray
# container of a worker filling its node gives this room up (components.raycrs.pod
# worker_pod_size). The same for TCPXO: Google publishes no figure of its own.
RXDM_RESOURCES: Mapping[str, str] = {"cpu": "1", "memory": "2Gi"}
RXDM_RESERVE: Mapping[str, float] = {"cpu": 1.0, "memory": 2.0}  # cores, GiB

# The TCPXO installer's first init container, as [CEA] nccl-tcpxo-installer.yaml ships it: in the
# host's namespaces (``nsenter -at 1``; the commands are the node's, the image only provides
# nsenter) it accepts TCP on the node's INPUT chain, loads the import-helper module and exposes
# the NICs' PCI BARs (vendor:device 1ae0:0084) under /dev/aperture_devices for NCCL's LLCM.
TCPXO_PRE_INSTALL_IMAGE = "ubuntu"
TCPXO_PRE_INSTALL_SCRIPT = (
    "/sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT && modprobe import-helper\n"
    "sudo mkdir -p /dev/aperture_devices\n"
    "while IFS= read -r line; do\n"
    "  BDF=$( echo \"$line\" | awk '{print $1}' );\n"
    '  target_aperture_path="/dev/aperture_devices/$BDF"\n'
    '  host_aperture_device=$(readlink -f "/sys/bus/pci/devices/$BDF");\n'
    "  sudo mkdir -p $target_aperture_path;\n"
    "  sudo umount -R $target_aperture_path;\n"
    "  sudo mount --bind $host_aperture_device $target_aperture_path;\n"
    "done < <(lspci -nn -D | grep '1ae0:0084')\n"
    "if [ -d /dev/aperture_devices ]; then\n"
    "    chmod -R a+r /dev/aperture_devices/\n"
    "    chmod a+rw /dev/aperture_devices/*/resource*\n"
    "fi\n"
)

# The NRI device injector [CEA] nri_device_injector/nri-device-injector.yaml.
DEVICE_INJECTOR_NAME = "device-injector"
DEVICE_INJECTOR_IMAGE = (
    "gcr.io/gke-release/nri-device-injector"
    "@sha256:6e79483d52abdc28454bf186320b10a56b0f117a10e8d65d5c74dbb821a76970"
)
DEVICE_INJECTOR_DIRS: Mapping[str, tuple[str, str]] = {
    "dev": ("/dev", "/dev"),
    "nri": ("/var/run/nri", "/var/run/nri"),
}

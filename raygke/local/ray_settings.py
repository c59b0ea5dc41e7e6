"""The Ray settings of every local node (:func:`raygke.local.cluster.node_env`), each a Ray
environment variable with the value the local cluster gives it and why; GKE keeps Ray's
defaults, and a value in the caller's environment wins; and how a local node is started on the
loopback address only (:data:`LOOPBACK_RAY_START`). Standard library only."""

from raygke.local.procs import LOCALHOST

# Ray Train's controller polls its workers every RAY_TRAIN_HEALTH_CHECK_INTERVAL_S seconds
# (default 2.0, ray 2.60: ray/train/v2/_internal/constants.py, controller.py ``_poll_workers``;
# the driver passes the variable on to the controller and the workers, ENV_VARS_TO_PROPAGATE).
# A fit ends about two polls after its last step (the final report waits for a poll, the
# finished workers are seen at the next), a crashed worker is noticed at the next poll, and a
# report faster than a poll waits for it. Measured on 2 cores: 5.3 s from the last step to
# fit() returning at 2 s, 1.5 s at 0.25 s. The local cluster's jobs are short and one poll is a
# remote call per worker: a quarter second here; GKE keeps Ray's default. A value in the
# caller's environment wins.
LOCAL_TRAIN_POLL_ENV = "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"
LOCAL_TRAIN_POLL_S = "0.25"
# On SIGTERM (what ``raygke local down`` sends each node, :func:`stop_nodes`) ``ray start`` first
# drains its node for up to RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S seconds (default 30; ray 2.60:
# ray/_private/node.py ``_drain_node_before_shutdown``, ray_constants.py), so that Serve proxies
# of a RayService being upgraded on Kubernetes stop taking traffic before their replicas go. Here
# ``down`` stops the whole cluster at once: nothing to hand traffic to, and the drain only made
# every ``down`` wait out stop_nodes' 15 s grace before its SIGKILL. 0 = no drain (Ray's own
# off switch): the node stops its processes at once. A value in the caller's environment wins.
LOCAL_DRAIN_ENV = "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"
LOCAL_DRAIN_S = "0"
# Ray Train (2.60) starts a PreemptionWatcher actor with every worker group, one more Python
# process that polls the GCS for draining nodes every 5 s to tell workers a preemption comes
# (ray/train/v2/_internal/callbacks/preemption_callback.py; the controller adds it unless
# RAY_TRAIN_ENABLE_PREEMPTION_WATCHER is false, controller.py). A local node is never preempted
# or drained (LOCAL_DRAIN_S): off here, on (Ray's default) on GKE, where spot and TPU capacity is
# preempted. A value in the caller's environment wins.
LOCAL_PREEMPTION_WATCHER_ENV = "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER"
LOCAL_PREEMPTION_WATCHER = "0"
# Every Parquet read (``ray.data.read_parquet``: Ray Train's training split, ``Dataset.count``)
# lists its files through a pool of RAY_DATA_PARQUET_FOOTER_NUM_ACTORS FooterReader actors,
# default 32, provisioned per listing and killed after it (ray 2.60:
# ray/data/_internal/datasource_v2/formats/parquet/footer_file_indexer.py ``_DEFAULT_NUM_ACTORS``,
# ``FooterFileIndexer.list_files``): sized for remote object stores with thousands of files,
# each actor a Python process of its own. A local dataset is a few files on the local disk; on 2
# cores each fit started 4 to 5 of them per attempt before the listing was done. One here; GKE
# keeps Ray's default. A value in the caller's environment wins.
LOCAL_PARQUET_FOOTER_ACTORS_ENV = "RAY_DATA_PARQUET_FOOTER_NUM_ACTORS"
LOCAL_PARQUET_FOOTER_ACTORS = "1"


# Ray 2.60 turns a loopback ``--node-ip-address`` into the machine's address
# (``ray/scripts/scripts.py`` ``start``: ``services.resolve_ip_for_localhost``, which calls
# ``services.get_node_ip_address()``: the address of the interface that routes to 8.8.8.8), and
# its C++ servers (GCS, raylet: node manager and object manager) listen on 0.0.0.0 unless the node
# IP is exactly 127.0.0.1 (``listen_to_localhost_only``, ``src/ray/rpc/grpc_server.cc``); the
# Python agents (dashboard agent, runtime-env agent, Ray Client server) bind the node IP
# (``ray/dashboard/agent.py``, ``ray/_private/runtime_env/agent/main.py``). So every node is
# started through LOOPBACK_RAY_START, which makes ``get_node_ip_address`` answer 127.0.0.1 in the
# ``ray start`` process; the head's processes also get LOOPBACK_HEAD_ENV, Ray's own switch
# (``ray_constants.ENABLE_RAY_CLUSTER``) for "the node IP is the loopback address", so job drivers
# on the head resolve the same address. (A worker node cannot take that switch: ``ray start
# --address`` then refuses to join, "Multi-node Ray clusters are not supported".) The test
# ``tests/raygke/local/test_commands.py::test_every_listening_socket_is_on_loopback`` lists the sockets.
LOOPBACK_HEAD_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
LOOPBACK_RAY_START = (
    "import sys\n"
    "import ray._private.services as services\n"
    f"services.get_node_ip_address = lambda address=None: {LOCALHOST!r}\n"
    "from ray.scripts.scripts import main\n"
    "sys.argv[0] = 'ray'\n"
    "sys.exit(main())\n"
)

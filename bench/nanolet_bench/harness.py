"""The Harness every measurement shares: a private work directory (its state
file lets a crashed run be cleaned up), the test image and its unpacked
rootfs, the inotify watcher, the agent under test and the manifests it is
given."""
import datetime
import json
import os
import random
import subprocess
import tarfile
import tempfile
import time

from . import knobs
from .cleanup import iptables_snapshot
from .common import CNI_BIN, RUNC, log, run
from .procfs import mem_sum_kib, monitor_pids, pod_status_files, proc_mem_kib
from .watcher import Watcher


class Harness:
    def __init__(self, repo, nanolet, rescan_bin):
        self.repo, self.nanolet, self.rescan_bin = repo, nanolet, rescan_bin
        self.w = None
        self.state = {}
        self.results = {"started": datetime.datetime.now().isoformat(timespec="seconds"),
                        "config": {"RUNS": knobs.get("RUNS"), "SCALE_PODS": knobs.get("SCALE_PODS"),
                                   "IDLE_SECONDS": knobs.get("IDLE_SECONDS"),
                                   "RESCAN_MANIFESTS": knobs.get("RESCAN_MANIFESTS")},
                        "latency": {}}
        self.agent = None
        self.watcher = None
        self.skip_podman = knobs.get("SKIP_PODMAN")

    # ---- state kept on disk so the run.sh trap can clean up after a crash
    def save_state(self):
        with open(f"{self.w}/state.json", "w") as f:
            json.dump(self.state, f)

    def setup(self):
        self.w = tempfile.mkdtemp(prefix="nanolet-bench.", dir="/tmp")
        os.chmod(self.w, 0o755)
        print(self.w, file=open(knobs.get("BENCH_WORKDIR_FILE"), "w"))
        w = self.w
        tag = f"{random.randrange(65536):04x}"
        self.state = {
            "workdir": w,
            "bridge": f"nlb{tag}",
            "subnet": f"10.{200 + random.randrange(50)}.{random.randrange(250)}.0/24",
            "podman_bridge": None,
            "podman_subnet": f"10.{200 + random.randrange(50)}.{random.randrange(250)}.0/24",
            "podman_net": f"nlbench{tag}",
            "netns_prefix": f"nlb{tag}-",
            "floor_runc_root": f"{w}/floor-runc",
            "run_dir": f"{w}/run",
            "podman": not knobs.get("SKIP_PODMAN"),
            "iptables_before": iptables_snapshot(),
        }
        self.save_state()
        for d in ("root", "run", "logs", "containers", "leases", "cni", "out", "bundles",
                  "floor-runc", "images", "podman"):
            os.makedirs(f"{w}/{d}", exist_ok=True)
        # Run directories on tmpfs, as /run is on every machine nanolet
        # targets (its run dir, runc's state, podman's runroot): on the disk
        # every atomic state write there would pay two real fsync()s that a
        # tmpfs does not have. The cleanup unmounts whatever is under w.
        os.makedirs(f"{w}/podman/runroot", exist_ok=True)
        for d in ("run", "floor-runc", "podman/runroot"):
            run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=512m", "tmpfs", f"{w}/{d}"])
        os.mkdir(f"{w}/manifests", 0o755)
        os.chmod(f"{w}/out", 0o777)
        self.man = f"{w}/manifests"
        self.outdir = f"{w}/out"
        with open(f"{w}/cni/10-bench.conflist", "w") as f:
            json.dump(self.cni_conflist(), f)
        self.watcher = Watcher(self.outdir)

        log("building the test image and loading it")
        run([f"{self.repo}/tests/make-test-image.sh", f"{w}/images"])
        self.archive = f"{w}/images/nanolet-test.tar"
        run([self.nanolet, "image", "--root-dir", f"{w}/root", "load", self.archive])
        self.make_rootfs()

    def cni_conflist(self):
        s = self.state
        return {"cniVersion": "1.0.0", "name": "nanolet-bench", "plugins": [
            {"type": "bridge", "bridge": s["bridge"], "isGateway": True, "ipMasq": False,
             "ipam": {"type": "host-local", "dataDir": f"{self.w}/leases",
                      "ranges": [[{"subnet": s["subnet"]}]],
                      "routes": [{"dst": "0.0.0.0/0"}]}}]}

    def make_rootfs(self):
        """The image's rootfs for the floor: layers of the OCI archive in order."""
        rootfs = f"{self.w}/bundles/rootfs"
        os.makedirs(rootfs)
        with tarfile.open(self.archive) as t:
            index = json.load(t.extractfile("index.json"))
            blob = lambda d: t.extractfile("blobs/" + d.replace(":", "/"))
            manifest = json.load(blob(index["manifests"][0]["digest"]))
            for layer in manifest["layers"]:
                with tarfile.open(fileobj=blob(layer["digest"]), mode="r:*") as lt:
                    members = [m for m in lt.getmembers()
                               if not os.path.basename(m.name).startswith(".wh.")]
                    lt.extractall(rootfs, members=members, numeric_owner=True)
        run([RUNC, "spec", "--bundle", f"{self.w}/bundles"])
        with open(f"{self.w}/bundles/config.json") as f:
            self.base_spec = json.load(f)
        os.unlink(f"{self.w}/bundles/config.json")

    def floor_bundle(self, name, netns):
        """A bundle sharing the one rootfs: `runc spec` with the pod's command,
        the hostPath mount, and the host's or a given network namespace."""
        b = f"{self.w}/bundles/{name}"
        os.makedirs(b)
        os.symlink("../rootfs", f"{b}/rootfs")
        spec = json.loads(json.dumps(self.base_spec))
        spec["process"]["terminal"] = False
        spec["process"]["args"] = ["sh", "-c", f": > /out/{name}; exec sleep 3600"]
        spec["root"]["path"] = f"{self.w}/bundles/rootfs"
        spec["mounts"].append({"destination": "/out", "type": "bind", "source": self.outdir,
                               "options": ["rbind", "rw"]})
        ns = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
        if netns:
            ns.append({"type": "network", "path": netns})
        spec["linux"]["namespaces"] = ns
        with open(f"{b}/config.json", "w") as f:
            json.dump(spec, f)
        return b

    def manifest(self, name, host_network):
        return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
{"  hostNetwork: true" if host_network else ""}
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: ["sh", "-c", ": > /out/{name}; exec sleep 3600"]
    volumeMounts: [{{name: out, mountPath: /out}}]
  volumes:
  - name: out
    hostPath: {{path: {self.outdir}, type: Directory}}
"""

    # ---- agent
    def start_agent(self, env=None, extra=()):
        w = self.w
        self.agent_log = open(f"{w}/agent.log", "ab")
        cmd = [self.nanolet, "serve", "--root-dir", f"{w}/root", "--run-dir", f"{w}/run",
               "--pod-logs-dir", f"{w}/logs", "--container-logs-dir", f"{w}/containers",
               "--pod-manifest-path", self.man, "--cni-conf-dir", f"{w}/cni",
               "--hostname-override", "node1", "--read-only-port", "0", "--healthz-port", "0"]
        monitor = knobs.get("BENCH_MONITOR")
        if monitor:
            cmd.append(f"--container-monitor={monitor}")
        cmd += knobs.get("BENCH_AGENT_ARGS").split()
        cmd += list(extra)
        self.agent_spawned_ns = time.monotonic_ns()
        self.agent = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.agent_log,
                                      stderr=self.agent_log, env=env)
        self.state["agent_pid"] = self.agent.pid
        self.save_state()
        deadline = time.monotonic() + 20
        offset = self.agent_log.tell()
        while b"nanolet starting" not in open(f"{w}/agent.log", "rb").read()[offset:]:
            if self.agent.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("agent did not start; see " + f"{w}/agent.log")
            time.sleep(0.02)

    def mem(self):
        """RSS, PSS and anonymous memory (KiB) of the agent and the sum over
        its container monitors, now."""
        pids, comms = monitor_pids(f"{self.w}/run", self.agent.pid)
        mon = mem_sum_kib(pids)
        mon["comms"] = comms
        return {"agent": proc_mem_kib(self.agent.pid), "monitors": mon}

    def runc_agent(self, *args):
        return [RUNC, "--root", f"{self.w}/run/runc", *args]

    def agent_containers(self):
        """{container id: pid} of running containers of the agent."""
        if not os.path.isdir(f"{self.w}/run/runc"):
            return {}
        r = run(self.runc_agent("list", "--format", "json"), check=False, stdout=subprocess.PIPE)
        lst = json.loads(r.stdout or b"null") or []
        return {c["id"]: c["pid"] for c in lst if c["status"] == "running"}

    def wait_agent_idle(self, timeout=120):
        """Until the agent has no container, no pin and no status left."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            busy = run(self.runc_agent("list", "-q"), check=False,
                       stdout=subprocess.PIPE).stdout.strip()
            pins = [p for p in os.listdir(f"{self.w}/run/ns")] if os.path.isdir(f"{self.w}/run/ns") else []
            st = pod_status_files(f"{self.w}/run/status")
            if not busy and not pins and not st:
                return
            time.sleep(0.1)
        raise TimeoutError("agent did not remove its pods in time")

    def drop(self, names, host_network):
        """Manifests written as dotfiles (ignored), then renamed in one go."""
        for n in names:
            with open(f"{self.man}/.{n}.tmp", "w") as f:
                f.write(self.manifest(n, host_network))
        t0 = time.monotonic_ns()
        for n in names:
            os.rename(f"{self.man}/.{n}.tmp", f"{self.man}/{n}.yaml")
        return t0

    def remove_all_manifests(self):
        for f in os.listdir(self.man):
            os.unlink(f"{self.man}/{f}")

    def cni_exec(self, command, cid, netns, check=True):
        conf = dict(self.cni_conflist()["plugins"][0], name="nanolet-bench", cniVersion="1.0.0")
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": netns,
               "CNI_IFNAME": "eth0", "CNI_PATH": CNI_BIN, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        r = subprocess.run([f"{CNI_BIN}/bridge"], input=json.dumps(conf).encode(), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if check and r.returncode != 0:
            raise RuntimeError(f"CNI {command}: {r.stdout.decode()} {r.stderr.decode()}")

    def status_docs(self):
        """(stat, document) of every pod status file the agent has written;
        a file being replaced or not a pod's is passed over."""
        d = f"{self.w}/run/status"
        for f in pod_status_files(d):
            try:
                st = os.stat(f"{d}/{f}")
                with open(f"{d}/{f}") as fh:
                    p = json.load(fh)
            except (OSError, ValueError):
                continue
            if "metadata" in p:
                yield st, p

    def teardown_pods(self):
        if self.agent and self.agent.poll() is None:
            self.remove_all_manifests()
            try:
                self.wait_agent_idle(180)
            except TimeoutError as e:
                log(str(e))
            self.agent.terminate()
            try:
                self.agent.wait(30)
            except subprocess.TimeoutExpired:
                self.agent.kill()
                self.agent.wait()

#!/usr/bin/env python3
"""Builds nanolet's test images (see tests/make-test-image.sh). Deterministic."""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

MTIME = 1700000000
APPLETS = ["sh", "ash", "httpd", "nc", "sleep", "cat", "echo", "ls", "wget", "env", "id",
           "true", "false", "ps", "mkdir", "rm", "cp", "mv", "touch", "grep", "head", "tail",
           "date", "hostname", "kill", "test", "[", "printf", "pwd", "wc", "sed", "stat",
           "readlink", "uname", "whoami", "nslookup", "ip", "ifconfig", "mount", "df", "du",
           "find", "chmod", "chown", "ln", "tee", "timeout", "vi", "xargs", "yes"]


def tar_bytes(entries):
    """entries: list of (name, kind, extra) -> uncompressed tar bytes, sorted by name."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, kind, extra in sorted(entries, key=lambda e: e[0]):
            ti = tarfile.TarInfo(name)
            ti.mtime = MTIME
            ti.uid = extra.get("uid", 0)
            ti.gid = extra.get("gid", 0)
            ti.uname = ti.gname = ""
            data = None
            if kind == "dir":
                ti.type = tarfile.DIRTYPE
                ti.mode = extra.get("mode", 0o755)
            elif kind == "file":
                ti.type = tarfile.REGTYPE
                data = extra["data"]
                ti.size = len(data)
                ti.mode = extra.get("mode", 0o644)
            elif kind == "symlink":
                ti.type = tarfile.SYMTYPE
                ti.linkname = extra["target"]
                ti.mode = 0o777
            elif kind == "hardlink":
                ti.type = tarfile.LNKTYPE
                ti.linkname = extra["target"]
                ti.mode = extra.get("mode", 0o644)
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def base_entries(busybox):
    with open(busybox, "rb") as f:
        bb = f.read()
    e = [("bin", "dir", {}), ("bin/busybox", "file", {"data": bb, "mode": 0o755}),
         ("etc", "dir", {}), ("tmp", "dir", {"mode": 0o1777}), ("root", "dir", {"mode": 0o700}),
         ("home", "dir", {}), ("var", "dir", {}), ("var/www", "dir", {}),
         ("etc/passwd", "file", {"data": b"root:x:0:0:root:/root:/bin/sh\n"
                                          b"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
                                          b"app:x:1000:1000:app:/home/app:/bin/sh\n"}),
         ("etc/group", "file", {"data": b"root:x:0:\nnogroup:x:65534:\napp:x:1000:\n"}),
         ("var/www/index.html", "file", {"data": b"hello from nanolet\n"})]
    for a in APPLETS:
        e.append(("bin/" + a, "symlink", {"target": "busybox"}))
    return e


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def compress(data, how):
    if how == "gzip":
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=6) as g:
            g.write(data)
        return buf.getvalue()
    if how == "zstd":
        return subprocess.run(["zstd", "-q", "-c", "-3"], input=data, check=True,
                              stdout=subprocess.PIPE).stdout
    return data


MT_LAYER = {"none": "application/vnd.oci.image.layer.v1.tar",
            "gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
            "zstd": "application/vnd.oci.image.layer.v1.tar+zstd"}


def dumps(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":")).encode()


def make_image(layers, config_extra, how="none"):
    """layers: list of uncompressed tar bytes. Returns (blobs dict, manifest descriptor)."""
    blobs = {}
    diff_ids = [sha(l) for l in layers]
    descs = []
    for l in layers:
        c = compress(l, how)
        blobs[sha(c)] = c
        descs.append({"mediaType": MT_LAYER[how], "digest": sha(c), "size": len(c)})
    config = {"architecture": "amd64" if os.uname().machine == "x86_64" else
              {"aarch64": "arm64"}.get(os.uname().machine, os.uname().machine),
              "os": "linux", "created": "2023-11-14T22:13:20Z",
              "config": dict({"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                              "Cmd": ["sh"]}, **config_extra),
              "rootfs": {"type": "layers", "diff_ids": diff_ids}}
    cb = dumps(config)
    blobs[sha(cb)] = cb
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                           "digest": sha(cb), "size": len(cb)},
                "layers": descs}
    mb = dumps(manifest)
    blobs[sha(mb)] = mb
    return blobs, {"mediaType": "application/vnd.oci.image.manifest.v1+json",
                   "digest": sha(mb), "size": len(mb)}, cb, layers


def add_file(t, name, data, mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.mtime = MTIME
    ti.mode = mode
    ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))


def add_dir(t, name):
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.DIRTYPE
    ti.mtime = MTIME
    ti.mode = 0o755
    t.addfile(ti)


def write_oci_archive(path, images):
    """images: list of (name, blobs, desc)."""
    blobs = {}
    manifests = []
    for name, b, desc in images:
        blobs.update(b)
        d = dict(desc)
        d["annotations"] = {"org.opencontainers.image.ref.name": name,
                            "io.containerd.image.name": name}
        manifests.append(d)
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": manifests}
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        add_file(t, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add_file(t, "index.json", dumps(index))
        add_dir(t, "blobs")
        add_dir(t, "blobs/sha256")
        for d in sorted(blobs):
            add_file(t, "blobs/sha256/" + d[7:], blobs[d])


def write_oci_dir(path, images):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path + "/blobs/sha256")
    manifests = []
    for name, b, desc in images:
        for d, data in b.items():
            with open(path + "/blobs/sha256/" + d[7:], "wb") as f:
                f.write(data)
        d = dict(desc)
        # skopeo's oci: transport addresses images by this annotation.
        d["annotations"] = {"org.opencontainers.image.ref.name": name}
        manifests.append(d)
    with open(path + "/oci-layout", "wb") as f:
        f.write(b'{"imageLayoutVersion":"1.0.0"}')
    with open(path + "/index.json", "wb") as f:
        f.write(dumps({"schemaVersion": 2, "manifests": manifests}))


def write_docker_archive(path, name, config, layers):
    cfg_hex = hashlib.sha256(config).hexdigest()
    lpaths = []
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        for l in layers:
            h = hashlib.sha256(l).hexdigest()
            add_dir(t, h)
            add_file(t, h + "/layer.tar", l)
            add_file(t, h + "/VERSION", b"1.0")
            lpaths.append(h + "/layer.tar")
        add_file(t, cfg_hex + ".json", config)
        add_file(t, "manifest.json",
                 dumps([{"Config": cfg_hex + ".json", "RepoTags": [name], "Layers": lpaths}]))
        add_file(t, "repositories", dumps({name.rsplit(":", 1)[0]: {name.rsplit(":", 1)[1]: hashlib.sha256(layers[-1]).hexdigest()}}))


def main():
    busybox, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    base = tar_bytes(base_entries(busybox))
    l1 = tar_bytes([("data", "dir", {}), ("data/a", "file", {"data": b"a\n"}),
                    ("data/b", "file", {"data": b"b\n"}), ("data/dir", "dir", {}),
                    ("data/dir/x", "file", {"data": b"x\n"}), ("opq", "dir", {}),
                    ("opq/old1", "file", {"data": b"old1\n"}),
                    ("opq/old2", "file", {"data": b"old2\n"}),
                    ("data/setuid", "file", {"data": b"#!/bin/sh\n", "mode": 0o4755}),
                    ("data/owned", "file", {"data": b"owned\n", "uid": 1000, "gid": 1000})])
    l2 = tar_bytes([("data", "dir", {}), ("data/.wh.a", "file", {"data": b""}),
                    ("data/c", "file", {"data": b"c\n"}),
                    ("data/c-link", "hardlink", {"target": "data/c"}),
                    ("opq", "dir", {}), ("opq/.wh..wh..opq", "file", {"data": b""}),
                    ("opq/new", "file", {"data": b"new\n"}),
                    ("etc", "dir", {}), ("etc/.wh.group", "file", {"data": b""})])

    test = make_image([base], {})
    layers = make_image([base, l1, l2], {})
    config = make_image([base], {"Entrypoint": ["/bin/sh", "-c"], "Cmd": ["echo hello from config"],
                                 "Env": ["PATH=/bin", "GREETING=hello", "EMPTY="],
                                 "User": "1000:1000", "WorkingDir": "/tmp",
                                 "StopSignal": "SIGINT", "ExposedPorts": {"8080/tcp": {}},
                                 "Volumes": {"/data": {}},
                                 "Labels": {"org.example.test": "yes"}})
    # Stand-ins for the control-plane binaries kubeadm's manifests run, so
    # those manifests run unchanged: each prints its arguments and waits.
    stub = b'#!/bin/sh\necho "$(basename "$0") $*"\nexec sleep 2147483647\n'
    kube = make_image([base, tar_bytes([("usr", "dir", {}), ("usr/local", "dir", {}),
                                        ("usr/local/bin", "dir", {})] +
                                       [("usr/local/bin/" + b, "file", {"data": stub, "mode": 0o755})
                                        for b in ("etcd", "kube-apiserver",
                                                  "kube-controller-manager", "kube-scheduler")])],
                      {})
    gz = make_image([base], {}, "gzip")
    zs = make_image([base], {}, "zstd")
    demo = test

    names = {
        "test": "docker.io/library/nanolet-test:latest",
        "layers": "docker.io/library/nanolet-test-layers:latest",
        "config": "docker.io/library/nanolet-test-config:latest",
        "demo": "localhost/nanolet-demo:latest",
    }
    write_oci_archive(out + "/nanolet-test.tar", [(names["test"], test[0], test[1])])
    write_oci_archive(out + "/nanolet-test-layers.tar", [(names["layers"], layers[0], layers[1])])
    write_oci_archive(out + "/nanolet-test-config.tar", [(names["config"], config[0], config[1])])
    write_oci_archive(out + "/nanolet-demo.tar", [(names["demo"], demo[0], demo[1])])
    write_oci_archive(out + "/nanolet-kube.tar", [("localhost/nanolet-kube:latest", kube[0], kube[1])])
    write_oci_archive(out + "/nanolet-test-gzip.tar", [("localhost/nanolet-test-gzip:latest", gz[0], gz[1])])
    write_oci_archive(out + "/nanolet-test-zstd.tar", [("localhost/nanolet-test-zstd:latest", zs[0], zs[1])])
    write_oci_archive(out + "/all.tar", [(names["test"], test[0], test[1]),
                                          (names["layers"], layers[0], layers[1]),
                                          (names["config"], config[0], config[1]),
                                          (names["demo"], demo[0], demo[1])])
    write_docker_archive(out + "/nanolet-test-docker.tar", "localhost/nanolet-test-docker:latest",
                         test[2], test[3])
    with open(out + "/nanolet-test.tar", "rb") as f:
        raw = f.read()
    with open(out + "/nanolet-test.tar.gz", "wb") as f:
        f.write(compress(raw, "gzip"))
    with open(out + "/nanolet-test.tar.zst", "wb") as f:
        f.write(compress(raw, "zstd"))
    write_oci_dir(out + "/oci", [("nanolet-test", test[0], test[1]),
                                 ("nanolet-test-layers", layers[0], layers[1]),
                                 ("nanolet-test-config", config[0], config[1])])
    print(out)


if __name__ == "__main__":
    main()

"""Stamps when each container's first command ran: the file it creates in a
hostPath directory the bench watches with inotify."""
import ctypes
import os
import select
import struct
import threading
import time

IN_CREATE = 0x100
IN_CLOSE_WRITE = 0x8
IN_MOVED_TO = 0x80
libc = ctypes.CDLL(None, use_errno=True)


class Watcher:
    """Stamps the first appearance (and every later write) of each file name
    in one directory, in a thread that only waits on the inotify fd."""

    def __init__(self, path):
        self.fd = libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if libc.inotify_add_watch(self.fd, path.encode(), IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO) < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch")
        self.first = {}
        self.writes = {}
        self.cond = threading.Condition()
        self.stop_r, self.stop_w = os.pipe()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while True:
            r, _, _ = select.select([self.fd, self.stop_r], [], [])
            now = time.monotonic_ns()
            if self.stop_r in r:
                return
            buf = os.read(self.fd, 65536)
            i = 0
            with self.cond:
                while i < len(buf):
                    _, mask, _, ln = struct.unpack_from("iIII", buf, i)
                    name = buf[i + 16:i + 16 + ln].rstrip(b"\0").decode()
                    i += 16 + ln
                    self.first.setdefault(name, now)
                    if mask & IN_CLOSE_WRITE:
                        self.writes[name] = self.writes.get(name, 0) + 1
                self.cond.notify_all()

    def wait(self, names, timeout):
        """Monotonic ns of each name's first event; raises on timeout."""
        names = list(names)
        deadline = time.monotonic() + timeout
        with self.cond:
            while not all(n in self.first for n in names):
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [n for n in names if n not in self.first]
                    raise TimeoutError(f"{len(missing)} of {len(names)} containers did not start "
                                       f"within {timeout}s (e.g. {missing[:3]})")
                self.cond.wait(min(left, 1.0))
            return {n: self.first[n] for n in names}

    def forget(self, names):
        """The next event of each name counts as its first again."""
        with self.cond:
            for n in names:
                self.first.pop(n, None)

    def close(self):
        os.write(self.stop_w, b"x")
        self.thread.join()
        os.close(self.fd)

#!/usr/bin/env python3
"""kernel.py — issue 25's figures for qh's Jupyter kernel, beside
ipykernel (python3-ipykernel) measured in the same run as the baseline:

  * the round trip of an execute_request of `1 + 1` to its execute_reply,
    through jupyter_client's blocking client: median and 90th percentile
    of ROUNDS requests after WARM warm-up ones, kernels alternating in
    blocks (bar: qh's median <= 2 ms);
  * kernel start to kernel_info_reply: a signed kernel_info_request waits
    in a socket retrying its connection every millisecond before the
    process starts; the time from Popen to the reply, median of STARTS
    starts (bar: <= 50 ms).

Usage: /usr/bin/python3 tests/bench/kernel.py build/src/qh [--rounds N] [--starts N]
Prints both kernels' figures, the ratio ipykernel / qh, and the verdicts."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

try:
    from jupyter_client import BlockingKernelClient
    from jupyter_client.connect import write_connection_file
except ImportError:
    sys.exit("needs python3-jupyter-client (run with /usr/bin/python3)")


def have_ipykernel():
    try:
        import ipykernel  # noqa: F401
        return True
    except ImportError:
        return False


def argv_of(kind, qh, conn):
    if kind == "qh":
        return [qh, "--kernel", conn]
    return [sys.executable, "-m", "ipykernel_launcher", "-f", conn]


class Running:
    def __init__(self, kind, qh):
        fd, self.conn = tempfile.mkstemp(suffix=".json", prefix="bench-%s-" % kind)
        os.close(fd)
        write_connection_file(self.conn)
        self.kc = BlockingKernelClient(connection_file=self.conn)
        self.kc.load_connection_file()
        self.kc.start_channels()
        self.proc = subprocess.Popen(argv_of(kind, qh, self.conn), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        # ready when it answers kernel_info (the heartbeat check of wait_for_ready
        # gives up on a kernel that has not beaten yet)
        msg_id = self.kc.kernel_info()
        while True:
            r = self.kc.get_shell_msg(timeout=60)
            if r["parent_header"].get("msg_id") == msg_id:
                break

    def execute(self):
        t0 = time.perf_counter()
        msg_id = self.kc.execute("1 + 1")
        while True:
            r = self.kc.get_shell_msg(timeout=10)
            if r["parent_header"].get("msg_id") == msg_id:
                break
        dt = time.perf_counter() - t0
        # drain iopub so it does not pile up
        while True:
            try:
                self.kc.get_iopub_msg(timeout=0)
            except Exception:
                break
        return dt

    def close(self):
        self.kc.shutdown()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.kc.stop_channels()
        os.unlink(self.conn)


def start_time(kind, qh):
    """Popen to kernel_info_reply: a signed request waits in a DEALER socket
    that retries its connection every millisecond (ZeroMQ's default is
    100 ms, which would be measured instead of the kernel)."""
    import json
    import zmq
    from jupyter_client.session import Session
    fd, conn = tempfile.mkstemp(suffix=".json", prefix="start-%s-" % kind)
    os.close(fd)
    write_connection_file(conn)
    info = json.load(open(conn))
    session = Session(key=info["key"].encode(), signature_scheme=info["signature_scheme"])
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.RECONNECT_IVL, 1)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect("%s://%s:%d" % (info["transport"], info["ip"], info["shell_port"]))
    session.send(sock, "kernel_info_request", {})
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv_of(kind, qh, conn), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not sock.poll(60000):
        sys.exit("%s did not answer kernel_info_request" % kind)
    dt = time.perf_counter() - t0
    _, msg = session.recv(sock)
    assert msg["msg_type"] == "kernel_info_reply", msg
    session.send(sock, "shutdown_request", {"restart": False})
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    sock.close()
    os.unlink(conn)
    return dt


def ms(x):
    return "%.3f ms" % (x * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("qh")
    ap.add_argument("--rounds", type=int, default=400)
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--starts", type=int, default=15)
    a = ap.parse_args()
    qh = os.path.abspath(a.qh)
    kinds = ["qh"] + (["ipykernel"] if have_ipykernel() else [])
    if len(kinds) == 1:
        print("python3-ipykernel is not installed: qh alone, no baseline")
    times = {k: [] for k in kinds}
    running = {k: Running(k, qh) for k in kinds}
    for k in kinds:
        for _ in range(a.warm):
            running[k].execute()
    block = 20
    done = 0
    while done < a.rounds:
        for k in kinds:
            for _ in range(block):
                times[k].append(running[k].execute())
        done += block
    for k in kinds:
        running[k].close()
    starts = {k: [] for k in kinds}
    for _ in range(a.starts):
        for k in kinds:
            starts[k].append(start_time(k, qh))
    print("execute_request '1 + 1' -> execute_reply (%d rounds, kernels alternating in blocks of %d)" %
          (len(times["qh"]), block))
    med = {}
    for k in kinds:
        t = sorted(times[k])
        med[k] = statistics.median(t)
        print("  %-10s median %s, p90 %s, best %s" % (k, ms(med[k]), ms(t[int(0.9 * len(t))]), ms(t[0])))
    print("kernel start -> kernel_info_reply (%d starts)" % a.starts)
    smed = {}
    for k in kinds:
        t = sorted(starts[k])
        smed[k] = statistics.median(t)
        print("  %-10s median %s, best %s" % (k, ms(smed[k]), ms(t[0])))
    if "ipykernel" in kinds:
        print("ratios (ipykernel / qh): round trip %.1fx, start %.1fx" %
              (med["ipykernel"] / med["qh"], smed["ipykernel"] / smed["qh"]))
    print("Verdicts")
    print("  round trip median %s: %s (bar <= 2 ms)" % (ms(med["qh"]), "met" if med["qh"] <= 2e-3 else "MISSED"))
    print("  start to kernel_info_reply %s: %s (bar <= 50 ms)" %
          (ms(smed["qh"]), "met" if smed["qh"] <= 50e-3 else "MISSED"))


if __name__ == "__main__":
    main()

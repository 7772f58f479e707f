"""kazoo_lock drives kazoo's Lock for baton's interop tests.

Usage: kazoo_lock.py MODE CONNECT PATH [CYCLES LOGFILE]
  hold: acquire, print "held", wait for a line on stdin, release, print "released"
  try:  try to acquire without waiting, print "acquired" or "busy"
  loop: print "ready", then CYCLES times acquire, append "E kazoo" and "L kazoo" to LOGFILE, release

kazoo counts only its own "__lock__" nodes as contenders unless told
otherwise: extra_lock_patterns=["-lock-"] makes it see Curator's and
baton's "_c_<uuid>-lock-<seq>" nodes too.
"""
import logging
import os
import sys

from kazoo.client import KazooClient

logging.basicConfig(level=logging.CRITICAL)
mode, connect, path = sys.argv[1:4]
zk = KazooClient(hosts=connect, timeout=10.0)
zk.start(timeout=30)
lock = zk.Lock(path, extra_lock_patterns=["-lock-"])
if mode == "hold":
    lock.acquire()
    print("held " + ",".join(sorted(zk.get_children(path))), flush=True)
    sys.stdin.readline()
    lock.release()
    print("released", flush=True)
elif mode == "try":
    print("acquired" if lock.acquire(blocking=False) else "busy", flush=True)
    if lock.is_acquired:
        lock.release()
elif mode == "loop":
    cycles, logfile = int(sys.argv[4]), sys.argv[5]
    print("ready", flush=True)
    fd = os.open(logfile, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for _ in range(cycles):
        lock.acquire()
        os.write(fd, b"E kazoo\n")
        os.write(fd, b"L kazoo\n")
        lock.release()
    os.close(fd)
    print("done", flush=True)
else:
    raise SystemExit("unknown mode " + mode)
zk.stop()
zk.close()

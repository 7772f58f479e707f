"""kazoo_peer drives kazoo's recipes for baton's interop tests.

Usage: kazoo_peer.py RECIPE CONNECT PATH N

It prints "ready" once connected, then answers one line per command read
from stdin (the same protocol as RecipesPeer.java):
  writelock|readlock|lock  acquire -> ok; try -> yes|no; release -> ok;
                           contenders -> the contenders' data, joined by " | "
  semaphore (N leases)     acquire -> ok | error <text>; try -> yes|no|error <text>; release -> ok
  barrier                  create -> ok; remove -> ok; wait -> passed; try -> yes|no
  double (N participants)  enter -> entered; leave -> left
  queue|lockingqueue       put V -> ok; get -> V|empty
  election                 run -> leader (runs until "resign") ; resign -> ok
The read/write locks see baton's and Curator's nodes through
extra_lock_patterns, as their documentation suggests for mixed layouts.
"""
import logging
import sys
import threading

from kazoo.client import KazooClient

logging.basicConfig(level=logging.CRITICAL)
recipe, connect, path, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
zk = KazooClient(hosts=connect, timeout=10.0)
zk.start(timeout=30)


def say(s):
    print(s, flush=True)


if recipe == "writelock":
    r = zk.WriteLock(path, "kazoo-writer", extra_lock_patterns=["__READ__", "__WRIT__", "-lock-"])
elif recipe == "readlock":
    r = zk.ReadLock(path, "kazoo-reader", extra_lock_patterns=["__WRIT__", "-lock-"])
elif recipe == "lock":
    r = zk.Lock(path, "kazoo-lock", extra_lock_patterns=["-lock-"])
elif recipe == "semaphore":
    r = zk.Semaphore(path, "kazoo-lease", max_leases=n)
elif recipe == "barrier":
    r = zk.Barrier(path)
elif recipe == "double":
    r = zk.DoubleBarrier(path, n)
elif recipe == "queue":
    r = zk.Queue(path)
elif recipe == "lockingqueue":
    r = zk.LockingQueue(path)
elif recipe == "election":
    r = zk.Election(path, "kazoo-candidate")
else:
    raise SystemExit("unknown recipe " + recipe)

say("ready")
resign = threading.Event()
for line in sys.stdin:
    cmd = line.split(None, 1)
    if not cmd:
        continue
    op, arg = cmd[0], (cmd[1].rstrip("\n") if len(cmd) > 1 else "")
    try:
        if op == "acquire":
            r.acquire()
            say("ok")
        elif op == "try":
            say("yes" if r.acquire(blocking=False) else "no")
        elif op == "release":
            r.release()
            say("ok")
        elif op == "contenders":
            say(" | ".join(r.contenders()))
        elif op == "create":
            r.create()
            say("ok")
        elif op == "remove":
            r.remove()
            say("ok")
        elif op == "wait":
            r.wait()
            say("passed")
        elif op == "enter":
            r.enter()
            say("entered")
        elif op == "leave":
            r.leave()
            say("left")
        elif op == "put":
            r.put(arg.encode("utf-8"))
            say("ok")
        elif op == "get":
            v = r.get(0.3) if recipe == "lockingqueue" else r.get()
            if v is not None and recipe == "lockingqueue":
                r.consume()
            say("empty" if v is None else v.decode("utf-8"))
        elif op == "run":
            def lead():
                say("leader")
                resign.wait()
            threading.Thread(target=r.run, args=(lead,), daemon=True).start()
        elif op == "resign":
            resign.set()
            say("ok")
        else:
            say("error unknown command " + op)
    except Exception as e:  # a refusal is an answer, not a crash
        say("error %s: %s" % (type(e).__name__, e))
zk.stop()
zk.close()

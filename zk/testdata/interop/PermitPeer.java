// PermitPeer drives Apache Curator's InterProcessSemaphoreV2 for baton's
// PermitSemaphore interop tests, one command per stdin line, one answer per
// stdout line.
//
// Usage: PermitPeer CONNECT PATH N
//   N is the number of leases, or "shared": the number a SharedCount at
//   PATH/permits holds (where baton records it).
//   acquire:        take a lease, waiting as long as it takes: "ok NODE"
//   try:            take a lease if one is free within 300 ms: "ok NODE" or "no"
//   release NODE:   return the lease on node NODE: "ok" (or "error …")
//   count:          the SharedCount's value (shared only)
//   leases:         the children of PATH/leases, sorted, comma-separated
//   loop T C LOG:   T threads, each with its own session, C times: take a
//                   lease, append "E curator<i>" to LOG, hold it for a
//                   random 1-10 ms, append "L curator<i>", return it; "done"
//   quit
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.retry.RetryOneTime;

public class PermitPeer {
    static String connect, path, n;
    static SharedCount count;

    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    static CuratorFramework client() throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 5000, new RetryOneTime(100));
        c.start();
        c.blockUntilConnected();
        return c;
    }

    static InterProcessSemaphoreV2 semaphore(CuratorFramework c) {
        if (count != null) {
            return new InterProcessSemaphoreV2(c, path, count);
        }
        return new InterProcessSemaphoreV2(c, path, Integer.parseInt(n));
    }

    public static void main(String[] a) throws Exception {
        connect = a[0];
        path = a[1];
        n = a[2];
        CuratorFramework c = client();
        if (n.equals("shared")) {
            count = new SharedCount(c, path + "/permits", 0);
            count.start();
        }
        InterProcessSemaphoreV2 sem = semaphore(c);
        Map<String, Lease> held = new HashMap<>();
        say("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            switch (w[0]) {
                case "acquire": {
                    Lease l = sem.acquire();
                    held.put(l.getNodeName(), l);
                    say("ok " + l.getNodeName());
                    break;
                }
                case "try": {
                    Lease l = sem.acquire(300, TimeUnit.MILLISECONDS);
                    if (l == null) {
                        say("no");
                    } else {
                        held.put(l.getNodeName(), l);
                        say("ok " + l.getNodeName());
                    }
                    break;
                }
                case "release": {
                    Lease l = held.remove(w[1]);
                    if (l == null) {
                        say("error no lease " + w[1]);
                        break;
                    }
                    try {
                        sem.returnLease(l);
                        say("ok");
                    } catch (Exception e) {
                        say("error " + e);
                    }
                    break;
                }
                case "count":
                    say(String.valueOf(count.getCount()));
                    break;
                case "leases": {
                    List<String> kids = c.getChildren().forPath(path + "/leases");
                    Collections.sort(kids);
                    say(String.join(",", kids));
                    break;
                }
                case "loop":
                    say(loop(Integer.parseInt(w[1]), Integer.parseInt(w[2]), w[3]));
                    break;
                case "quit":
                    c.close();
                    say("bye");
                    return;
                default:
                    say("unknown " + line);
            }
        }
    }

    // loop runs the threads and returns "done" or the first error.
    static String loop(int threads, int cycles, String log) throws Exception {
        AtomicReference<String> failed = new AtomicReference<>();
        List<Thread> ts = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            String who = "curator" + i;
            Thread t = new Thread(() -> {
                try (CuratorFramework c = client(); FileOutputStream f = new FileOutputStream(log, true)) {
                    InterProcessSemaphoreV2 sem = semaphore(c);
                    byte[] enter = ("E " + who + "\n").getBytes(StandardCharsets.UTF_8);
                    byte[] leave = ("L " + who + "\n").getBytes(StandardCharsets.UTF_8);
                    for (int k = 0; k < cycles; k++) {
                        Lease l = sem.acquire();
                        f.write(enter);
                        LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(1_000_000, 10_000_001));
                        f.write(leave);
                        sem.returnLease(l);
                    }
                } catch (Exception e) {
                    failed.compareAndSet(null, "error " + who + ": " + e);
                }
            });
            ts.add(t);
            t.start();
        }
        for (Thread t : ts) {
            t.join();
        }
        return failed.get() != null ? failed.get() : "done";
    }
}

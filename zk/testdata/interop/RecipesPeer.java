// RecipesPeer drives Apache Curator's recipes and ZooKeeper's own
// DistributedQueue on one path, one command per stdin line, one answer per
// stdout line, so that Go tests can interleave them with baton's recipes.
//
// Usage: RecipesPeer CONNECT RECIPE PATH [N]
//   rwmutex:   rlock runlock wlock wunlock tryr tryw
//   semaphore: acquire try release            (N permits)
//   latch:     start await has close          (LeaderLatch, id "java")
//   selector:  start resign                   (LeaderSelector; prints "leader" when it leads)
//   double:    enter leave                    (N participants)
//   barrier:   set remove wait try
//   queue:     put DATA take poll                (ZooKeeper's DistributedQueue, qn- items)
//   cqueue:    put DATA                          (Curator's DistributedQueue, queue- items;
//                                                 with N > 1 it also consumes: "took DATA")
// and "nodes" (children of PATH, comma-separated; none once the server has
// removed the emptied container) and "quit" everywhere.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.recipes.queue.DistributedQueue;

public class RecipesPeer {
    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        String connect = a[0], recipe = a[1], path = a[2];
        int n = a.length > 3 ? Integer.parseInt(a[3]) : 1;
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 5000, new RetryOneTime(100));
        c.start();
        c.blockUntilConnected();
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
        InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(c, path, n);
        Lease lease = null;
        LeaderLatch latch = new LeaderLatch(c, path, "java");
        final java.util.concurrent.Semaphore resign = new java.util.concurrent.Semaphore(0);
        LeaderSelector selector = new LeaderSelector(c, path, new LeaderSelectorListenerAdapter() {
            public void takeLeadership(CuratorFramework cf) throws Exception {
                say("leader");
                resign.acquire();
            }
        });
        DistributedDoubleBarrier dbl = new DistributedDoubleBarrier(c, path, n);
        DistributedBarrier bar = new DistributedBarrier(c, path);
        DistributedQueue q = new DistributedQueue(c.getZookeeperClient().getZooKeeper(), path, ZooDefs.Ids.OPEN_ACL_UNSAFE);
        org.apache.curator.framework.recipes.queue.DistributedQueue<String> cq = null;
        if (recipe.equals("cqueue")) {
            QueueConsumer<String> consumer = n < 2 ? null : new QueueConsumer<String>() {
                public void consumeMessage(String m) { say("took " + m); }
                public void stateChanged(CuratorFramework f, ConnectionState st) {}
            };
            QueueSerializer<String> ser = new QueueSerializer<String>() {
                public byte[] serialize(String v) { return v.getBytes(java.nio.charset.StandardCharsets.UTF_8); }
                public String deserialize(byte[] b) { return new String(b, java.nio.charset.StandardCharsets.UTF_8); }
            };
            cq = QueueBuilder.builder(c, consumer, ser, path).putInBackground(false).buildQueue();
            cq.start();
        }
        say("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ", 2);
            String cmd = recipe + " " + w[0];
            switch (cmd) {
                case "rwmutex rlock": rw.readLock().acquire(); say("ok"); break;
                case "rwmutex runlock": rw.readLock().release(); say("ok"); break;
                case "rwmutex wlock": rw.writeLock().acquire(); say("ok"); break;
                case "rwmutex wunlock": rw.writeLock().release(); say("ok"); break;
                case "rwmutex tryr": say(rw.readLock().acquire(300, TimeUnit.MILLISECONDS) ? "yes" : "no"); break;
                case "rwmutex tryw": say(rw.writeLock().acquire(300, TimeUnit.MILLISECONDS) ? "yes" : "no"); break;
                case "semaphore acquire": lease = sem.acquire(); say("ok"); break;
                case "semaphore try": lease = sem.acquire(300, TimeUnit.MILLISECONDS); say(lease != null ? "yes" : "no"); break;
                case "semaphore release": sem.returnLease(lease); lease = null; say("ok"); break;
                case "latch start": latch.start(); say("ok"); break;
                case "latch await": latch.await(); say("leader"); break;
                case "latch has": say(latch.hasLeadership() ? "yes" : "no"); break;
                case "latch close": latch.close(); say("ok"); break;
                case "selector start": selector.start(); say("ok"); break;
                case "selector resign": resign.release(); say("ok"); break;
                case "double enter": dbl.enter(); say("entered"); break;
                case "double leave": dbl.leave(); say("left"); break;
                case "barrier set": bar.setBarrier(); say("ok"); break;
                case "barrier remove": bar.removeBarrier(); say("ok"); break;
                case "barrier wait": bar.waitOnBarrier(); say("passed"); break;
                case "barrier try": say(bar.waitOnBarrier(300, TimeUnit.MILLISECONDS) ? "yes" : "no"); break;
                case "queue put": say(q.offer(w[1].getBytes("UTF-8")) ? "ok" : "failed"); break;
                case "queue take": say(new String(q.take(), "UTF-8")); break;
                case "queue poll": { byte[] b = q.poll(); say(b == null ? "empty" : new String(b, "UTF-8")); break; }
                case "cqueue put": cq.put(w[1]); say("ok"); break;
                default:
                    if (w[0].equals("nodes")) {
                        // The recipes make their directory a container, which
                        // the server removes soon after it empties: gone, it
                        // has no children.
                        List<String> kids = new java.util.ArrayList<>();
                        try {
                            kids = c.getChildren().forPath(w.length > 1 ? w[1] : path);
                        } catch (org.apache.zookeeper.KeeperException.NoNodeException gone) {
                        }
                        Collections.sort(kids);
                        say(String.join(",", kids));
                    } else if (w[0].equals("quit")) {
                        c.close();
                        say("bye");
                        return;
                    } else {
                        say("unknown " + line);
                    }
            }
        }
    }
}

// ExtrasPeer drives Apache Curator's GroupMember, DistributedPriorityQueue
// and DistributedDelayQueue on one path, one command per stdin line, one
// answer per stdout line, so that Go tests can interleave them with baton's
// recipes.
//
// Usage: ExtrasPeer CONNECT RECIPE PATH [ARG]
//   group ID DATA: members (id=data,… sorted by id)
//   priority [consume]: put DATA PRIORITY          (DistributedPriorityQueue)
//   delay [consume]:    put DATA DELAY_MS          (DistributedDelayQueue, due now+DELAY_MS)
// With "consume" the queue consumes, with lockPath PATH.claims, printing
// "got DATA" for each item. "quit" everywhere.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryOneTime;

public class ExtrasPeer {
    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        String connect = a[0], recipe = a[1], path = a[2];
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 5000, new RetryOneTime(100));
        c.start();
        c.blockUntilConnected();
        GroupMember member = null;
        if (recipe.equals("group")) {
            member = new GroupMember(c, path, a[3], a[4].getBytes(StandardCharsets.UTF_8));
            member.start();
        }
        DistributedPriorityQueue<String> pq = null;
        DistributedDelayQueue<String> dq = null;
        if (recipe.equals("priority") || recipe.equals("delay")) {
            QueueSerializer<String> ser = new QueueSerializer<String>() {
                public byte[] serialize(String s) { return s.getBytes(StandardCharsets.UTF_8); }
                public String deserialize(byte[] b) { return new String(b, StandardCharsets.UTF_8); }
            };
            QueueConsumer<String> consumer = null;
            if (a.length > 3 && a[3].equals("consume")) {
                consumer = new QueueConsumer<String>() {
                    public void consumeMessage(String s) { say("got " + s); }
                    public void stateChanged(CuratorFramework cf, ConnectionState st) {}
                };
            }
            QueueBuilder<String> b = QueueBuilder.builder(c, consumer, ser, path);
            if (consumer != null) b = b.lockPath(path + ".claims");
            if (recipe.equals("priority")) { pq = b.buildPriorityQueue(0); pq.start(); }
            else { dq = b.buildDelayQueue(); dq.start(); }
        }
        say("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ", 2);
            String cmd = recipe + " " + w[0];
            switch (cmd) {
                case "group members": {
                    StringBuilder b = new StringBuilder();
                    for (Map.Entry<String, byte[]> e : new TreeMap<>(member.getCurrentMembers()).entrySet()) {
                        if (b.length() > 0) b.append(',');
                        b.append(e.getKey()).append('=').append(new String(e.getValue(), StandardCharsets.UTF_8));
                    }
                    say(b.toString());
                    break;
                }
                case "priority put": {
                    String[] v = w[1].split(" ");
                    pq.put(v[0], Integer.parseInt(v[1]));
                    pq.flushPuts(10, java.util.concurrent.TimeUnit.SECONDS);
                    say("ok");
                    break;
                }
                case "delay put": {
                    String[] v = w[1].split(" ");
                    dq.put(v[0], System.currentTimeMillis() + Long.parseLong(v[1]));
                    dq.flushPuts(10, java.util.concurrent.TimeUnit.SECONDS);
                    say("ok");
                    break;
                }
                default:
                    if (w[0].equals("quit")) {
                        if (member != null) member.close();
                        if (pq != null) pq.close();
                        if (dq != null) dq.close();
                        c.close();
                        say("bye");
                        return;
                    }
                    say("unknown " + cmd);
            }
        }
    }
}

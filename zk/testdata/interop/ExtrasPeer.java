// ExtrasPeer drives Apache Curator's GroupMember, DistributedPriorityQueue
// and DistributedDelayQueue on one path, one command per stdin line, one
// answer per stdout line, so that Go tests can interleave them with baton's
// recipes.
//
// Usage: ExtrasPeer CONNECT RECIPE PATH [ARG]
//   group ID DATA: members (id=data,… sorted by id)
// and "quit" everywhere.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.nodes.GroupMember;
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
                default:
                    if (w[0].equals("quit")) {
                        if (member != null) member.close();
                        c.close();
                        say("bye");
                        return;
                    }
                    say("unknown " + cmd);
            }
        }
    }
}

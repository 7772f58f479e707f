// RevokePeer drives Apache Curator's revocable InterProcessMutex and its
// Revoker on one lock path, one command per stdin line, one answer per
// stdout line (a revocation request is announced as "revoke requested"
// when the listener runs).
//
// Usage: RevokePeer CONNECT PATH
//   lock     take the lock, made revocable first: "locked"
//   release  let it go: "released"
//   revoke   Revoker.attemptRevoke on the holder's node: "ok", or "none"
//   quit
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Collection;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryOneTime;

public class RevokePeer {
    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        String connect = a[0], path = a[1];
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 5000, new RetryOneTime(100));
        c.start();
        c.blockUntilConnected();
        InterProcessMutex m = new InterProcessMutex(c, path);
        m.makeRevocable(lock -> say("revoke requested"));
        say("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            switch (line.trim()) {
                case "lock":
                    m.acquire();
                    say("locked");
                    break;
                case "release":
                    m.release();
                    say("released");
                    break;
                case "revoke": {
                    Collection<String> nodes = m.getParticipantNodes();
                    if (nodes.isEmpty()) {
                        say("none");
                        break;
                    }
                    Revoker.attemptRevoke(c, nodes.iterator().next());
                    say("ok");
                    break;
                }
                case "quit":
                    c.close();
                    say("bye");
                    return;
                default:
                    say("unknown " + line);
            }
        }
    }
}

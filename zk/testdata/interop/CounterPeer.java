// CounterPeer drives Apache Curator's SharedCount and DistributedAtomicLong
// on one path, one command per stdin line, one answer per stdout line.
//
// Usage: CounterPeer CONNECT PATH
//   count-get          SharedCount (seed 0): the count
//   count-set V        SharedCount.setCount: "ok"
//   count-listen       from now on print "changed V" on every change
//   long-get           DistributedAtomicLong.get: the value
//   long-add D         DistributedAtomicLong.add: the value after, or "failed"
//   quit
import java.io.BufferedReader;
import java.io.InputStreamReader;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.retry.RetryOneTime;

public class CounterPeer {
    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        String connect = a[0], path = a[1];
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 5000, new RetryOneTime(100));
        c.start();
        c.blockUntilConnected();
        SharedCount count = null;
        DistributedAtomicLong along = new DistributedAtomicLong(c, path, new RetryNTimes(10, 10));
        say("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split(" ");
            if (w[0].startsWith("count") && count == null) {
                count = new SharedCount(c, path, 0);
                count.start();
            }
            switch (w[0]) {
                case "count-get":
                    say(Integer.toString(count.getCount()));
                    break;
                case "count-set":
                    count.setCount(Integer.parseInt(w[1]));
                    say("ok");
                    break;
                case "count-listen":
                    count.addListener(new SharedCountListener() {
                        public void countHasChanged(SharedCountReader r, int v) {
                            say("changed " + v);
                        }

                        public void stateChanged(CuratorFramework f, ConnectionState s) {
                        }
                    });
                    say("ok");
                    break;
                case "long-get":
                    say(Long.toString(along.get().postValue()));
                    break;
                case "long-add": {
                    AtomicValue<Long> v = along.add(Long.parseLong(w[1]));
                    say(v.succeeded() ? Long.toString(v.postValue()) : "failed");
                    break;
                }
                case "quit":
                    if (count != null) count.close();
                    c.close();
                    say("bye");
                    return;
                default:
                    say("unknown " + line);
            }
        }
    }
}

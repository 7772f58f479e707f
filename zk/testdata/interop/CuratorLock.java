// CuratorLock drives Apache Curator's InterProcessMutex for baton's interop
// tests. Usage: CuratorLock MODE CONNECT PATH [CYCLES LOGFILE]
//   hold: acquire, print "held", wait for a line on stdin, release, print "released"
//   try:  try to acquire without waiting, print "acquired" or "busy"
//   loop: print "ready", then CYCLES times acquire, append "E curator" and "L curator" to LOGFILE, release
// With ZK_DIGEST=user:password in the environment, the client authenticates
// with that digest and creates its nodes creator-only (CREATOR_ALL_ACL plus
// READ_ACL_UNSAFE), like baton's zk.CreatorACL.
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;

public class CuratorLock {
    public static void main(String[] args) throws Exception {
        String mode = args[0], connect = args[1], path = args[2];
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder()
            .connectString(connect).sessionTimeoutMs(10000).connectionTimeoutMs(10000)
            .retryPolicy(new RetryOneTime(100));
        String digest = System.getenv("ZK_DIGEST");
        if (digest != null && !digest.isEmpty()) {
            List<ACL> acl = new ArrayList<>(ZooDefs.Ids.CREATOR_ALL_ACL);
            acl.addAll(ZooDefs.Ids.READ_ACL_UNSAFE);
            b = b.authorization("digest", digest.getBytes(StandardCharsets.UTF_8)).aclProvider(new ACLProvider() {
                public List<ACL> getDefaultAcl() { return acl; }
                public List<ACL> getAclForPath(String p) { return acl; }
            });
        }
        CuratorFramework client = b.build();
        client.start();
        client.blockUntilConnected(30, TimeUnit.SECONDS);
        InterProcessMutex m = new InterProcessMutex(client, path);
        switch (mode) {
        case "hold":
            m.acquire();
            System.out.println("held " + String.join(",", client.getChildren().forPath(path)));
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            m.release();
            System.out.println("released");
            break;
        case "try":
            if (m.acquire(0, TimeUnit.MILLISECONDS)) {
                System.out.println("acquired");
                m.release();
            } else {
                System.out.println("busy");
            }
            break;
        case "loop":
            int cycles = Integer.parseInt(args[3]);
            System.out.println("ready");
            System.out.flush();
            try (FileOutputStream log = new FileOutputStream(args[4], true)) {
                for (int i = 0; i < cycles; i++) {
                    m.acquire();
                    log.write("E curator\n".getBytes(StandardCharsets.UTF_8));
                    log.write("L curator\n".getBytes(StandardCharsets.UTF_8));
                    m.release();
                }
            }
            System.out.println("done");
            break;
        default:
            throw new IllegalArgumentException(mode);
        }
        System.out.flush();
        client.close();
    }
}

// CuratorLock drives Apache Curator's InterProcessMutex for baton's interop
// tests. Usage: CuratorLock MODE CONNECT PATH [CYCLES LOGFILE]
//   hold: acquire, print "held", wait for a line on stdin, release, print "released"
//   try:  try to acquire without waiting, print "acquired" or "busy"
//   loop: print "ready", then CYCLES times acquire, append "E curator" and "L curator" to LOGFILE, release
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;

public class CuratorLock {
    public static void main(String[] args) throws Exception {
        String mode = args[0], connect = args[1], path = args[2];
        CuratorFramework client = CuratorFrameworkFactory.newClient(connect, 10000, 10000, new RetryOneTime(100));
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

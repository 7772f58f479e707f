package reliability

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton"
	"github.com/batonhq/baton/internal/await"
)

// workerEnv, when set, makes the test binary run as a lock-holding worker
// process instead of running tests.
const workerEnv = "BATON_RELIABILITY_WORKER"

// workerMain is a separate process that takes a lock, prints
// "LOCKED <token>", then writes to the fenced resource with its token
// every few milliseconds until it learns the lock is lost ("LOST", exit 3)
// or its standard input closes (exit 0). It stops by itself after a minute.
func workerMain() int {
	kind, addr, name, res := os.Getenv("BATON_RW_KIND"), os.Getenv("BATON_RW_ADDR"), os.Getenv("BATON_RW_NAME"), os.Getenv("BATON_RW_RESOURCE")
	ttl, _ := time.ParseDuration(os.Getenv("BATON_RW_TTL"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := openStore(ctx, kind, addr, ttl)
	if err != nil {
		fmt.Println("ERROR", err)
		return 2
	}
	lease, err := baton.NewMutex(s, name).Lock(ctx)
	if err != nil {
		fmt.Println("ERROR", err)
		return 2
	}
	fmt.Printf("LOCKED %d\n", lease.Token())
	// Standard input: a line "GO" resumes a paused write; EOF stops us.
	stdin := make(chan struct{})
	resume := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "GO" {
				resume <- struct{}{}
			}
		}
		close(stdin)
	}()
	who := "worker-" + strconv.Itoa(os.Getpid())
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	if os.Getenv("BATON_RW_PAUSE_MIDWRITE") != "" && lease.Err() == nil {
		// A pause between checking the lease and writing. The write that
		// follows is stale.
		fmt.Println("PAUSING")
		// The test stops this process (SIGSTOP) here, lets another
		// client acquire, resumes it, and only then says GO.
		select {
		case <-resume:
		case <-ctx.Done():
			return 4
		}
		u := fmt.Sprintf("%s?token=%d&who=%s", res, lease.Token(), who)
		if resp, err := client.Post(u, "text/plain", nil); err == nil {
			resp.Body.Close()
		}
	}
	for {
		select {
		case <-lease.Done():
			fmt.Println("LOST")
			return 3
		case <-stdin:
			return 0
		case <-ctx.Done():
			return 4
		case <-tick.C:
			// The lease may have ended while we slept: a paused process
			// cannot know before it looks, which is what fencing is for.
			u := fmt.Sprintf("%s?token=%d&who=%s", res, lease.Token(), who)
			if resp, err := client.Post(u, "text/plain", nil); err == nil {
				resp.Body.Close()
			}
		}
	}
}

// worker is a running worker process.
type worker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	who   string
	token int64
}

// startWorker starts a worker holding name on tg and waits until it holds.
func startWorker(t *testing.T, tg target, name string, res *Resource, env ...string) *worker {
	t.Helper()
	w := launchWorker(t, tg, name, res, env...)
	line := w.next(t, 30*time.Second)
	if !strings.HasPrefix(line, "LOCKED ") {
		t.Fatalf("worker: %q", line)
	}
	w.token, _ = strconv.ParseInt(strings.TrimPrefix(line, "LOCKED "), 10, 64)
	return w
}

// launchWorker starts a worker that locks name on tg, without waiting.
func launchWorker(t *testing.T, tg target, name string, res *Resource, env ...string) *worker {
	t.Helper()
	w := spawn(t, tg, name, true, append(env, workerEnv+"=1", "BATON_RW_RESOURCE="+res.URL())...)
	w.who = "worker-" + strconv.Itoa(w.cmd.Process.Pid)
	return w
}

// spawn starts this test binary as a child process in the role env names,
// on name at tg, its stdout lines read into w.lines; group gives it a
// process group of its own and a stdin. Cleanup kills it (its group).
func spawn(t *testing.T, tg target, name string, group bool, env ...string) *worker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...),
		"BATON_RW_KIND="+tg.kind, "BATON_RW_ADDR="+tg.addr, "BATON_RW_NAME="+name, "BATON_RW_TTL="+tg.ttl.String())
	w := &worker{cmd: cmd, lines: make(chan string, 256)}
	if group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		w.stdin = stdin
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if group {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		} else {
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	return w
}

// next returns the worker's next output line, or fails after d.
func (w *worker) next(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-w.lines:
		if !ok {
			t.Fatal("worker exited without a word")
		}
		return l
	case <-time.After(d):
		t.Fatalf("worker silent for %v", d)
		return ""
	}
}

// waitStopped waits until the worker process is in the stopped state.
func (w *worker) waitStopped(t *testing.T) {
	t.Helper()
	await.Until(t, 10*time.Second, "the worker to stop", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", w.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		// The state follows the command name in parentheses.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		return len(f) > 0 && f[0] == "T"
	})
}

func (w *worker) signal(sig syscall.Signal) { _ = syscall.Kill(w.cmd.Process.Pid, sig) }

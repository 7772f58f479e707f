package demo

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/batonhq/baton"
)

// Findings are what each phase found, for Summary.
type Findings struct {
	acquisitions  int
	overlaps      int
	order         []string
	fifo          bool
	lockTime      time.Duration
	watchEvents   int64
	watchCounted  bool
	releases      int
	firstLeader   string
	nextLeader    string
	failover      time.Duration
	barrierN      int
	enteredTogeth bool
	leftTogether  bool
	enterSpread   time.Duration
	queueItems    int
	queueOnce     bool
	queueTakers   []string
	total         time.Duration
}

// lockPhase: workers contend for one lock, each logging acquire and
// release inside the critical section.
func (d *Run) lockPhase(ctx context.Context, sum *Findings, workers, rounds int) error {
	name, log := d.Prefix+"/lock", d.logPath("lock")
	total := workers * rounds
	fmt.Fprintf(d.Out, "1/4 lock: %d worker processes × %d acquisitions of %s\n", workers, rounds, name)
	// A start barrier holds the workers until all are up, so that all of
	// them contend from the first round.
	start := baton.NewBarrier(d.Session, name+"-start")
	if err := start.Set(ctx); err != nil {
		return fmt.Errorf("lock: start barrier: %w", err)
	}
	ps, err := d.spawnN(workers, "lock", name, log, func(int) []string {
		return []string{"--rounds", strconv.Itoa(rounds), "--hold", "25ms"}
	})
	if err != nil {
		return err
	}
	if err := waitCount(ctx, log, 30*time.Second, "ready", workers); err != nil {
		return fmt.Errorf("lock: waiting for the workers to start: %w", err)
	}
	began := time.Now()
	if err := start.Remove(ctx); err != nil {
		return fmt.Errorf("lock: start barrier: %w", err)
	}
	stop := make(chan struct{})
	go d.progress(log, "acquire", "acquisitions", total, stop)
	err = d.wait(ctx, ps, lockPhaseLimit(total))
	close(stop)
	if err != nil {
		return err
	}
	sum.lockTime = time.Since(began)
	evs, err := readEvents(log)
	if err != nil {
		return err
	}
	held, last := 0, int64(0)
	sum.fifo = true
	for _, e := range evs {
		switch e.event {
		case "acquire":
			if held > 0 {
				sum.overlaps++
			}
			held++
			sum.acquisitions++
			sum.order = append(sum.order, e.id)
			tok, _ := strconv.ParseInt(e.arg, 10, 64)
			if tok <= last {
				sum.fifo = false
			}
			last = tok
		case "release":
			held--
			sum.releases++
		}
	}
	sum.watchEvents, sum.watchCounted = watchEvents(evs)
	fmt.Fprintf(d.Out, "    done: %d acquisitions in %v, %d overlapping\n\n", sum.acquisitions, sum.lockTime.Round(time.Millisecond), sum.overlaps)
	if sum.acquisitions != total {
		return fmt.Errorf("lock: %d acquisitions logged, want %d", sum.acquisitions, total)
	}
	return nil
}

// electPhase: three candidates; the leader is killed (SIGKILL, no chance
// to resign) and the time until the next one leads is the failover time.
func (d *Run) electPhase(ctx context.Context, sum *Findings) error {
	const n = 3
	name, log := d.Prefix+"/leader", d.logPath("elect")
	fmt.Fprintf(d.Out, "2/4 election: %d candidates on %s\n", n, name)
	ps, err := d.spawnN(n, "elect", name, log, nil)
	if err != nil {
		return err
	}
	isLeader := func(e event) bool { return e.event == "leader" }
	first, err := waitEvent(ctx, log, 30*time.Second, isLeader)
	if err != nil {
		return fmt.Errorf("election: waiting for a leader: %w", err)
	}
	sum.firstLeader = first.id
	var victim *proc
	for _, p := range ps {
		if p.id == first.id {
			victim = p
		}
	}
	fmt.Fprintf(d.Out, "    leader: %s (pid %d); killing it with SIGKILL…\n", first.id, victim.cmd.Process.Pid)
	killed := time.Now()
	victim.kill(syscall.SIGKILL)
	next, err := waitEvent(ctx, log, 30*time.Second, func(e event) bool { return isLeader(e) && e.id != first.id })
	if err != nil {
		return fmt.Errorf("election: waiting for the next leader: %w", err)
	}
	sum.nextLeader, sum.failover = next.id, next.at.Sub(killed)
	fmt.Fprintf(d.Out, "    new leader: %s, %v after the kill\n\n", next.id, sum.failover.Round(time.Millisecond))
	var rest []*proc
	for _, p := range ps {
		if p != victim {
			p.kill(syscall.SIGTERM) // resign and exit
			rest = append(rest, p)
		}
	}
	<-victim.done
	return d.wait(ctx, rest, 30*time.Second)
}

// barrierPhase: participants arrive at different times; none starts
// before all have arrived, none finishes before all are done.
func (d *Run) barrierPhase(ctx context.Context, sum *Findings) error {
	const n = 4
	name, log := d.Prefix+"/barrier", d.logPath("barrier")
	sum.barrierN = n
	fmt.Fprintf(d.Out, "3/4 double barrier: %d workers arriving 150 ms apart on %s\n", n, name)
	ps, err := d.spawnN(n, "barrier", name, log, func(i int) []string {
		return []string{"-n", strconv.Itoa(n), "--delay", (time.Duration(i-1) * 150 * time.Millisecond).String(),
			"--hold", (time.Duration(n-i+1) * 50 * time.Millisecond).String()}
	})
	if err != nil {
		return err
	}
	if err := d.wait(ctx, ps, 45*time.Second); err != nil {
		return err
	}
	evs, err := readEvents(log)
	if err != nil {
		return err
	}
	idx := map[string][]int{}
	var enters []time.Time
	for i, e := range evs {
		idx[e.event] = append(idx[e.event], i)
		if e.event == "enter" {
			enters = append(enters, e.at)
		}
	}
	together := func(before, after string) bool {
		b, a := idx[before], idx[after]
		return len(b) == n && len(a) == n && b[n-1] < a[0]
	}
	sum.enteredTogeth, sum.leftTogether = together("arrive", "enter"), together("finish", "left")
	if len(enters) == n {
		sort.Slice(enters, func(i, j int) bool { return enters[i].Before(enters[j]) })
		sum.enterSpread = enters[n-1].Sub(enters[0])
	}
	fmt.Fprintf(d.Out, "    all %d entered after the last arrival: %v; all left after the last finished: %v\n\n",
		n, yesNo(sum.enteredTogeth), yesNo(sum.leftTogether))
	return nil
}

// lockPhaseLimit bounds the lock phase of total acquisitions: 45 s, or
// 100 ms an acquisition (each holds 25 ms, and hands over in tens of ms on
// a loaded machine) when more. With a fixed 45 s, `--rounds 200` (1,000
// acquisitions) ran out on a loaded machine.
func lockPhaseLimit(total int) time.Duration {
	return max(45*time.Second, time.Duration(total)*100*time.Millisecond)
}

// queuePhase: the demo puts items, consumers drain them.
func (d *Run) queuePhase(ctx context.Context, sum *Findings) error {
	const items, consumers = 40, 4
	name, log := d.Prefix+"/queue", d.logPath("queue")
	fmt.Fprintf(d.Out, "4/4 queue: %d items, %d consumers on %s\n", items, consumers, name)
	q := baton.NewQueue(d.Session, name)
	for i := 1; i <= items; i++ {
		if err := q.Put(ctx, []byte(fmt.Sprintf("item-%02d", i))); err != nil {
			return fmt.Errorf("queue: put: %w", err)
		}
	}
	ps, err := d.spawnN(consumers, "queue", name, log, nil)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	go d.progress(log, "take", "items taken", items, stop)
	err = d.wait(ctx, ps, 45*time.Second)
	close(stop)
	if err != nil {
		return err
	}
	evs, err := readEvents(log)
	if err != nil {
		return err
	}
	seen, per := map[string]int{}, map[string]int{}
	for _, e := range evs {
		if e.event == "take" {
			seen[e.arg]++
			per[e.id]++
			sum.queueItems++
		}
	}
	sum.queueOnce = len(seen) == items && sum.queueItems == items
	for i := 1; i <= consumers; i++ {
		id := "w" + strconv.Itoa(i)
		sum.queueTakers = append(sum.queueTakers, fmt.Sprintf("%s %d", id, per[id]))
	}
	left, err := q.Len(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "    taken: %s; left in queue: %d\n\n", strings.Join(sum.queueTakers, ", "), left)
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// Summary prints the findings, and the demo's total time, and fails the
// demo if a promise was broken.
func (d *Run) Summary(sum *Findings, total time.Duration) error {
	sum.total = total
	w := d.Out
	fmt.Fprintln(w, "summary")
	fmt.Fprintf(w, "  overlaps: %d\n", sum.overlaps)
	fmt.Fprintf(w, "  acquisitions: %d in %v\n", sum.acquisitions, sum.lockTime.Round(time.Millisecond))
	fifo := "FIFO: tokens strictly increase in grant order"
	if !sum.fifo {
		fifo = "NOT FIFO: a later arrival was served first"
	}
	fmt.Fprintf(w, "  acquisition order (%s):\n", fifo)
	for _, l := range orderLines(sum.order) {
		fmt.Fprintln(w, l)
	}
	if sum.watchCounted && sum.releases > 0 {
		fmt.Fprintf(w, "  watch notifications per release: %.2f (%d notifications, %d releases)\n",
			float64(sum.watchEvents)/float64(sum.releases), sum.watchEvents, sum.releases)
	} else {
		fmt.Fprintln(w, "  watch notifications per release: not counted by this store")
	}
	fmt.Fprintf(w, "  leader failover: %v (%s killed with SIGKILL, %s took over; session TTL %v)\n",
		sum.failover.Round(time.Millisecond), sum.firstLeader, sum.nextLeader, d.TTL)
	fmt.Fprintf(w, "  double barrier: %d entered together (within %v): %s; left together: %s\n",
		sum.barrierN, sum.enterSpread.Round(time.Millisecond), yesNo(sum.enteredTogeth), yesNo(sum.leftTogether))
	fmt.Fprintf(w, "  queue: %d items taken, each exactly once: %s\n", sum.queueItems, yesNo(sum.queueOnce))
	fmt.Fprintf(w, "  total time: %v\n", sum.total.Round(100*time.Millisecond))
	var broken []string
	if sum.overlaps > 0 {
		broken = append(broken, "mutual exclusion")
	}
	if !sum.fifo {
		broken = append(broken, "FIFO order")
	}
	if !sum.enteredTogeth || !sum.leftTogether {
		broken = append(broken, "double barrier")
	}
	if !sum.queueOnce {
		broken = append(broken, "queue delivery")
	}
	if len(broken) > 0 {
		return fmt.Errorf("demo: broken: %s", strings.Join(broken, ", "))
	}
	return nil
}

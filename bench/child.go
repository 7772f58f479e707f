package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/batonhq/baton/internal/bench"
)

// Each store runs in a process of its own, so that one store's clients
// (and the in-process etcd server) leave nothing behind that slows the
// next: the parent re-executes itself with -child STORE.

// childLine is one line a child writes: a result or a note.
type childLine struct {
	Result *bench.Result `json:"result,omitempty"`
	Note   string        `json:"note,omitempty"`
}

// runInChild runs store st in a child process and collects its lines.
func runInChild(ctx context.Context, p plan, base, st string) ([]bench.Result, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	out := filepath.Join(base, st+".jsonl")
	args := []string{"-child", st, "-out", out, "-duration", p.duration.String(), "-sweep-duration", p.sweepDur.String(),
		"-sweep", join(p.sweep), "-repeats", fmt.Sprint(p.repeats), "-herd", join(p.herd)}
	if p.batonBin != "" {
		args = append(args, "-baton", p.batonBin)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	runErr := cmd.Run()
	f, err := os.Open(out)
	if err != nil {
		if runErr != nil {
			return nil, nil, runErr
		}
		return nil, nil, err
	}
	defer f.Close()
	var rs []bench.Result
	var notes []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l childLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue
		}
		if l.Result != nil {
			rs = append(rs, *l.Result)
		}
		if l.Note != "" {
			notes = append(notes, l.Note)
		}
	}
	return rs, notes, runErr
}

// runChild runs p.child and writes its results and notes to p.out.
func runChild(ctx context.Context, p plan) error {
	f, err := os.Create(p.out)
	if err != nil {
		return err
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	base, err := os.MkdirTemp("", "baton-bench-"+p.child+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	emit := func(r bench.Result) {
		_ = enc.Encode(childLine{Result: &r})
		_ = r.WriteJSON(os.Stderr)
	}
	notes, err := runStore(ctx, p, base, p.child, emit)
	for _, n := range notes {
		_ = enc.Encode(childLine{Note: strings.TrimSpace(n)})
	}
	return err
}

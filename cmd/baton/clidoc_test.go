package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updateCLIDoc = flag.Bool("update", false, "rewrite docs/cli.md's help blocks from baton's own -h (TestCLIDoc)")

// cliDoc is the reference of the command line, whose help blocks are
// baton's own -h texts.
const cliDoc = "../../docs/cli.md"

// helpBlock is a help block in cliDoc: an HTML comment naming the command
// line whose output the text block below it holds.
var helpBlock = regexp.MustCompile("(?m)^<!-- (baton [^>]*?) -->\n```text\n((?s:.*?))```\n")

// helpOutput is what `baton ARGS` prints on stdout with no BATON_*
// variables set, less the NAME rule that closes every command's help
// (docs/names.md has it, and the overview prints it once).
func helpOutput(t *testing.T, args []string) string {
	t.Helper()
	var out bytes.Buffer
	m := &Main{Stdout: &out, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	if err := m.Run(context.Background(), args); err != nil && !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("baton %s: %v", strings.Join(args, " "), err)
	}
	s := out.String()
	if len(args) > 1 {
		s = strings.TrimSuffix(s, "\n"+nameRule)
	}
	return s
}

// helpCommands are the command lines whose help cliDoc must show: the
// overview, every command and every verb.
func helpCommands() []string {
	lines := []string{"baton help"}
	for _, c := range commands {
		if c.hidden || c.name == "version" { // version -h prints the version
			continue
		}
		lines = append(lines, "baton "+c.name+" -h")
		if c.name == "completion" {
			continue // its verbs are shells
		}
		for _, v := range strings.Fields(completionVerbs[c.name]) {
			lines = append(lines, "baton "+c.name+" "+v+" -h")
		}
	}
	return lines
}

// TestCLIDoc keeps docs/cli.md in step with baton's help: each help block
// there is `baton … -h` verbatim, and every command and verb has one.
// After changing a command's flags or help, regenerate the blocks with
//
//	cd cmd/baton && go test -run TestCLIDoc -update
//
// and review the diff: a new command or verb gets its block at the end of
// the file, to be moved under its heading and described.
func TestCLIDoc(t *testing.T) {
	doc, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	const regen = "regenerate with: cd cmd/baton && go test -run TestCLIDoc -update (then review the diff)"
	var stale, unknown, seen []string
	want := helpCommands()
	out := helpBlock.ReplaceAllStringFunc(string(doc), func(block string) string {
		m := helpBlock.FindStringSubmatch(block)
		line, got := m[1], m[2]
		seen = append(seen, line)
		if !slices.Contains(want, line) {
			unknown = append(unknown, line)
			return block
		}
		text := helpOutput(t, strings.Fields(line)[1:])
		if text != got {
			stale = append(stale, line)
		}
		return fmt.Sprintf("<!-- %s -->\n```text\n%s```\n", line, text)
	})
	var missing []string
	for _, line := range want {
		if !slices.Contains(seen, line) {
			missing = append(missing, line)
		}
	}
	if *updateCLIDoc {
		if len(missing) > 0 {
			out += "\n## Not described yet\n"
			for _, line := range missing {
				out += fmt.Sprintf("\n<!-- %s -->\n```text\n%s```\n", line, helpOutput(t, strings.Fields(line)[1:]))
			}
		}
		if out != string(doc) {
			if err := os.WriteFile(cliDoc, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote %s: %d blocks changed, %d added", cliDoc, len(stale), len(missing))
		}
		if len(unknown) > 0 {
			t.Errorf("%s has help blocks for commands baton does not have: %q; remove them", cliDoc, unknown)
		}
		return
	}
	if len(stale) > 0 {
		t.Errorf("%s differs from baton's help for %q; %s", cliDoc, stale, regen)
	}
	if len(missing) > 0 {
		t.Errorf("%s has no help block for %q; %s", cliDoc, missing, regen)
	}
	if len(unknown) > 0 {
		t.Errorf("%s has help blocks for commands baton does not have: %q; remove them", cliDoc, unknown)
	}
}

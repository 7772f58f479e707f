package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/batonhq/baton/internal/testenv"
)

// repoRoot is the repository's root, seen from this package.
const repoRoot = "../.."

// fence is one fenced block of a Markdown file.
type fence struct {
	line int    // of the opening fence, from 1
	info string // the info string: "sh", "sh no-run: why", "text output"…
	body string
}

// lang is the first word of the info string.
func (f fence) lang() string {
	lang, _, _ := strings.Cut(f.info, " ")
	return lang
}

func (f fence) shell() bool {
	switch f.lang() {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// noRun returns the reason a shell block gives for not being run.
func (f fence) noRun() (reason string, ok bool) {
	_, rest, _ := strings.Cut(f.info, " ")
	reason, ok = strings.CutPrefix(strings.TrimSpace(rest), "no-run:")
	return strings.TrimSpace(reason), ok
}

func (f fence) output() bool { return f.info == "text output" }

// fences returns the fenced blocks of a Markdown file (``` fences only).
func fences(t *testing.T, path string) []fence {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []fence
	var cur *fence
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &fence{line: n, info: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
	}
	if cur != nil {
		t.Errorf("%s:%d: a fenced block is not closed", path, cur.line)
	}
	return out
}

// docFiles are the files whose blocks TestDocs checks: the README and
// every docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, files...)
}

// docStep is a shell block to run and the output it promises.
type docStep struct {
	fence
	want string // the "text output" block after it, if any
}

// docSteps checks the blocks of one file against the rules of
// docs/README.md and returns the shell blocks to run.
func docSteps(t *testing.T, path string) []docStep {
	t.Helper()
	var steps []docStep
	prevRun := false // the block before this one is a shell block to run
	for _, f := range fences(t, path) {
		at := fmt.Sprintf("%s:%d", path, f.line)
		switch {
		case f.info == "":
			t.Errorf("%s: a fenced block without an info string; say what it is (sh, go, text…; docs/README.md)", at)
		case f.output():
			if !prevRun {
				t.Errorf("%s: a text output block must follow the shell block that prints it", at)
			} else {
				steps[len(steps)-1].want = f.body
			}
		case f.shell():
			if reason, ok := f.noRun(); ok {
				if reason == "" {
					t.Errorf("%s: no-run needs a reason: ```sh no-run: why", at)
				}
			} else if f.info != f.lang() {
				t.Errorf("%s: info string %q: a shell block is run (```sh) or says why not (```sh no-run: why)", at, f.info)
			} else {
				steps = append(steps, docStep{fence: f})
			}
		}
		prevRun = f.shell() && !strings.Contains(f.info, "no-run")
	}
	return steps
}

// TestDocs runs the shell blocks of README.md and docs/*.md, as
// docs/README.md describes: each file's blocks in order in one bash, in
// network and PID namespaces of its own, each block's output checked
// against the "text output" block after it. It also checks that every
// block says what it is, and that the README's Go is the root package's
// Example.
func TestDocs(t *testing.T) {
	checkReadmeGo(t)

	scripts := t.TempDir()
	var names []string
	for _, path := range docFiles(t) {
		steps := docSteps(t, path)
		if len(steps) == 0 {
			continue
		}
		name := scriptName(path)
		if err := os.WriteFile(filepath.Join(scripts, name+".txtar"), docScript(path, steps), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if t.Failed() {
		return
	}
	testenv.Require(t, "network and PID namespaces (unshare and ip, as root)",
		exec.Command("unshare", "--net", "--pid", "--fork", "--mount-proc", "ip", "link", "set", "lo", "up").Run())

	gocache, gomodcache := goEnv(t, "GOCACHE"), goEnv(t, "GOMODCACHE")
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: scripts,
		Setup: func(e *testscript.Env) error {
			home, _ := os.UserHomeDir()
			e.Setenv("HOME", home)
			e.Setenv("GOCACHE", gocache)
			e.Setenv("GOMODCACHE", gomodcache)
			e.Setenv("GOPATH", filepath.Join(e.WorkDir, "gopath")) // go install's bin
			e.Setenv("GOPROXY", "off")                             // the namespace has no network
			e.Setenv("GOTOOLCHAIN", "local")
			e.Setenv("REPO", root)
			// The other files use the baton this test built; the
			// README's blocks install their own.
			e.Setenv("BATONPATH", filepath.Dir(batonBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			return os.Mkdir(filepath.Join(e.WorkDir, "scratch"), 0o755)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"docout": cmdDocout,
		},
	})
	if len(names) == 0 {
		t.Fatal("no runnable shell block in README.md or docs/")
	}
}

// scriptName names the script of the doc at path, and so its subtest:
// "README.md" for the README, "docs-clusters.md" for docs/clusters.md.
func scriptName(path string) string {
	if filepath.Base(filepath.Dir(path)) == "docs" {
		return "docs-" + filepath.Base(path)
	}
	return filepath.Base(path)
}

// docScript is the testscript that runs steps, the runnable blocks of the
// file at path: a driver that sources each block in one bash under
// `set -e` (as if pasted into one terminal), in namespaces where the
// default ports are free and whatever the blocks leave running dies with
// the driver; then docout checks each block's output.
func docScript(path string, steps []docStep) []byte {
	name := scriptName(path)
	readme := name == "README.md"
	var driver strings.Builder
	driver.WriteString("# Generated by TestDocs from " + name + ".\n" +
		"trap 'at=$(cat \"$WORK/at\"); [ \"$at\" = done ] || { echo \"" + name + ":$at: this block failed (one that cannot run here says why in its info string, sh no-run: REASON; see docs/README.md); it printed:\"; cat \"$WORK/out\"; } >&2' EXIT\n" +
		"set -e\nip link set lo up\n")
	if readme {
		driver.WriteString("cd \"$REPO\"\n")
	} else {
		driver.WriteString("export PATH=\"$BATONPATH\"\ncd \"$WORK/scratch\"\n")
	}
	ar := &txtar.Archive{Comment: []byte(fmt.Sprintf(
		"# %s: its shell blocks in order, in one bash (generated by TestDocs).\n"+
			"exec timeout -k 10s 10m unshare --net --pid --fork --kill-child --mount-proc bash $WORK/driver.sh\n"+
			"docout %s %d\n", name, name, len(steps)))}
	for i, s := range steps {
		n := strconv.Itoa(i + 1)
		fmt.Fprintf(&driver, "echo %d >\"$WORK/at\"; ln -sf \"$WORK/block%s.out\" \"$WORK/out\"\n", s.line, n)
		fmt.Fprintf(&driver, ". \"$WORK/block%s.sh\" >\"$WORK/block%s.out\" 2>&1 </dev/null\n", n, n)
		ar.Files = append(ar.Files, txtar.File{Name: "block" + n + ".sh", Data: []byte(s.body)})
		if s.want != "" {
			ar.Files = append(ar.Files, txtar.File{Name: "block" + n + ".want", Data: []byte(s.want)})
		}
	}
	driver.WriteString("echo done >\"$WORK/at\"\n")
	ar.Files = append(ar.Files, txtar.File{Name: "driver.sh", Data: []byte(driver.String())})
	return txtar.Format(ar)
}

// cmdDocout is `docout FILE N`: every one of the N blocks ran, and each
// printed what its "text output" block promises.
func cmdDocout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: docout FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	if at := strings.TrimSpace(ts.ReadFile("at")); at != "done" {
		ts.Fatalf("%s: the block at line %s did not finish (see its output above)", args[0], at)
	}
	for i := 1; i <= n; i++ {
		want := ts.MkAbs(fmt.Sprintf("block%d.want", i))
		if _, err := os.Stat(want); errors.Is(err, os.ErrNotExist) {
			continue
		}
		got := ts.ReadFile(fmt.Sprintf("block%d.out", i))
		if missing := matchOutput(got, ts.ReadFile(want)); missing != "" {
			ts.Logf("block %d printed:\n%s", i, got)
			ts.Fatalf("%s: block %d's output has no line matching %q after the lines matched before it", args[0], i, missing)
		}
	}
}

// matchOutput returns the first line of want that does not match a line
// of got after the lines matched before it, or "" if every line does. In
// want, "…" matches any text within a line, the spaces around it
// included; runs of white space count as one space.
func matchOutput(got, want string) string {
	lines := strings.Split(got, "\n")
	for _, w := range strings.Split(strings.TrimRight(want, "\n"), "\n") {
		var re strings.Builder
		re.WriteString("^")
		for i, part := range ellipsis.Split(squeeze(w), -1) {
			if i > 0 {
				re.WriteString(".*")
			}
			re.WriteString(regexp.QuoteMeta(part))
		}
		re.WriteString("$")
		pat := regexp.MustCompile(re.String())
		for {
			if len(lines) == 0 {
				return w
			}
			l := squeeze(lines[0])
			lines = lines[1:]
			if pat.MatchString(l) {
				break
			}
		}
	}
	return ""
}

var (
	spaces   = regexp.MustCompile(`\s+`)
	ellipsis = regexp.MustCompile(`\s*…\s*`) // with the spaces around it
)

func squeeze(s string) string { return strings.TrimSpace(spaces.ReplaceAllString(s, " ")) }

// goEnv is `go env NAME`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// checkReadmeGo checks that the README's Go block is the root package's
// Example, between its "README:" and "end README" comments, so that it
// compiles and runs (go test ./ in the root runs it).
func checkReadmeGo(t *testing.T) {
	t.Helper()
	const example = repoRoot + "/example_readme_test.go"
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "\t// README:\n")
	body, _, ok2 := strings.Cut(body, "\t// end README\n")
	if !ok || !ok2 {
		t.Fatalf("%s: no \"// README:\" … \"// end README\" region", example)
	}
	var want strings.Builder
	for _, l := range strings.SplitAfter(body, "\n") {
		want.WriteString(strings.TrimPrefix(l, "\t"))
	}
	var goBlocks []string
	for _, f := range fences(t, filepath.Join(repoRoot, "README.md")) {
		if f.lang() == "go" {
			goBlocks = append(goBlocks, f.body)
		}
	}
	if len(goBlocks) != 1 {
		t.Fatalf("README.md has %d Go blocks; want one, the library example", len(goBlocks))
	}
	if goBlocks[0] != want.String() {
		t.Errorf("README.md's Go block differs from %s's Example (between README: and end README); make them the same.\nREADME:\n%s\nExample:\n%s", example, goBlocks[0], want.String())
	}
}

// mdLink is a Markdown link's target: a path, an anchor, or both.
var mdLink = regexp.MustCompile(`\]\(([^)\s]*)\)`)

// TestDocLinks checks that every relative link in README.md and docs/*.md
// names a file that exists and, with #anchor, a heading in it (GitHub's
// anchors: lower case, punctuation dropped, spaces as hyphens).
func TestDocLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	headings := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		anchors[path] = a
		data, err := os.ReadFile(path)
		if err != nil {
			return a
		}
		inFence := false
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "```") {
				inFence = !inFence
			}
			if inFence || !strings.HasPrefix(l, "#") {
				continue
			}
			a[slug(strings.TrimLeft(l, "# "))] = true
		}
		return a
	}
	for _, doc := range docFiles(t) {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || target == "" {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: no such file", doc, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !headings(path)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with that anchor", doc, target, path)
			}
		}
	}
}

var notSlug = regexp.MustCompile(`[^\p{L}\p{N} _-]`)

// slug is GitHub's anchor for a heading's text.
func slug(heading string) string {
	return strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), ""), " ", "-")
}

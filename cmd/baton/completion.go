package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// completionVerbs are the verbs of the commands that take one.
var completionVerbs = map[string]string{
	"serve":      "members",
	"postgres":   "init",
	"queue":      "put take len",
	"barrier":    "set wait remove double",
	"counter":    "get set add",
	"permit":     "list extend release",
	"completion": "bash zsh fish",
}

// completionFlags returns the flags command takes, read from its own -h
// (and each of its verbs'), so completion never drifts from the flags:
// "--name" for a long flag, "-x" for a one-letter one.
func (m *Main) completionFlags(command string) []string {
	runs := [][]string{{command, "-h"}}
	for _, v := range strings.Fields(completionVerbs[command]) {
		runs = append(runs, []string{command, v, "-h"})
	}
	var flags []string
	for _, args := range runs {
		var out bytes.Buffer
		h := &Main{Stdout: &out, Stderr: io.Discard, Getenv: m.Getenv}
		_ = h.Run(context.Background(), args)
		for _, line := range strings.Split(out.String(), "\n") {
			// PrintDefaults: "  -name type" or "  -v\tusage".
			if !strings.HasPrefix(line, "  -") {
				continue
			}
			name := strings.Fields(line[3:])[0]
			f := "--" + name
			if len(name) == 1 {
				f = "-" + name
			}
			if !slices.Contains(flags, f) {
				flags = append(flags, f)
			}
		}
	}
	return append(flags, "--help")
}

// completion is `baton completion bash|zsh|fish`: a script that completes
// baton's commands, their verbs and each command's own flags in that shell.
func (m *Main) completion(_ context.Context, args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprintf(m.Stdout, "usage: baton completion bash|zsh|fish\n\n"+
			"Prints a script that completes baton's commands, verbs and flags:\n"+
			"  source <(baton completion bash)     in ~/.bashrc\n"+
			"  source <(baton completion zsh)      in ~/.zshrc\n"+
			"  baton completion fish | source      in ~/.config/fish/config.fish\n")
		return nil
	}
	if len(args) != 1 {
		return usageErr("completion: want one of bash, zsh, fish (e.g. source <(baton completion bash))")
	}
	var names []string
	for _, c := range commands {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	cmds := strings.Join(names, " ")
	flagsOf := func(c string) string {
		if c == "completion" || c == "version" {
			return "--help"
		}
		return strings.Join(m.completionFlags(c), " ")
	}
	var b strings.Builder
	switch args[0] {
	case "bash", "zsh":
		if args[0] == "zsh" {
			b.WriteString("autoload -U +X bashcompinit && bashcompinit\n")
		}
		fmt.Fprintf(&b, `_baton() {
  local cur=${COMP_WORDS[COMP_CWORD]} words="" verbs="" flags=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="%s help --help --version"
  else
    case "${COMP_WORDS[1]}" in
`, cmds)
		for _, c := range names {
			fmt.Fprintf(&b, "    %s) verbs=%q; flags=%q ;;\n", c, completionVerbs[c], flagsOf(c))
		}
		fmt.Fprintf(&b, `    help) verbs=%q ;;
    esac
    [ "$COMP_CWORD" -eq 2 ] && words=$verbs
    case "$cur" in -*) words=$flags ;; esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _baton baton
`, cmds)
	case "fish":
		fmt.Fprintf(&b, "complete -c baton -n __fish_use_subcommand -f -a %q\n", cmds+" help")
		for _, c := range names {
			if v := completionVerbs[c]; v != "" {
				fmt.Fprintf(&b, "complete -c baton -n '__fish_seen_subcommand_from %s' -f -a %q\n", c, v)
			}
			for _, f := range strings.Fields(flagsOf(c)) {
				opt := "-l " + f[2:]
				if !strings.HasPrefix(f, "--") {
					opt = "-s " + f[1:]
				}
				fmt.Fprintf(&b, "complete -c baton -n '__fish_seen_subcommand_from %s' %s\n", c, opt)
			}
		}
	default:
		return usageErr("completion: unknown shell %q: want bash, zsh or fish", args[0])
	}
	_, err := fmt.Fprint(m.Stdout, b.String())
	return err
}

package main

import (
	"context"
	"fmt"
	"strings"
)

// completionFlags are the flags offered after a command; each command
// rejects those it does not take.
const completionFlags = "--store --dial-timeout --ttl --timeout --try --shared --retry -v --kill-after --lock-delay --on-revoke --int32 --lock --tls-ca --tls-cert --tls-key " +
	"--value --observe --requeue --json -n --raw -0 --data-dir --listen --help"

// completionVerbs are the verbs of the commands that take one.
var completionVerbs = map[string]string{
	"queue":      "put take len",
	"barrier":    "set wait remove double",
	"counter":    "get set add",
	"completion": "bash zsh fish",
}

// completion is `baton completion bash|zsh|fish`: a script that completes
// baton's commands, verbs and flags in that shell.
func (m *Main) completion(_ context.Context, args []string) error {
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
	var b strings.Builder
	switch args[0] {
	case "bash", "zsh":
		if args[0] == "zsh" {
			b.WriteString("autoload -U +X bashcompinit && bashcompinit\n")
		}
		fmt.Fprintf(&b, `_baton() {
  local cur=${COMP_WORDS[COMP_CWORD]} words=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    words="%s help --help --version"
  else
    case "${COMP_WORDS[1]}" in
`, cmds)
		for _, c := range []string{"queue", "barrier", "counter", "completion"} {
			fmt.Fprintf(&b, "    %s) [ \"$COMP_CWORD\" -eq 2 ] && words=%q ;;\n", c, completionVerbs[c])
		}
		fmt.Fprintf(&b, `    esac
    case "$cur" in -*) words=%q ;; esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _baton baton
`, completionFlags)
	case "fish":
		fmt.Fprintf(&b, "complete -c baton -n __fish_use_subcommand -f -a %q\n", cmds+" help")
		for _, c := range []string{"queue", "barrier", "counter", "completion"} {
			fmt.Fprintf(&b, "complete -c baton -n '__fish_seen_subcommand_from %s' -f -a %q\n", c, completionVerbs[c])
		}
		for _, f := range strings.Fields(completionFlags) {
			if strings.HasPrefix(f, "--") {
				fmt.Fprintf(&b, "complete -c baton -l %s\n", f[2:])
			} else {
				fmt.Fprintf(&b, "complete -c baton -o %s\n", f[1:])
			}
		}
	default:
		return usageErr("completion: unknown shell %q: want bash, zsh or fish", args[0])
	}
	_, err := fmt.Fprint(m.Stdout, b.String())
	return err
}

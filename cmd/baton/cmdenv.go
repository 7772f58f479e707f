package main

import (
	"strings"

	"github.com/batonhq/baton/internal/store"
)

// secretVars hold secrets of baton's own, read from its environment: the
// root password of `serve --auth` and the token of `ui --admin`.
var secretVars = []string{"BATON_AUTH_PASSWORD", "BATON_UI_TOKEN"}

// passSecretsUsage is the help of --pass-secrets, on every command that
// runs a CMD.
const passSecretsUsage = "give CMD the secrets in baton's environment as they are: $BATON_STORE with its password, " +
	"$BATON_AUTH_PASSWORD, $BATON_UI_TOKEN (by default CMD gets $BATON_STORE without its password, and neither of the others)"

// cmdEnviron is the environment CMD inherits from baton's, environ:
// without the secrets baton read from it, unless passSecrets. The README
// advises putting a store's password in $BATON_STORE rather than in argv;
// that is no reason to hand it to every CMD, which may be a script that
// logs its environment or a program run on behalf of someone else.
// $BATON_STORE stays, without its password, so that CMD still knows which
// store it runs under; one that cannot be parsed, whose secrets cannot be
// told apart, is left out.
func cmdEnviron(environ []string, passSecrets bool) []string {
	if passSecrets {
		return environ
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case isSecretVar(k):
			continue
		case k == "BATON_STORE" && v != "":
			u, err := store.Parse(v)
			if err != nil {
				continue
			}
			if u.Password != "" {
				u.Password = ""
				kv = k + "=" + u.Unredacted()
			}
		}
		out = append(out, kv)
	}
	return out
}

func isSecretVar(k string) bool {
	for _, s := range secretVars {
		if k == s {
			return true
		}
	}
	return false
}

package telemetry

import "strings"

// DefaultNameLabel is the name attribute of a recipe name when no
// NameLabel is given: the name with its ids and sequence numbers replaced
// by "#", so that names made per job, tenant or request do not each make a
// new series. A token (a run of letters and digits between other
// characters) made of hex digits only and holding at least one decimal
// digit is an id and becomes "#"; in any other token each run of decimal
// digits becomes "#"; ids joined by separators (a UUID) collapse into one
// "#". For example "/jobs/2024-06-01/report", "orders/5f2b9c1e-…" and
// "worker-17" become "/jobs/#/report", "orders/#" and "worker-#".
func DefaultNameLabel(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	lastID := false // the output ends with an id "#" followed only by separators
	sepStart := 0   // where the separators after the last token start in b
	i := 0
	for i < len(name) {
		if !alnum(name[i]) {
			b.WriteByte(name[i])
			i++
			continue
		}
		j := i
		for j < len(name) && alnum(name[j]) {
			j++
		}
		tok := name[i:j]
		if isID(tok) {
			if lastID && onlyIDSeps(b.String()[sepStart:]) {
				// "#-" + id: drop the separators, keep one "#".
				s := b.String()[:sepStart]
				b.Reset()
				b.WriteString(s)
			} else {
				b.WriteByte('#')
			}
			lastID = true
		} else {
			writeDigitless(&b, tok)
			lastID = false
		}
		sepStart = b.Len()
		i = j
	}
	return b.String()
}

func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isID: only hex digits, at least one decimal digit.
func isID(tok string) bool {
	digit := false
	for k := 0; k < len(tok); k++ {
		c := tok[k]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return digit
}

// onlyIDSeps: the separators between two parts of one id ("-", "_", ".").
func onlyIDSeps(s string) bool {
	if s == "" {
		return false
	}
	for k := 0; k < len(s); k++ {
		if s[k] != '-' && s[k] != '_' && s[k] != '.' {
			return false
		}
	}
	return true
}

// writeDigitless writes tok with each run of decimal digits as "#".
func writeDigitless(b *strings.Builder, tok string) {
	inRun := false
	for k := 0; k < len(tok); k++ {
		c := tok[k]
		if c >= '0' && c <= '9' {
			if !inRun {
				b.WriteByte('#')
			}
			inRun = true
			continue
		}
		inRun = false
		b.WriteByte(c)
	}
}

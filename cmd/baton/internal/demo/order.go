package demo

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The acquisition order is printed wrapped to orderWidth columns, and
// elided in the middle past orderShown grants (`--rounds 200` makes a
// thousand).
const (
	orderWidth  = 78
	orderShown  = 64
	orderHead   = 40
	orderIndent = "    "
)

// orderLines is the acquisition order as printed under its heading: the
// workers' ids in grant order, wrapped, with the middle of a long order
// left out ("… 936 more …").
func orderLines(order []string) []string {
	words := order
	if len(order) > orderShown {
		tail := orderShown - orderHead
		words = append(append(append([]string{}, order[:orderHead]...),
			fmt.Sprintf("… %d more …", len(order)-orderShown)), order[len(order)-tail:]...)
	}
	var lines []string
	var b strings.Builder
	for _, w := range words {
		if b.Len() > 0 && len(orderIndent)+utf8.RuneCountInString(b.String())+1+utf8.RuneCountInString(w) > orderWidth {
			lines = append(lines, orderIndent+b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	if b.Len() > 0 {
		lines = append(lines, orderIndent+b.String())
	}
	return lines
}

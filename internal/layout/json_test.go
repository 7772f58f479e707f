package layout

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDescribeEmptyJSON: a name with nothing on it reports its recipes
// and its nodes as empty lists in JSON, not one null and one [], so a
// script can iterate both without a check.
func TestDescribeEmptyJSON(t *testing.T) {
	b, err := json.Marshal(Describe(Listing{Name: "/empty"}, now))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"recipes":[]`) || !strings.Contains(s, `"nodes":[]`) {
		t.Fatalf("empty name's report: %s; want \"recipes\":[] and \"nodes\":[]", s)
	}
}

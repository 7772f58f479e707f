package telemetry

import "testing"

func TestDefaultNameLabel(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"nightly-report", "nightly-report"},
		{"/jobs/2024-06-01/report", "/jobs/#/report"},
		{"orders/5f2b9c1e-8a7d-4c3b-9e21-0d6f7a8b9c10", "orders/#"},
		{"worker-17", "worker-#"},
		{"/locks/tenant42/db", "/locks/tenant#/db"},
		{"_c_5f2b9c1e-8a7d-4c3b-9e21-0d6f7a8b9c10-lock-0000000012", "_c_#-lock-#"},
		{"redis:{app}:lock", "redis:{app}:lock"},
		{"", ""},
		{"a/b/c", "a/b/c"},
		{"deadbeef", "deadbeef"}, // no decimal digit: a word
		{"cafe1234", "#"},
		{"v2/api", "v#/api"},
	} {
		if got := DefaultNameLabel(c.in); got != c.want {
			t.Errorf("DefaultNameLabel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzDefaultNameLabel: the label has no decimal digit outside ids'
// replacements, and labelling is idempotent.
func FuzzDefaultNameLabel(f *testing.F) {
	f.Add("/jobs/2024-06-01/report")
	f.Add("worker-17")
	f.Fuzz(func(t *testing.T, name string) {
		got := DefaultNameLabel(name)
		for i := 0; i < len(got); i++ {
			if got[i] >= '0' && got[i] <= '9' {
				t.Fatalf("DefaultNameLabel(%q) = %q keeps a digit", name, got)
			}
		}
		if again := DefaultNameLabel(got); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", name, got, again)
		}
	})
}

package redact

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h:1/2":            "redis://u:xxxxx@h:1/2",
		"redis://alice:secret@h:6379/2": "redis://alice:xxxxx@h:6379/2",
		"rediss://:secret@h:6380":       "rediss://:xxxxx@h:6380",
		"redis://a:sec ret@h:bad":       "redis://a:xxxxx@h:bad",
		"zk://u:pw@a,b/c":               "zk://u:xxxxx@a,b/c",
		"zks://u:p@w@h":                 "zks://u:xxxxx@h",
		"etcd://root:pw@h:1":            "etcd://root:xxxxx@h:1",
		"etcds://root:pw@h":             "etcds://root:xxxxx@h",
		"redis://:p/w@x@h":              "redis://:xxxxx@h",
		"redis://user@h":                "redis://user@h",
		"etcd://h:1":                    "etcd://h:1",
		"not a url u:pw@host":           "not a url u:pw@host",
		"redis-sentinel://u:pw@a,b/m?sentinel_user=s&sentinel_password=x%26y": "redis-sentinel://u:xxxxx@a,b/m?sentinel_user=s&sentinel_password=xxxxx",
		"redis-sentinel://a/m?sentinel_password=pw&sentinel_password":         "redis-sentinel://a/m?sentinel_password=xxxxx&sentinel_password",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestError(t *testing.T) {
	base := fmt.Errorf("dial as alice:hunter2: %w", context.DeadlineExceeded)
	err := Error(base, "", "hunter2")
	if got := err.Error(); got != "dial as alice:xxxxx: context deadline exceeded" {
		t.Errorf("message %q", got)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("errors.Is does not see the wrapped error")
	}
	if Error(base, "other") != base || Error(nil, "x") != nil {
		t.Error("an error without the secret, or nil, is not returned as it is")
	}
}

package zktest

import (
	"strings"
	"testing"
)

func TestStartServes(t *testing.T) {
	s := Start(t)
	out, err := s.FourLetter("ruok")
	if err != nil || out != "imok" {
		t.Fatalf("ruok = %q, %v", out, err)
	}
	m, err := s.Mntr()
	if err != nil {
		t.Fatal(err)
	}
	if m["zk_server_state"] != "standalone" {
		t.Fatalf("zk_server_state = %q", m["zk_server_state"])
	}
	conf, err := s.FourLetter("conf")
	if err != nil || !strings.Contains(conf, "tickTime=100") {
		t.Fatalf("conf = %q, %v", conf, err)
	}
	s.Stop()
	if _, err := s.FourLetter("ruok"); err == nil {
		t.Fatal("server still answers after Stop")
	}
}

package zkclient

import (
	"reflect"
	"testing"
)

func TestParseConnect(t *testing.T) {
	for _, tc := range []struct {
		in      string
		servers []string
		chroot  string
		bad     bool
	}{
		{in: "127.0.0.1:2181", servers: []string{"127.0.0.1:2181"}},
		{in: "a:1,b:2,c:3/kafka/prod", servers: []string{"a:1", "b:2", "c:3"}, chroot: "/kafka/prod"},
		{in: "a:1/kafka/", servers: []string{"a:1"}, chroot: "/kafka"},
		{in: "a:1/", servers: []string{"a:1"}},
		{in: " a:1 , b:2 ", servers: []string{"a:1", "b:2"}},
		{in: "", bad: true},
		{in: "/chroot", bad: true},
		{in: "a:1/x//y", bad: true},
	} {
		servers, chroot, err := ParseConnect(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q accepted", tc.in)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(servers, tc.servers) || chroot != tc.chroot {
			t.Errorf("%q: %v %q %v", tc.in, servers, chroot, err)
		}
	}
}

func TestChrootPaths(t *testing.T) {
	c := &Client{chroot: "/kafka"}
	if c.abs("/brokers/ids") != "/kafka/brokers/ids" || c.abs("/") != "/kafka" {
		t.Fatal(c.abs("/brokers/ids"), c.abs("/"))
	}
	if c.rel("/kafka/isr_change_notification/isr_change_0000000001") != "/isr_change_notification/isr_change_0000000001" || c.rel("/kafka") != "/" {
		t.Fatal(c.rel("/kafka/x"))
	}
	n := &Client{}
	if n.abs("/a") != "/a" || n.rel("/a") != "/a" {
		t.Fatal("no chroot")
	}
}

package broker

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kbroker/kbroker/"

// importRules is the must-not-import column of docs/ARCHITECTURE.md: a
// package (and every package below it) must not depend, directly or
// transitively, on any of the listed packages or the packages below them
// ("std:" marks a standard library package, "ext:" a module outside this
// one and every package below it).
// The direction is api → coordhost → replica → storage, with network and
// config below api and importing none of the broker's rooms.
var importRules = []struct {
	pkg       string
	forbidden []string
}{
	{"protocol", []string{"storage", "broker", "controller", "coordinator"}},
	{"storage", []string{"broker", "controller", "coordinator", "std:net"}},
	{"controller", []string{"broker"}},
	{"coordinator", []string{"broker", "storage"}},
	{"broker/config", []string{"broker/network", "broker/api", "broker/coordhost", "broker/replica", "storage", "coordinator"}},
	{"broker/network", []string{"broker/api", "broker/coordhost", "broker/replica", "storage", "coordinator", "controller"}},
	{"broker/replica/isr", []string{"broker", "storage", "controller", "coordinator", "std:net"}},
	{"broker/replica", []string{"broker/api", "broker/coordhost", "broker/network", "coordinator"}},
	{"broker/coordhost", []string{"broker/api", "broker/network", "ext:github.com/prometheus"}},
	{"broker/metacache", []string{"broker", "storage", "controller", "coordinator"}},
	{"broker/quota", []string{"broker/api", "broker/coordhost", "broker/replica", "storage", "coordinator", "controller", "ext:github.com/prometheus"}},
	// The authorizer is pure: ACLs and a request in, a decision out.
	{"broker/authz", []string{"broker", "storage", "controller", "coordinator", "protocol", "std:net", "ext:github.com"}},
	// The rooms know no metrics library: broker/metrics reads their state
	// and wraps the network's Handler.
	{"broker/config", []string{"ext:github.com/prometheus"}},
	{"broker/network", []string{"ext:github.com/prometheus"}},
	{"broker/replica", []string{"ext:github.com/prometheus"}},
	{"broker/api", []string{"ext:github.com/prometheus", "broker/metrics", "broker/httpserver"}},
	{"broker/metrics", []string{"broker/api", "broker/httpserver"}},
	// The HTTP server serves what it is handed and knows no room.
	{"broker/httpserver", []string{"broker/api", "broker/coordhost", "broker/replica", "broker/network", "broker/metrics", "broker/console", "storage", "coordinator", "controller"}},
	// The web console is a Kafka client of the broker's own listener: it
	// knows no room, not even the config, only kgo/kadm and a Gatherer.
	{"broker/console", []string{"broker/api", "broker/coordhost", "broker/replica", "broker/network", "broker/metrics", "broker/httpserver", "broker/config", "broker/metacache", "storage", "coordinator", "controller", "protocol"}},
	// The Schema Registry is a Kafka client of the broker's own listener
	// too: franz-go, the schema libraries and the standard library only.
	{"schemaregistry", []string{"broker", "storage", "controller", "coordinator", "protocol"}},
	// The schema codec is pure: schema text and bytes in, bytes out; the
	// registry parses with it and the REST proxy encodes with it.
	{"schemaregistry/codec", []string{"broker", "storage", "controller", "coordinator", "protocol", "restproxy", "ext:github.com/twmb"}},
	// The REST proxy is a Kafka client of the broker's own listener, as
	// the console is: franz-go and the standard library only.
	{"restproxy", []string{"broker", "storage", "controller", "coordinator", "protocol", "ext:github.com/prometheus"}},
}

// TestImportRules fails when a package depends on one its row forbids, or
// when anything but the root package imports the root package.
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	under := func(path, pkg string) bool { return path == pkg || strings.HasPrefix(path, pkg+"/") }
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		for _, dep := range fields[1:] {
			if !strings.HasPrefix(dep, module) {
				for _, r := range importRules {
					if !under(pkg, r.pkg) {
						continue
					}
					if slices.Contains(r.forbidden, "std:"+dep) {
						t.Errorf("%s depends on %s; %s must not import %s", pkg, dep, r.pkg, dep)
					}
					for _, f := range r.forbidden {
						if ext, ok := strings.CutPrefix(f, "ext:"); ok && under(dep, ext) {
							t.Errorf("%s depends on %s; %s must not import %s", pkg, dep, r.pkg, ext)
						}
					}
				}
				continue
			}
			dep = strings.TrimPrefix(dep, module)
			if dep == "broker" && !strings.HasPrefix(pkg, "cmd/") && !under(pkg, "compat") && !under(pkg, "integration") {
				t.Errorf("%s imports the root package broker, which only wires the others", pkg)
			}
			for _, r := range importRules {
				if !under(pkg, r.pkg) {
					continue
				}
				for _, f := range r.forbidden {
					if under(dep, f) {
						t.Errorf("%s depends on %s; %s must not import %s", pkg, dep, r.pkg, f)
					}
				}
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("go list named only %d packages:\n%s", checked, out)
	}
}

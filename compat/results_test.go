package compat

// This file records what the compat tests showed, per client, client version
// and capability, and writes it as JSON after the run (TestMain). The
// command ./compat/cmd/compatreport turns that file into COMPATIBILITY.md.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Capabilities, the columns of COMPATIBILITY.md.
const (
	capProduce    = "produce"
	capConsume    = "consume"
	capGroups     = "groups"
	capStatic     = "static membership"
	capKIP848     = "KIP-848"
	capIdempotent = "idempotence"
	capTxn        = "transactions"
	capAdmin      = "admin"
	capSASL       = "SASL"
)

// allCaps is the column order.
var allCaps = []string{capProduce, capConsume, capGroups, capStatic, capKIP848, capIdempotent, capTxn, capAdmin, capSASL, capFailover}

// Cell values in the results file.
const (
	statusPass    = "pass"
	statusFail    = "fail"
	statusNA      = "n/a" // the client does not have the feature
	statusMissing = "—"   // no test yet (the broker lacks it, or the test is not written)
)

// clientInfo describes one row of the matrix: what the client cannot do at
// all (n/a, with the reason) and what is not tested yet (—, with the reason).
// Every other capability must be covered by a test calling recordCap.
type clientInfo struct {
	Name    string
	NA      map[string]string // capability -> why the client lacks it
	Missing map[string]string // capability -> why there is no test yet
}

// brokerLacks are the capabilities kbroker does not have yet; a client that
// has them gets "—" there until the broker and a test exist. Capabilities
// kbroker has but the matrix does not test for a client yet get "—" with
// the client's Missing reason (or "no matrix test yet").
var brokerLacks = map[string]string{}

// clients is the matrix's rows, in order. Versions come from the run.
var clients = []clientInfo{
	{Name: "franz-go (kgo, kadm)"},
	{Name: "IBM/sarama", NA: map[string]string{capKIP848: "sarama has no KIP-848 consumer"}},
	{Name: "segmentio/kafka-go", NA: map[string]string{
		capStatic:     "no group.instance.id in kafka-go",
		capKIP848:     "no KIP-848 consumer in kafka-go",
		capIdempotent: "kafka-go has no idempotent producer",
		capTxn:        "kafka-go has no transactions",
	}},
	{Name: "confluent-kafka-go"},
	{Name: "kcat", NA: map[string]string{
		capKIP848: "librdkafka 2.0 predates KIP-848",
		capTxn:    "kcat has no transactional mode",
		capAdmin:  "kcat has no admin commands beyond metadata (-L)",
	}},
	{Name: "kafka-python", NA: map[string]string{
		capStatic:     "kafka-python 2.0 has no group.instance.id",
		capKIP848:     "no KIP-848 consumer in kafka-python 2.0",
		capIdempotent: "kafka-python 2.0 has no idempotent producer",
		capTxn:        "kafka-python 2.0 has no transactions",
	}},
	{Name: "confluent-kafka python", NA: map[string]string{
		capKIP848: "librdkafka 2.0 predates KIP-848",
	}},
	{Name: "kafkajs", NA: map[string]string{
		capStatic: "kafkajs has no group.instance.id",
		capKIP848: "no KIP-848 consumer in kafkajs",
	}},
	{Name: javaClientName},
}

// resultsFile is the JSON written after the run.
type resultsFile struct {
	Generated  string            `json:"generated"`
	GoVersion  string            `json:"go_version"`
	Partial    bool              `json:"partial"` // the run was filtered (-run/-skip/-short)
	Caps       []string          `json:"capabilities"`
	Clients    []clientResult    `json:"clients"`
	FranzSuite *franzSuiteResult `json:"franz_suite,omitempty"`
}

type clientResult struct {
	Client  string            `json:"client"`
	Version string            `json:"version"`
	Cells   map[string]string `json:"cells"`           // capability -> pass/fail/n/a/—
	Notes   map[string]string `json:"notes,omitempty"` // capability -> reason or failing test
	Tests   map[string]string `json:"tests,omitempty"` // capability -> tests that cover it
}

// franzSuiteResult is TestFranzGoSuite's outcome.
type franzSuiteResult struct {
	Module          string   `json:"module"`
	Package         string   `json:"package"`
	Passed          int      `json:"passed"`
	Failed          int      `json:"failed"`
	Skipped         int      `json:"skipped"`
	ExpectedSkipped int      `json:"expected_skipped"`
	Excluded        []string `json:"excluded"`
	FailedTests     []string `json:"failed_tests,omitempty"`
	Seconds         float64  `json:"seconds"`
	Outcome         string   `json:"outcome"` // pass or fail
	Summary         string   `json:"summary"`
}

// recorder collects outcomes from the tests.
var recorder = struct {
	sync.Mutex
	// cells[client][version][cap] = outcome per test name
	cells    map[string]map[string]map[string]map[string]string
	franz    *franzSuiteResult
	versions map[string]string
}{cells: map[string]map[string]map[string]map[string]string{}}

// recordCap records, when t (a test or subtest) ends, whether it passed for
// these capabilities of client at version. A failing test marks every
// capability it covers as failed.
func recordCap(t *testing.T, client, version string, caps ...string) {
	t.Helper()
	known := false
	for _, c := range clients {
		known = known || c.Name == client
	}
	if !known {
		t.Fatalf("recordCap: client %q is not in the clients table", client)
	}
	name := t.Name()
	t.Cleanup(func() {
		outcome := statusPass
		switch {
		case t.Failed():
			outcome = statusFail
		case t.Skipped():
			// A skip is not a pass; the matrix shows it as not tested.
			return
		}
		recorder.Lock()
		defer recorder.Unlock()
		byVer := recorder.cells[client]
		if byVer == nil {
			byVer = map[string]map[string]map[string]string{}
			recorder.cells[client] = byVer
		}
		byCap := byVer[version]
		if byCap == nil {
			byCap = map[string]map[string]string{}
			byVer[version] = byCap
		}
		for _, c := range caps {
			if byCap[c] == nil {
				byCap[c] = map[string]string{}
			}
			if prev := byCap[c][name]; prev != statusFail {
				byCap[c][name] = outcome
			}
		}
	})
}

// recordFranzSuite stores TestFranzGoSuite's counts.
func recordFranzSuite(r *franzSuiteResult) {
	recorder.Lock()
	defer recorder.Unlock()
	recorder.franz = r
}

// moduleVersion is the version of a Go module this package requires, from
// the build info or, as `go test` binaries carry no dependency list, from
// the module's go.mod (the test runs in compat/, one level below it).
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	data, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	return "unknown"
}

// buildResults turns the recorded outcomes into the results file.
func buildResults(partial bool) resultsFile {
	recorder.Lock()
	defer recorder.Unlock()
	rf := resultsFile{
		Generated:  time.Now().UTC().Format(time.RFC3339),
		GoVersion:  goVersion(),
		Partial:    partial,
		Caps:       allCaps,
		FranzSuite: recorder.franz,
	}
	for _, c := range clients {
		versions := make([]string, 0, len(recorder.cells[c.Name]))
		for v := range recorder.cells[c.Name] {
			versions = append(versions, v)
		}
		sort.Strings(versions)
		if len(versions) == 0 {
			versions = []string{"(not run)"}
		}
		for _, v := range versions {
			cr := clientResult{Client: c.Name, Version: v, Cells: map[string]string{}, Notes: map[string]string{}, Tests: map[string]string{}}
			byCap := recorder.cells[c.Name][v]
			for _, cp := range allCaps {
				if why, ok := c.NA[cp]; ok {
					cr.Cells[cp], cr.Notes[cp] = statusNA, why
					continue
				}
				tests := byCap[cp]
				if len(tests) == 0 {
					why := c.Missing[cp]
					if why == "" {
						why = brokerLacks[cp]
					}
					if why == "" {
						why = "no matrix test yet"
					}
					cr.Cells[cp], cr.Notes[cp] = statusMissing, why
					continue
				}
				names := make([]string, 0, len(tests))
				outcome := statusPass
				var failed []string
				for n, o := range tests {
					names = append(names, n)
					if o == statusFail {
						outcome = statusFail
						failed = append(failed, n)
					}
				}
				sort.Strings(names)
				sort.Strings(failed)
				cr.Cells[cp] = outcome
				cr.Tests[cp] = fmt.Sprint(names)
				if len(failed) > 0 {
					cr.Notes[cp] = fmt.Sprintf("failed: %v", failed)
				}
			}
			rf.Clients = append(rf.Clients, cr)
		}
	}
	return rf
}

func goVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}

// writeResults writes the results file: $KBROKER_COMPAT_RESULTS, or
// results.json in this package's directory (the test's working directory).
func writeResults(partial bool) error {
	path := os.Getenv("KBROKER_COMPAT_RESULTS")
	if path == "" {
		path = "results.json"
	}
	data, err := json.MarshalIndent(buildResults(partial), "", "  ")
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

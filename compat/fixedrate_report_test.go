package compat

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
)

// TestParseRates: MB/s and percentages of the maximum, and what is refused.
func TestParseRates(t *testing.T) {
	got, err := parseRates("50, 200,70%")
	if err != nil {
		t.Fatal(err)
	}
	want := []fixedRate{{mbps: 50}, {mbps: 200}, {pct: 70}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rate %d: got %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "x", "0", "-5", "150%", "50,,"} {
		if _, err := parseRates(bad); err == nil {
			t.Errorf("parseRates(%q) accepted", bad)
		}
	}
}

// TestLatencyReport: the table has every target's percentiles and kbroker's
// ratio to each peer, and the plot is well-formed SVG.
func TestLatencyReport(t *testing.T) {
	rate := fixedRate{mbps: 50}
	run := func(name string, ms int64) latRun {
		r := latRun{target: name, rate: rate, offered: 50, acked: 50, consumed: 50, publish: newLatHist(), e2e: newLatHist(), load: "0.1 0.1 0.1"}
		r.perSec = append(r.perSec, newLatHist(), newLatHist())
		for i := range int64(1000) {
			d := time.Duration(ms*1000+i) * time.Microsecond
			recordLat(r.publish, d)
			recordLat(r.e2e, 2*d)
			recordLat(r.perSec[i%2], 2*d)
		}
		return r
	}
	targets := []benchTarget{{name: "kbroker"}, {name: "kafka"}}
	runs := []latRun{run("kbroker", 1), run("kafka", 4)}
	got := latencyReport(targets, runs, rate)
	for _, want := range []string{"fixed rate 50 MB/s", "kbroker       50.0", "kbroker / kafka", "e2e p99.9 0.4", "acked MB/s 1.00x"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	// The clusters' bench: the reference is the first kbroker… target,
	// and the columns widen for longer names.
	targets = []benchTarget{{name: "kbroker x3"}, {name: "kafka x3"}, {name: "kafka39 x3"}}
	runs = []latRun{run("kbroker x3", 1), run("kafka x3", 4), run("kafka39 x3", 2)}
	got = latencyReport(targets, runs, rate)
	for _, want := range []string{"kafka39 x3     50.0", "kbroker x3 / kafka x3 ", "kbroker x3 / kafka39 x3 ", "acked MB/s 1.00x"} {
		if !strings.Contains(got, want) {
			t.Errorf("cluster report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "kafka x3 / ") || strings.Contains(got, "kbroker x3 / kbroker x3") {
		t.Errorf("cluster report has a ratio of the wrong reference:\n%s", got)
	}
	// A rate given twice (KBROKER_BENCH_RATES=200,200) is two rounds, each
	// reported with its own runs.
	second := run("kbroker", 7)
	second.round = 1
	runs = []latRun{run("kbroker", 1), second}
	if at := runsAt(runs, 1); len(at) != 1 || at[0].round != 1 {
		t.Fatalf("runsAt(runs, 1) = %d runs, want round 1's only", len(at))
	}
	targets = []benchTarget{{name: "kbroker"}}
	for round, want := range []string{"      1.50 ", "      7.50 "} {
		if got := latencyReport(targets, runsAt(runs, round), rate); !strings.Contains(got, want) {
			t.Errorf("round %d: report lacks pub p50 %q:\n%s", round, want, got)
		}
	}
	var series []plotSeries
	for _, r := range runs {
		series = append(series, plotSeries{label: r.target + " <p99>", color: "#000", ys: []float64{latMs(r.perSec[0], 99), 0, latMs(r.perSec[1], 99)}})
	}
	d := xml.NewDecoder(strings.NewReader(latencySVG("a & b", series)))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG: %v", err)
		}
	}
}

package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestConsoleOnCluster: the web console of any broker shows the whole
// cluster (every broker, the controller, a topic's replicas and ISR on
// other brokers), because it is a Kafka client of its broker; its
// create-topic action, confirmed, creates a replicated topic through the
// controller that another broker's console then shows.
func TestConsoleOnCluster(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"default.replication.factor": "3"})
	get := func(b *BrokerProc, path string) (int, string, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", b.HTTPPort, path))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	for _, b := range bs {
		waitFor(t, 60*time.Second, fmt.Sprintf("broker %d ready", b.ID), func() (bool, error) {
			code, _, err := b.Readyz()
			return code == http.StatusOK, err
		})
	}
	createTopic(t, bs[0].Addr(), "console-cluster", 2, 3, false)

	brokerRow := regexp.MustCompile(`<tr><td>([123])</td><td>127\.0\.0\.1</td><td>\d+</td><td>-</td><td>(controller)?</td></tr>`)
	waitFor(t, 20*time.Second, "broker 2's console listing three brokers and one controller", func() (bool, error) {
		code, body, err := get(bs[1], "/")
		rows := brokerRow.FindAllStringSubmatch(body, -1)
		controllers := 0
		for _, r := range rows {
			if r[2] != "" {
				controllers++
			}
		}
		return code == 200 && len(rows) == 3 && controllers == 1, err
	})
	// Replicas and ISR of both partitions name all three brokers.
	replicated := regexp.MustCompile(`<td>\[[123] [123] [123]\]</td><td>\[[123] [123] [123]\]</td>`)
	waitFor(t, 20*time.Second, "broker 3's console showing the topic on three replicas in sync", func() (bool, error) {
		code, body, err := get(bs[2], "/topics/console-cluster")
		return code == 200 && len(replicated.FindAllString(body, -1)) == 2, err
	})

	// The create action on broker 2's console, confirmed.
	_, page, err := get(bs[1], "/topics")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on /topics:\n%s", page)
	}
	resp, err := http.PostForm(fmt.Sprintf("http://127.0.0.1:%d/actions/create-topic", bs[1].HTTPPort),
		url.Values{"csrf": {m[1]}, "topic": {"console-made"}, "partitions": {"3"}, "confirm": {"yes"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Created topic") {
		t.Fatalf("create through the console: %d\n%s", resp.StatusCode, body)
	}
	waitFor(t, 20*time.Second, "broker 1's console showing the created topic on three replicas", func() (bool, error) {
		code, body, err := get(bs[0], "/topics/console-made")
		return code == 200 && len(replicated.FindAllString(body, -1)) == 3, err
	})
}

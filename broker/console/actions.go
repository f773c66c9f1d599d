package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// action is one change the console can make. The first POST (without
// confirm=yes) renders a confirm page that states what will happen; the
// confirm page posts the same form again with confirm=yes, and only then
// does the console send the Kafka request.
type action struct {
	Title string
	// fields are the form fields carried from the first POST to the
	// confirmation.
	fields []string
	// describe says what the action will do, or why the form is wrong.
	describe func(f url.Values) (string, error)
	// do performs it and says what it did.
	do func(ctx context.Context, adm *kadm.Client, f url.Values) (string, error)
	// back is the page to return to.
	back func(f url.Values) string
}

var actions = map[string]action{
	"create-topic": {
		Title:  "Create topic",
		fields: []string{"topic", "partitions", "replication", "configs"},
		describe: func(f url.Values) (string, error) {
			p, rf, cfgs, err := createArgs(f)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Create topic %q with %s, %s%s.", f.Get("topic"),
				orDefault(p, "partitions", "num.partitions"), orDefault(int32(rf), "replication factor", "default.replication.factor"), configsText(cfgs)), nil
		},
		do: func(ctx context.Context, adm *kadm.Client, f url.Values) (string, error) {
			p, rf, cfgs, err := createArgs(f)
			if err != nil {
				return "", err
			}
			resp, err := adm.CreateTopic(ctx, p, rf, cfgs, f.Get("topic"))
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				return "", withMessage(err, resp.ErrMessage)
			}
			return fmt.Sprintf("Created topic %q (%d partitions, replication factor %d).", resp.Topic, resp.NumPartitions, resp.ReplicationFactor), nil
		},
		back: func(f url.Values) string { return "/topics/" + url.PathEscape(f.Get("topic")) },
	},
	"add-partitions": {
		Title:  "Add partitions",
		fields: []string{"topic", "count"},
		describe: func(f url.Values) (string, error) {
			n, err := positive(f.Get("count"), "partition count")
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Raise topic %q to %d partitions. Keyed records will map to other partitions from then on; partitions cannot be removed.", f.Get("topic"), n), nil
		},
		do: func(ctx context.Context, adm *kadm.Client, f url.Values) (string, error) {
			n, err := positive(f.Get("count"), "partition count")
			if err != nil {
				return "", err
			}
			resps, err := adm.UpdatePartitions(ctx, int(n), f.Get("topic"))
			if err == nil {
				r, e := resps.On(f.Get("topic"), nil)
				err = errors.Join(e, withMessage(r.Err, r.ErrMessage))
			}
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Topic %q now has %d partitions.", f.Get("topic"), n), nil
		},
		back: func(f url.Values) string { return "/topics/" + url.PathEscape(f.Get("topic")) },
	},
	"delete-records": {
		Title:  "Delete records",
		fields: []string{"topic", "partition", "offset"},
		describe: func(f url.Values) (string, error) {
			p, o, err := deleteArgs(f)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("Delete every record of %s before offset %d (the log start offset moves there; this cannot be undone).", tpString(f.Get("topic"), p), o), nil
		},
		do: func(ctx context.Context, adm *kadm.Client, f url.Values) (string, error) {
			p, o, err := deleteArgs(f)
			if err != nil {
				return "", err
			}
			var os kadm.Offsets
			os.AddOffset(f.Get("topic"), p, o, -1)
			resps, err := adm.DeleteRecords(ctx, os)
			if err == nil {
				r, ok := resps.Lookup(f.Get("topic"), p)
				err = r.Err
				if !ok {
					err = fmt.Errorf("no answer for %s", tpString(f.Get("topic"), p))
				}
				if err == nil {
					return fmt.Sprintf("The log start offset of %s is now %d.", tpString(f.Get("topic"), p), r.LowWatermark), nil
				}
			}
			return "", err
		},
		back: func(f url.Values) string { return "/topics/" + url.PathEscape(f.Get("topic")) },
	},
	"reset-offsets": {
		Title:  "Reset group offsets",
		fields: []string{"group", "topic", "to", "value"},
		describe: func(f url.Values) (string, error) {
			if f.Get("group") == "" || f.Get("topic") == "" {
				return "", errors.New("a group and a topic are needed")
			}
			var to string
			switch f.Get("to") {
			case "earliest", "latest":
				to = "the " + f.Get("to") + " offset"
			case "offset":
				if _, err := strconv.ParseInt(f.Get("value"), 10, 64); err != nil {
					return "", fmt.Errorf("offset %q is not a number", f.Get("value"))
				}
				to = "offset " + f.Get("value")
			case "timestamp":
				if _, err := timestampMillis(f.Get("value")); err != nil {
					return "", err
				}
				to = "the first offset at or after " + f.Get("value")
			default:
				return "", fmt.Errorf("reset to %q: choose earliest, latest, offset or timestamp", f.Get("to"))
			}
			return fmt.Sprintf("Commit, for group %q, every partition of topic %q at %s. The group must have no active members.", f.Get("group"), f.Get("topic"), to), nil
		},
		do:   resetOffsets,
		back: func(f url.Values) string { return "/groups/" + url.PathEscape(f.Get("group")) },
	},
}

// actionData is the confirm and result pages.
type actionData struct {
	Name, Title, Summary, Back string
	Fields                     [][2]string // carried to the confirmation
	Done                       bool
}

func (c *Console) action(name string, a action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := c.checkCSRF(w, r); err != nil {
			c.renderCode(w, http.StatusForbidden, "result", a.Title, actionData{Title: a.Title, Back: "/"}, err)
			return
		}
		f := r.PostForm
		d := actionData{Name: name, Title: a.Title, Back: a.back(f)}
		summary, err := a.describe(f)
		if err != nil {
			c.renderCode(w, http.StatusBadRequest, "result", a.Title, d, err)
			return
		}
		if f.Get("confirm") != "yes" {
			d.Summary = summary
			for _, k := range a.fields {
				d.Fields = append(d.Fields, [2]string{k, f.Get(k)})
			}
			c.render(w, "confirm", a.Title, d, nil)
			return
		}
		adm, _, err := c.admin()
		if err != nil {
			c.render(w, "result", a.Title, d, err)
			return
		}
		ctx, cancel := c.ctx(r)
		defer cancel()
		d.Summary, err = a.do(ctx, adm, f)
		d.Done = err == nil
		c.log.Info("console action", "action", name, "form", formLog(f, a.fields), "remote", r.RemoteAddr, "err", err)
		code := http.StatusOK
		if err != nil {
			code = http.StatusBadGateway // the broker refused or did not answer
		}
		c.renderCode(w, code, "result", a.Title, d, err)
	}
}

// resetOffsets is kafka-consumer-groups.sh --reset-offsets --execute for
// one topic: refused while the group has members, as Kafka's tool does.
func resetOffsets(ctx context.Context, adm *kadm.Client, f url.Values) (string, error) {
	group, topic := f.Get("group"), f.Get("topic")
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", err
	}
	if d := described[group]; d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
		return "", d.Err
	} else if len(d.Members) > 0 || (d.State != "Empty" && d.State != "Dead" && d.State != "") {
		return "", fmt.Errorf("group %q is %s with %d members: stop its consumers first", group, d.State, len(d.Members))
	}
	var listed kadm.ListedOffsets
	switch f.Get("to") {
	case "earliest":
		listed, err = adm.ListStartOffsets(ctx, topic)
	case "latest":
		listed, err = adm.ListEndOffsets(ctx, topic)
	case "timestamp":
		ms, _ := timestampMillis(f.Get("value"))
		listed, err = adm.ListOffsetsAfterMilli(ctx, ms, topic)
	case "offset":
		var starts, ends kadm.ListedOffsets
		if starts, err = adm.ListStartOffsets(ctx, topic); err == nil {
			ends, err = adm.ListEndOffsets(ctx, topic)
		}
		want, _ := strconv.ParseInt(f.Get("value"), 10, 64)
		listed = make(kadm.ListedOffsets)
		starts.Each(func(s kadm.ListedOffset) {
			e, _ := ends.Lookup(s.Topic, s.Partition)
			s.Offset = min(max(want, s.Offset), e.Offset) // as Kafka's tool: clamped to the log
			s.Err = errors.Join(s.Err, e.Err)
			if listed[s.Topic] == nil {
				listed[s.Topic] = make(map[int32]kadm.ListedOffset)
			}
			listed[s.Topic][s.Partition] = s
		})
	}
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return "", err
	}
	if len(listed[topic]) == 0 {
		return "", fmt.Errorf("topic %q has no partitions", topic)
	}
	offsets := listed.Offsets()
	resps, err := adm.CommitOffsets(ctx, group, offsets)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return "", err
	}
	var parts []string
	resps.Each(func(o kadm.OffsetResponse) {
		parts = append(parts, fmt.Sprintf("%s→%d", tpString(o.Topic, o.Partition), o.At))
	})
	sort.Strings(parts)
	return fmt.Sprintf("Group %q committed %s.", group, strings.Join(parts, ", ")), nil
}

func createArgs(f url.Values) (partitions int32, rf int16, cfgs map[string]*string, err error) {
	if strings.TrimSpace(f.Get("topic")) == "" {
		return 0, 0, nil, errors.New("a topic name is needed")
	}
	partitions, rf = -1, -1 // the broker's num.partitions, default.replication.factor
	if s := f.Get("partitions"); s != "" {
		if partitions, err = positive(s, "partitions"); err != nil {
			return
		}
	}
	if s := f.Get("replication"); s != "" {
		n, perr := positive(s, "replication factor")
		if perr != nil || n > 32767 {
			return 0, 0, nil, errors.Join(perr, fmt.Errorf("replication factor %q is too large", s))
		}
		rf = int16(n)
	}
	for _, line := range strings.Split(f.Get("configs"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return 0, 0, nil, fmt.Errorf("config line %q is not key=value", line)
		}
		if cfgs == nil {
			cfgs = make(map[string]*string)
		}
		v = strings.TrimSpace(v)
		cfgs[strings.TrimSpace(k)] = &v
	}
	return partitions, rf, cfgs, nil
}

func deleteArgs(f url.Values) (int32, int64, error) {
	if f.Get("topic") == "" {
		return 0, 0, errors.New("a topic is needed")
	}
	p, err := strconv.ParseInt(f.Get("partition"), 10, 32)
	if err != nil || p < 0 {
		return 0, 0, fmt.Errorf("partition %q is not a partition number", f.Get("partition"))
	}
	o, err := strconv.ParseInt(f.Get("offset"), 10, 64)
	if err != nil || o < -1 {
		return 0, 0, fmt.Errorf("offset %q is not an offset (-1: the high watermark)", f.Get("offset"))
	}
	return int32(p), o, nil
}

func positive(s, what string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s %q is not a positive number", what, s)
	}
	return int32(n), nil
}

func orDefault(n int32, what, prop string) string {
	if n < 0 {
		return what + " as the broker's " + prop
	}
	return fmt.Sprintf("%s %d", what, n)
}

func configsText(cfgs map[string]*string) string {
	if len(cfgs) == 0 {
		return ""
	}
	var kv []string
	for k, v := range cfgs {
		kv = append(kv, k+"="+*v)
	}
	sort.Strings(kv)
	return " and configs " + strings.Join(kv, ", ")
}

func withMessage(err error, msg string) error {
	if err == nil || msg == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}

// formLog is the action's fields for the log line.
func formLog(f url.Values, fields []string) string {
	var kv []string
	for _, k := range fields {
		kv = append(kv, k+"="+strconv.Quote(f.Get(k)))
	}
	return strings.Join(kv, " ")
}

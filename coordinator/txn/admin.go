package txn

// DescribeTransactions v0 and ListTransactions v0–v2 (KIP-664), the
// operator APIs of kafka-transactions.sh. ListTransactions v1 adds the
// duration filter (KIP-994), v2 the transactional id pattern (KIP-1152).

import (
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransactions reports the state of each named transactional id:
// TRANSACTIONAL_ID_NOT_FOUND for ids this coordinator does not hold and
// INVALID_REQUEST for the empty id. Partitions are sorted.
func (c *Coordinator) DescribeTransactions(now time.Time, token any, req *kmsg.DescribeTransactionsRequest) []Reply {
	c.begin(now)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		t := c.txns[id]
		switch {
		case id == "":
			st.ErrorCode = kerr.InvalidRequest.Code
		case t == nil:
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
		default:
			st.State = t.state.String()
			st.TimeoutMillis = t.timeoutMs
			st.StartTimestamp = t.startMs
			st.ProducerID = t.producerID
			st.ProducerEpoch = t.epoch
			for _, g := range groupByTopic(t.sortedPartitions()) {
				rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				rt.Topic = g.topic
				rt.Partitions = g.partitions
				st.Topics = append(st.Topics, rt)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return []Reply{{Token: token, Resp: resp}}
}

// ListTransactions lists the transactional ids this coordinator holds,
// sorted, filtered as Kafka does: by state name (unknown names are echoed
// in UnknownStateFilters and match nothing), by producer id, and (v1) to
// those whose transaction started more than DurationFilterMillis ago —
// which, as in Kafka, includes every id with no transaction (start -1) —
// and (v2) to ids the whole of which TransactionalIDPattern matches (Java's
// Matcher.matches; a null or empty pattern matches all, an invalid one is
// INVALID_REGULAR_EXPRESSION). Go's RE2 syntax is Java's for everything but
// backreferences and lookaround, which are refused as invalid.
func (c *Coordinator) ListTransactions(now time.Time, token any, req *kmsg.ListTransactionsRequest) []Reply {
	c.begin(now)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		var err error
		if pattern, err = regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$"); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return []Reply{{Token: token, Resp: resp}}
		}
	}
	states := map[State]bool{}
	for _, name := range req.StateFilters {
		if s, ok := stateByName(name); ok {
			states[s] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	pids := map[int64]bool{}
	for _, p := range req.ProducerIDFilters {
		pids[p] = true
	}
	duration := int64(-1)
	if req.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	nowMs := now.UnixMilli()
	for _, id := range sortedIDs(c.txns) {
		t := c.txns[id]
		switch {
		case len(req.ProducerIDFilters) > 0 && !pids[t.producerID]:
			continue
		case len(req.StateFilters) > 0 && !states[t.state]:
			continue
		case duration >= 0 && nowMs-t.startMs <= duration:
			continue
		case pattern != nil && !pattern.MatchString(id):
			continue
		}
		ls := kmsg.NewListTransactionsResponseTransactionState()
		ls.TransactionalID = id
		ls.ProducerID = t.producerID
		ls.TransactionState = t.state.String()
		resp.TransactionStates = append(resp.TransactionStates, ls)
	}
	return []Reply{{Token: token, Resp: resp}}
}

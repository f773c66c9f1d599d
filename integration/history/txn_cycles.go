package history

import (
	"fmt"
	"sort"
	"strings"
)

// cyclesLocked looks for dependency cycles among the transactions visible
// in byTP (the final read, per partition in offset order). It returns one
// line per G1c cycle and how many G0 cycles it found.
//
// G0 is counted on transactions: T1 → T2 when T1's record precedes T2's in
// some partition (ww); a strongly connected component of two or more
// transactions is a write cycle, which Kafka allows (the package comment).
//
// G1c is looked for on records, not transactions, because a transaction's
// records reach different partitions at different times (which is why G0
// is allowed): merging them into one node would make a cycle of any
// ww path that enters a transaction in one partition and leaves it in
// another. The graph's nodes are the visible records, and for each
// transaction an end node (all its records are appended) and a start
// node (none is yet); its edges are what a correct broker makes true in
// time: each record before the next in its partition; each record of T
// before T's end; and, when transaction P read a record of T (wr), T's
// end before P's start (T's producer flushed every record before asking
// to commit, and read_committed returned the record only after the
// commit) and P's start before each of P's records. A cycle has no
// timeline: some read saw a transaction before all of its records were
// in place, or a record was placed before one it depended on.
func (c *TxnChecker) cyclesLocked(byTP map[TP][]Record) (g1c []string, g0 int) {
	txnEdges := map[string]map[string]int{}
	recEdges := map[string]map[string]int{}
	add := func(edges map[string]map[string]int, from, to string) {
		if from == to {
			return
		}
		if edges[from] == nil {
			edges[from] = map[string]int{}
		}
		edges[from][to] = 1
	}
	writer := map[string]string{}    // value → transaction, of visible records
	visible := map[string][]string{} // transaction → its visible values
	for _, recs := range byTP {
		prevTxn, prevVal := "", ""
		for _, rec := range recs {
			id, ok := txnOf(rec.Value)
			if !ok {
				continue
			}
			writer[rec.Value] = id
			visible[id] = append(visible[id], rec.Value)
			if prevTxn != "" {
				add(txnEdges, prevTxn, id)
				add(recEdges, prevVal, rec.Value)
			}
			prevTxn, prevVal = id, rec.Value
		}
	}
	for id, vs := range visible {
		for _, v := range vs {
			add(recEdges, v, "end:"+id)
			add(recEdges, "start:"+id, v)
		}
	}
	for id, t := range c.txns {
		for _, v := range t.readIn {
			if w, ok := writer[v]; ok {
				add(recEdges, "end:"+w, "start:"+id)
			}
		}
	}
	for _, scc := range stronglyConnected(txnEdges) {
		if len(scc) >= 2 {
			g0++
		}
	}
	for _, scc := range stronglyConnected(recEdges) {
		if len(scc) < 2 {
			continue
		}
		txns := map[string]bool{}
		for _, n := range scc {
			if i := strings.IndexByte(n, ':'); i >= 0 {
				n = n[i+1:]
			} else if id, ok := txnOf(n); ok {
				n = id
			}
			txns[n] = true
		}
		ids := make([]string, 0, len(txns))
		for id := range txns {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		sort.Strings(scc)
		if len(scc) > 20 {
			scc = append(scc[:20:20], "…")
		}
		g1c = append(g1c, fmt.Sprintf("cycle among %s (records and events %s)", strings.Join(ids, ", "), strings.Join(scc, " ")))
	}
	sort.Strings(g1c)
	return g1c, g0
}

// stronglyConnected returns the strongly connected components of the graph
// (Tarjan's algorithm, iterative so that long chains cannot exhaust the
// stack).
func stronglyConnected(edges map[string]map[string]int) [][]string {
	nodes := map[string]bool{}
	for from, tos := range edges {
		nodes[from] = true
		for to := range tos {
			nodes[to] = true
		}
	}
	order := make([]string, 0, len(nodes))
	for n := range nodes {
		order = append(order, n)
	}
	sort.Strings(order)
	succ := map[string][]string{}
	for from, tos := range edges {
		for to := range tos {
			succ[from] = append(succ[from], to)
		}
		sort.Strings(succ[from])
	}
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	type frame struct {
		node string
		i    int
	}
	for _, root := range order {
		if _, done := index[root]; done {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.i < len(succ[f.node]) {
				w := succ[f.node][f.i]
				f.i++
				if _, seen := index[w]; !seen {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] {
					low[f.node] = min(low[f.node], index[w])
				}
				continue
			}
			v := f.node
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].node
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				var scc []string
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					scc = append(scc, w)
					if w == v {
						break
					}
				}
				out = append(out, scc)
			}
		}
	}
	return out
}

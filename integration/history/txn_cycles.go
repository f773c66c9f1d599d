package history

import (
	"fmt"
	"sort"
	"strings"
)

// edge kinds of the transaction dependency graph.
const (
	ww = 1 << iota // T1's record precedes T2's in some partition
	wr             // T2 read a record T1 wrote
)

// cyclesLocked builds the dependency graph of the transactions visible in
// byTP (the final read, per partition in offset order) and returns one
// line per strongly connected component that holds a write-read edge
// (G1c), and how many hold write-write edges only (G0).
func (c *TxnChecker) cyclesLocked(byTP map[TP][]Record) (g1c []string, g0 int) {
	edges := map[string]map[string]int{}
	add := func(from, to string, kind int) {
		if from == to {
			return
		}
		if edges[from] == nil {
			edges[from] = map[string]int{}
		}
		edges[from][to] |= kind
	}
	writer := map[string]string{} // value → transaction, of visible records
	for _, recs := range byTP {
		prev := ""
		for _, rec := range recs {
			id, ok := txnOf(rec.Value)
			if !ok {
				continue
			}
			writer[rec.Value] = id
			if prev != "" {
				add(prev, id, ww)
			}
			prev = id
		}
	}
	for id, t := range c.txns {
		for _, v := range t.readIn {
			if w, ok := writer[v]; ok {
				add(w, id, wr)
			}
		}
	}
	for _, scc := range stronglyConnected(edges) {
		if len(scc) < 2 {
			continue
		}
		in := map[string]bool{}
		for _, id := range scc {
			in[id] = true
		}
		hasWR := false
		for _, from := range scc {
			for to, kind := range edges[from] {
				if in[to] && kind&wr != 0 {
					hasWR = true
				}
			}
		}
		if !hasWR {
			g0++
			continue
		}
		sort.Strings(scc)
		g1c = append(g1c, fmt.Sprintf("cycle among %s", strings.Join(scc, ", ")))
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

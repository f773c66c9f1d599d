package schemaregistry

import (
	"fmt"
	"strings"
)

// Compatibility levels (Confluent's CompatibilityLevel).
const (
	levelNone               = "NONE"
	levelBackward           = "BACKWARD"
	levelBackwardTransitive = "BACKWARD_TRANSITIVE"
	levelForward            = "FORWARD"
	levelForwardTransitive  = "FORWARD_TRANSITIVE"
	levelFull               = "FULL"
	levelFullTransitive     = "FULL_TRANSITIVE"
)

// Modes (Confluent's Mode): READWRITE serves everything, READONLY refuses
// writes, IMPORT takes registrations with explicit ids and versions and
// checks no compatibility.
const (
	modeReadWrite = "READWRITE"
	modeReadOnly  = "READONLY"
	modeImport    = "IMPORT"
)

// parseLevel accepts a level in any case.
func parseLevel(s string) (string, bool) {
	switch l := strings.ToUpper(s); l {
	case levelNone, levelBackward, levelBackwardTransitive, levelForward, levelForwardTransitive, levelFull, levelFullTransitive:
		return l, true
	}
	return "", false
}

// parseMode accepts a mode in any case.
func parseMode(s string) (string, bool) {
	switch m := strings.ToUpper(s); m {
	case modeReadWrite, modeReadOnly, modeImport:
		return m, true
	}
	return "", false
}

// previousVersion is an earlier version to check a new schema against.
type previousVersion struct {
	version int
	text    string
	schema  parsedSchema
}

// checkCompatibility returns why schema may not follow previous (ascending
// versions, live ones only) under level; empty: it may. BACKWARD: the new
// schema reads data written with the previous ones; FORWARD: the previous
// ones read data written with the new one; FULL: both. Without _TRANSITIVE
// only the latest previous version counts.
func checkCompatibility(level string, schema parsedSchema, previous []previousVersion) []string {
	if level == levelNone || len(previous) == 0 {
		return nil
	}
	check := previous[len(previous)-1:]
	if strings.HasSuffix(level, "_TRANSITIVE") {
		check = previous
	}
	backward := strings.HasPrefix(level, levelBackward) || strings.HasPrefix(level, levelFull)
	forward := strings.HasPrefix(level, levelForward) || strings.HasPrefix(level, levelFull)
	var out []string
	// Newest first, as Confluent reports them.
	for i := len(check) - 1; i >= 0; i-- {
		p := check[i]
		var msgs []string
		if backward {
			msgs = append(msgs, schema.canRead(p.schema)...)
		}
		if forward {
			msgs = append(msgs, p.schema.canRead(schema)...)
		}
		if len(msgs) > 0 {
			out = append(out, msgs...)
			out = append(out, fmt.Sprintf("{oldSchemaVersion: %d}", p.version), fmt.Sprintf("{oldSchema: '%s'}", p.text))
		}
	}
	if len(out) > 0 {
		out = append(out, fmt.Sprintf("{compatibility: '%s'}", level))
	}
	return out
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// parseProperties reads a Java .properties file as Kafka's server.properties
// uses it: key=value or key:value or "key value", '#' and '!' comments,
// backslash line continuations and escapes.
func parseProperties(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	lineNo := 0
	var pending strings.Builder
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if pending.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if cont := trailingBackslashes(line)%2 == 1; cont {
			pending.WriteString(line[:len(line)-1])
			continue
		}
		pending.WriteString(line)
		logical := pending.String()
		pending.Reset()
		k, v := splitKeyValue(logical)
		if k == "" {
			return nil, fmt.Errorf("line %d: no key in %q", lineNo, logical)
		}
		out[unescape(k)] = unescape(v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pending.Len() > 0 {
		k, v := splitKeyValue(pending.String())
		out[unescape(k)] = unescape(v)
	}
	return out, nil
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitKeyValue splits at the first unescaped '=', ':' or whitespace.
func splitKeyValue(s string) (string, string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '=', ':', ' ', '\t', '\f':
			key := s[:i]
			rest := strings.TrimLeft(s[i:], " \t\f")
			if len(rest) > 0 && (rest[0] == '=' || rest[0] == ':') && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f') {
				rest = rest[1:]
			} else if s[i] == '=' || s[i] == ':' {
				rest = s[i+1:]
			}
			return key, strings.TrimLeft(rest, " \t\f")
		}
	}
	return s, ""
}

func unescape(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

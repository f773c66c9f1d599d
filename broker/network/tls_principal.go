package network

// The principal of an SSL client, as Kafka names it: the subject of the
// client certificate in RFC 2253 form (Java's X500Principal.getName()),
// rewritten by ssl.principal.mapping.rules (Kafka's SslPrincipalMapper).

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// rfc2253Keywords are the attribute types Java's RFC 2253 form names; any
// other type is written as its dotted OID with the value as #hex of its DER.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// rawATV is an attribute of a relative distinguished name with its value
// as DER, so that an attribute written as #hex keeps its original string
// type; rawRDNSET is one RDN (the "SET" suffix makes encoding/asn1 read a
// SET OF).
type rawATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

type rawRDNSET []rawATV

// distinguishedName is cert's subject in RFC 2253 form, most specific RDN
// first, as Java's X500Principal.getName() writes it: "CN=client,OU=eng,O=kbroker,C=US".
func distinguishedName(cert *x509.Certificate) string {
	var seq []rawRDNSET
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) > 0 {
		return cert.Subject.String()
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := atv.Type.String()
			kw, known := rfc2253Keywords[oid]
			var v any
			if known {
				if rest, err := asn1.Unmarshal(atv.Value.FullBytes, &v); err == nil && len(rest) == 0 {
					if s, ok := v.(string); ok {
						b.WriteString(kw + "=" + escapeRFC2253(s))
						continue
					}
				}
				oid = kw
			}
			b.WriteString(oid + "=#" + hex.EncodeToString(atv.Value.FullBytes))
		}
	}
	return b.String()
}

// escapeRFC2253 escapes an attribute value as Java's RFC 2253 form does:
// a backslash before each of ,=+<>#;"\ and before a leading or trailing space.
func escapeRFC2253(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case strings.IndexByte(`,=+<>#;"\`, ch) >= 0,
			ch == ' ' && (i == 0 || i == len(s)-1):
			b.WriteByte('\\')
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// principalMapper applies ssl.principal.mapping.rules: the first rule that
// matches the whole distinguished name gives the name; none matching is an
// error (the connection is refused, as Kafka fails the authentication).
type principalMapper struct {
	rules []principalRule
	text  string
}

// principalRule is DEFAULT (re == nil: the name as is) or
// RULE:pattern/replacement/[LU].
type principalRule struct {
	re          *regexp.Regexp // anchored: the pattern must match the whole name
	unanchored  *regexp.Regexp
	replacement string // in Go's Expand syntax
	lower       bool
	upper       bool
}

func (m *principalMapper) name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.re == nil {
			return dn, nil
		}
		if !r.re.MatchString(dn) {
			continue
		}
		out := r.unanchored.ReplaceAllString(dn, r.replacement)
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("no rules apply to %s, rules %s", dn, m.text)
}

// parsePrincipalRules parses Kafka's rule list: DEFAULT and
// RULE:pattern/replacement/[LU] entries separated by commas or newlines (a
// comma inside a pattern or replacement is part of it; '/' is escaped as
// \/). Patterns are Java regular expressions, read by Go's RE2: look-around
// and back-references are refused. An empty list is DEFAULT.
func parsePrincipalRules(s string) (*principalMapper, error) {
	m := &principalMapper{text: s}
	i := 0
	skipSep := func() {
		for i < len(s) && strings.IndexByte(", \t\r\n", s[i]) >= 0 {
			i++
		}
	}
	// field reads up to an unescaped '/', keeping escapes as written.
	field := func() (string, bool) {
		start := i
		for i < len(s) {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case '/':
				f := s[start:i]
				i++
				return f, true
			}
			i++
		}
		return "", false
	}
	for skipSep(); i < len(s); skipSep() {
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			m.rules = append(m.rules, principalRule{})
			i += len("DEFAULT")
		case strings.HasPrefix(rest, "RULE:"):
			i += len("RULE:")
			pat, ok1 := field()
			repl, ok2 := field()
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("invalid rule: %s", rest)
			}
			r := principalRule{replacement: javaReplacement(repl)}
			if i < len(s) && (s[i] == 'L' || s[i] == 'U') {
				r.lower, r.upper = s[i] == 'L', s[i] == 'U'
				i++
			}
			var err error
			if r.re, err = regexp.Compile(`^(?:` + pat + `)$`); err != nil {
				return nil, fmt.Errorf("invalid rule %s: %w", rest, err)
			}
			r.unanchored = regexp.MustCompile(pat) // compiled above
			m.rules = append(m.rules, r)
		default:
			return nil, fmt.Errorf("invalid rule: %s", rest)
		}
		// Anything up to the next separator is ignored, as Kafka does.
		for i < len(s) && s[i] != ',' && s[i] != '\n' {
			i++
		}
	}
	if len(m.rules) == 0 {
		m.rules = []principalRule{{}}
	}
	return m, nil
}

// javaReplacement converts a Java Matcher replacement (\x is a literal x,
// $n a group) to Go's Expand syntax (${n}, $$ a literal $).
func javaReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		switch ch := r[i]; {
		case ch == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(r[i])
			}
		case ch == '$':
			j := i + 1
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			if j == i+1 {
				b.WriteString("$$")
				continue
			}
			b.WriteString("${" + r[i+1:j] + "}")
			i = j - 1
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

package config

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// LoggingConfig is how the broker logs: log.level and log.format. Neither is
// a Kafka property (Kafka configures log4j in a file of its own); the names
// are the ones Redpanda and most Go servers use, and the levels are log4j's,
// so an operator of Kafka recognises them.
type LoggingConfig struct {
	// Level is log.level: TRACE, DEBUG, INFO, WARN or ERROR (any case).
	Level slog.Level
	// Format is log.format: text (logfmt-like key=value) or json.
	Format string
	// LevelVar, when set (cmd/kbroker sets it), is the level of the running
	// logger: a dynamic change of log.level (IncrementalAlterConfigs on the
	// BROKER resource) stores the new level there, without a restart.
	LevelVar *slog.LevelVar
}

// LevelTrace is log4j's TRACE, below slog's DEBUG.
const LevelTrace = slog.LevelDebug - 4

// ParseLogLevel maps a log4j level name (case-insensitive) to a slog level:
// TRACE, DEBUG, INFO, WARN (or WARNING), ERROR; FATAL is ERROR, the most
// severe level slog has.
func ParseLogLevel(v string) (slog.Level, error) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "TRACE":
		return LevelTrace, nil
	case "DEBUG":
		return slog.LevelDebug, nil
	case "INFO":
		return slog.LevelInfo, nil
	case "WARN", "WARNING":
		return slog.LevelWarn, nil
	case "ERROR", "FATAL":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("unknown log level %q (TRACE, DEBUG, INFO, WARN, ERROR)", v)
}

// LogLevelName is the log4j name of a slog level, as DescribeConfigs reports it.
func LogLevelName(l slog.Level) string {
	switch {
	case l <= LevelTrace:
		return "TRACE"
	case l <= slog.LevelDebug:
		return "DEBUG"
	case l <= slog.LevelInfo:
		return "INFO"
	case l <= slog.LevelWarn:
		return "WARN"
	}
	return "ERROR"
}

// NewLogger builds the broker's logger on w from log.level and log.format,
// with its level in a LevelVar (returned, and kept in c.Logging.LevelVar by
// the caller) so that it can change while the broker runs.
func (c LoggingConfig) NewLogger(w io.Writer) (*slog.Logger, *slog.LevelVar) {
	lv := new(slog.LevelVar)
	lv.Set(c.Level)
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.LevelKey {
			if l, ok := a.Value.Any().(slog.Level); ok && l <= LevelTrace {
				a.Value = slog.StringValue("TRACE")
			}
		}
		return a
	}}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), lv
	}
	return slog.New(slog.NewTextHandler(w, opts)), lv
}

// loggingProps are the properties of LoggingConfig; init adds them to props.
var loggingProps = map[string]prop{
	"log.level": {"INFO", kmsg.ConfigTypeString, "The level of the broker's log: TRACE, DEBUG (with a line per request), INFO, WARN or ERROR (kbroker's own property; dynamic).", func(c *Config, v string) (err error) {
		c.Logging.Level, err = ParseLogLevel(v)
		return err
	}},
	"log.format": {"text", kmsg.ConfigTypeString, "The format of the broker's log lines: text (key=value) or json (kbroker's own property).", func(c *Config, v string) error {
		switch f := strings.ToLower(strings.TrimSpace(v)); f {
		case "text", "json":
			c.Logging.Format = f
			return nil
		}
		return fmt.Errorf("unknown log format %q (text, json)", v)
	}},
}

func init() {
	for k, p := range loggingProps {
		props[k] = p
	}
}

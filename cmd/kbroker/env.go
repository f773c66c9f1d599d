package main

import (
	"regexp"
	"strings"
)

// envPrefix marks the environment variables that are broker properties, as
// in the apache/kafka Docker image (docker/resources/common-scripts:
// kafka-propertiesSpec.json and the image's "utility render-properties").
const envPrefix = "KAFKA_"

// envExcluded are KAFKA_* variables the Kafka image passes to the JVM or
// log4j, never to server.properties; compose files written for that image
// set them, so they are skipped, not read as properties.
var envExcluded = map[string]bool{
	"KAFKA_VERSION": true, "KAFKA_HEAP_OPTS": true, "KAFKA_HEAP_OPT": true, "KAFKA_LOG4J_OPTS": true,
	"KAFKA_OPTS": true, "KAFKA_JMX_OPTS": true, "KAFKA_JVM_PERFORMANCE_OPTS": true,
	"KAFKA_GC_LOG_OPTS": true, "KAFKA_LOG4J_ROOT_LOGLEVEL": true, "KAFKA_LOG4J_LOGGERS": true,
	"KAFKA_TOOLS_LOG4J_LOGLEVEL": true, "KAFKA_JMX_PORT": true, "KAFKA_JMX_HOSTNAME": true,
	"KAFKA_DEBUG": true,
}

// underscores matches a run of underscores in a variable name.
var underscores = regexp.MustCompile(`_+`)

// envKeyToProperty converts the name of an environment variable (without
// KAFKA_) to a property name, with the apache/kafka image's rules: '_' is
// '.', '__' is '_', '___' is '-', and the whole lower-cased. So
// LOG_RETENTION_MS is log.retention.ms and
// LISTENER_NAME_SASL__SSL_SCRAM___SHA___256_SASL_JAAS_CONFIG is
// listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config. (The image's own
// converter, a regular expression, leaves a single underscore after a
// one-letter word; here every run of underscores is converted by its length,
// which agrees with it on every real property name.) A run of four or more
// is undefined there; here it is kept as it stands.
func envKeyToProperty(key string) string {
	key = underscores.ReplaceAllStringFunc(key, func(run string) string {
		switch len(run) {
		case 1:
			return "."
		case 2:
			return "_"
		case 3:
			return "-"
		}
		return run
	})
	return strings.ToLower(key)
}

// envProperties returns the broker properties given as KAFKA_* variables in
// environ (os.Environ's form, NAME=value), as the apache/kafka image reads
// them; CLUSTER_ID, which that image passes to the storage format, is
// cluster.id. When advertised.listeners is given and listeners is not,
// listeners is derived from it with every host replaced by 0.0.0.0 (the
// image's configure script does the same), so that a compose file written
// for the Kafka image needs no change but the image name.
func envProperties(environ []string) map[string]string {
	p := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if name == "CLUSTER_ID" && value != "" {
			p["cluster.id"] = value
			continue
		}
		if !strings.HasPrefix(name, envPrefix) || envExcluded[name] || len(name) == len(envPrefix) {
			continue
		}
		p[envKeyToProperty(name[len(envPrefix):])] = value
	}
	if adv, ok := p["advertised.listeners"]; ok {
		if _, set := p["listeners"]; !set && adv != "" {
			p["listeners"] = anyHostListeners.ReplaceAllString(adv, "://0.0.0.0:")
		}
	}
	return p
}

// anyHostListeners matches the host part of a listener URI (Kafka image:
// sed 's|://[^:]*:|://0.0.0.0:|g').
var anyHostListeners = regexp.MustCompile(`://[^:,]*:`)

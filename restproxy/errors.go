package restproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Confluent's error codes (kafka-rest's Errors and rest-utils'
// KafkaExceptionMapper): the HTTP status times 100 plus a detail, or the
// plain HTTP status for errors of the HTTP layer (404 of an unknown path,
// 415 of a wrong content type).
const (
	codeBadRequest         = 40002
	codeUnauthorized       = 40101
	codeForbidden          = 40301
	codeTopicNotFound      = 40401
	codePartitionNotFound  = 40402
	codeInstanceNotFound   = 40403
	codeLeaderNotAvailable = 40404
	codeGroupNotFound      = 40405
	codeFormatMismatch     = 40601
	codeTimeout            = 40801
	codeAlreadyExists      = 40902
	codeIllegalState       = 40903
	codeJSONConversion     = 42203
	codeInvalidConsumerCfg = 42204
	codeInvalidPayload     = 42206
	codeKafkaError         = 50002
	codeKafkaRetriable     = 50003
)

// Confluent's messages for the codes above.
const (
	msgTopicNotFound     = "Topic not found."
	msgPartitionNotFound = "Partition not found."
	msgInstanceNotFound  = "Consumer instance not found."
	msgFormatMismatch    = "The requested embedded data format does not match the deserializer for this consumer instance"
	msgAlreadyExists     = "Consumer with specified consumer ID already exists in the specified consumer group."
)

// restError is an error answered with Confluent's body: status is the HTTP
// status, code the error_code.
type restError struct {
	status int
	code   int
	msg    string
}

func (e *restError) Error() string { return fmt.Sprintf("%d %d %s", e.status, e.code, e.msg) }

func errf(status, code int, format string, args ...any) *restError {
	return &restError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

// errHTTP is an error of the HTTP layer, which Confluent (Jersey) answers
// with the status as the code and "HTTP <status> <text>" as the message.
func errHTTP(status int) *restError {
	return &restError{status: status, code: status, msg: fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))}
}

var (
	errTopicNotFound     = &restError{http.StatusNotFound, codeTopicNotFound, msgTopicNotFound}
	errPartitionNotFound = &restError{http.StatusNotFound, codePartitionNotFound, msgPartitionNotFound}
	errInstanceNotFound  = &restError{http.StatusNotFound, codeInstanceNotFound, msgInstanceNotFound}
	errFormatMismatch    = &restError{http.StatusNotAcceptable, codeFormatMismatch, msgFormatMismatch}
	errInstanceExists    = &restError{http.StatusConflict, codeAlreadyExists, msgAlreadyExists}
	errNotFound          = errHTTP(http.StatusNotFound)
	errUnsupportedMedia  = errHTTP(http.StatusUnsupportedMediaType)
	errUnauthorized      = &restError{http.StatusUnauthorized, codeUnauthorized, "Unauthorized"}
)

func errIllegalState(format string, args ...any) *restError {
	return errf(http.StatusConflict, codeIllegalState, "Illegal state: "+format, args...)
}

func errJSON(err error) *restError {
	return errf(http.StatusUnprocessableEntity, codeJSONConversion, "Conversion of JSON to Object failed: %v", err)
}

func errPayload(format string, args ...any) *restError {
	return errf(http.StatusUnprocessableEntity, codeInvalidPayload, "Payload error. "+format, args...)
}

// errorBody is Confluent's error entity (v2 and v3 alike).
type errorBody struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

// kafkaError maps an error of a Kafka request to Confluent's answer, as
// rest-utils' KafkaExceptionMapper does: authorization 403, unknown topic
// 404, invalid requests 400, a timeout 408, retriable errors 50003, the
// rest 50002.
func kafkaError(err error) *restError {
	var re *restError
	if errors.As(err, &re) {
		return re
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID:
			return errTopicNotFound
		case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
			kerr.TransactionalIDAuthorizationFailed, kerr.DelegationTokenAuthorizationFailed:
			return errf(http.StatusForbidden, codeForbidden, "%s", ke.Description)
		case kerr.SaslAuthenticationFailed, kerr.IllegalSaslState, kerr.UnsupportedSaslMechanism:
			return errf(http.StatusUnauthorized, codeUnauthorized, "%s", ke.Description)
		case kerr.TopicAlreadyExists, kerr.InvalidReplicationFactor, kerr.InvalidPartitions, kerr.InvalidConfig,
			kerr.InvalidTopicException, kerr.PolicyViolation, kerr.InvalidReplicaAssignment, kerr.InvalidRequest,
			kerr.UnsupportedVersion, kerr.NonEmptyGroup, kerr.InvalidGroupID:
			return errf(http.StatusBadRequest, codeBadRequest, "%s", ke.Description)
		case kerr.GroupIDNotFound:
			return errf(http.StatusNotFound, codeGroupNotFound, "Consumer group id not found.")
		case kerr.LeaderNotAvailable:
			return errf(http.StatusNotFound, codeLeaderNotAvailable, "Leader not available.")
		}
		if ke.Retriable {
			return errf(http.StatusInternalServerError, codeKafkaRetriable, "Kafka error: %s", ke.Description)
		}
		return errf(http.StatusInternalServerError, codeKafkaError, "Kafka error: %s", ke.Description)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errf(http.StatusRequestTimeout, codeTimeout, "Request timed out: %v", err)
	}
	return errf(http.StatusInternalServerError, codeKafkaError, "Kafka error: %v", err)
}

// recordErrorCode is the error_code of one record in a produce reply.
func recordErrorCode(err error) int {
	return kafkaError(err).code
}

// writeJSON answers status with v as JSON of contentType.
func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	if v == nil {
		return
	}
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do then
}

// writeError answers err with Confluent's error body. v3's error_code is
// the HTTP status (its ErrorResponse), v2's the detailed code.
func writeError(w http.ResponseWriter, contentType string, err error) {
	re := kafkaError(err)
	code := re.code
	if contentType == ctV3 {
		code = re.status
	}
	writeJSON(w, re.status, contentType, errorBody{ErrorCode: code, Message: re.msg})
}

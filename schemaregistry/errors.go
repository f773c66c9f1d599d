package schemaregistry

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is an answer of the REST API that is not a success: an HTTP status
// and Confluent's error_code and message, written as
// {"error_code":40401,"message":"Subject 'x' not found."}.
type Error struct {
	Status  int    // HTTP status
	Code    int    // Confluent's error_code
	Message string // Confluent's message
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// Confluent's error codes (io.confluent.kafka.schemaregistry.rest.exceptions.Errors).
const (
	codeForbidden                    = 40301
	codeSubjectNotFound              = 40401
	codeVersionNotFound              = 40402
	codeSchemaNotFound               = 40403
	codeSubjectSoftDeleted           = 40404
	codeSubjectNotSoftDeleted        = 40405
	codeVersionSoftDeleted           = 40406
	codeVersionNotSoftDeleted        = 40407
	codeSubjectCompatNotConfigured   = 40408
	codeSubjectModeNotConfigured     = 40409
	codeIncompatibleSchema           = 409
	codeInvalidSchema                = 42201
	codeInvalidVersion               = 42202
	codeInvalidCompatibility         = 42203
	codeInvalidMode                  = 42204
	codeOperationNotPermitted        = 42205
	codeReferenceExists              = 42206
	codeInvalidSubject               = 42208
	codeStoreError                   = 50001
	codeOperationTimeout             = 50002
	codeRequestForwardingFailed      = 50003
	statusUnprocessable              = http.StatusUnprocessableEntity
	invalidCompatibilityMessage      = "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"
	invalidModeMessage               = "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD."
	invalidVersionMessageFormat      = "The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""
	subjectSoftDeletedMessageFormat  = "Subject '%s' was soft deleted.Set permanent=true to delete permanently"
	versionSoftDeletedMessageFormat  = "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently"
	subjectNotSoftDeletedMsgFormat   = "Subject '%s' was not deleted first before being permanently deleted"
	versionNotSoftDeletedMsgFormat   = "Subject '%s' Version %d was not deleted first before being permanently deleted"
	incompatibleSchemaMessagePrefix  = "Schema being registered is incompatible with an earlier schema for subject \"%s\", details: "
	readOnlyMessageFormat            = "Subject %s in context . is in read-only mode"
	referenceExistsMessageFormat     = "One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=%s,version=%d}."
	subjectCompatNotConfiguredFormat = "Subject '%s' does not have subject-level compatibility configured"
	subjectModeNotConfiguredFormat   = "Subject '%s' does not have subject-level mode configured"
)

func errSubjectNotFound(subject string) *Error {
	return &Error{http.StatusNotFound, codeSubjectNotFound, fmt.Sprintf("Subject '%s' not found.", subject)}
}

func errVersionNotFound(version int) *Error {
	return &Error{http.StatusNotFound, codeVersionNotFound, fmt.Sprintf("Version %d not found.", version)}
}

func errSchemaNotFound() *Error {
	return &Error{http.StatusNotFound, codeSchemaNotFound, "Schema not found"}
}

func errSchemaIDNotFound(id int) *Error {
	return &Error{http.StatusNotFound, codeSchemaNotFound, fmt.Sprintf("Schema %d not found", id)}
}

func errSubjectSoftDeleted(subject string) *Error {
	return &Error{http.StatusNotFound, codeSubjectSoftDeleted, fmt.Sprintf(subjectSoftDeletedMessageFormat, subject)}
}

func errSubjectNotSoftDeleted(subject string) *Error {
	return &Error{http.StatusNotFound, codeSubjectNotSoftDeleted, fmt.Sprintf(subjectNotSoftDeletedMsgFormat, subject)}
}

func errVersionSoftDeleted(subject string, version int) *Error {
	return &Error{http.StatusNotFound, codeVersionSoftDeleted, fmt.Sprintf(versionSoftDeletedMessageFormat, subject, version)}
}

func errVersionNotSoftDeleted(subject string, version int) *Error {
	return &Error{http.StatusNotFound, codeVersionNotSoftDeleted, fmt.Sprintf(versionNotSoftDeletedMsgFormat, subject, version)}
}

func errSubjectCompatNotConfigured(subject string) *Error {
	return &Error{http.StatusNotFound, codeSubjectCompatNotConfigured, fmt.Sprintf(subjectCompatNotConfiguredFormat, subject)}
}

func errSubjectModeNotConfigured(subject string) *Error {
	return &Error{http.StatusNotFound, codeSubjectModeNotConfigured, fmt.Sprintf(subjectModeNotConfiguredFormat, subject)}
}

func errIncompatible(subject string, messages []string) *Error {
	return &Error{http.StatusConflict, codeIncompatibleSchema, fmt.Sprintf(incompatibleSchemaMessagePrefix, subject) + bracketList(messages)}
}

func errInvalidSchema(detail error) *Error {
	return &Error{statusUnprocessable, codeInvalidSchema, "Invalid schema: " + detail.Error()}
}

func errInvalidVersion(version string) *Error {
	return &Error{statusUnprocessable, codeInvalidVersion, fmt.Sprintf(invalidVersionMessageFormat, version)}
}

func errInvalidCompatibility() *Error {
	return &Error{statusUnprocessable, codeInvalidCompatibility, invalidCompatibilityMessage}
}

func errInvalidMode() *Error {
	return &Error{statusUnprocessable, codeInvalidMode, invalidModeMessage}
}

func errNotPermitted(message string) *Error {
	return &Error{statusUnprocessable, codeOperationNotPermitted, message}
}

func errReadOnly(subject string) *Error {
	return errNotPermitted(fmt.Sprintf(readOnlyMessageFormat, subject))
}

func errReferenceExists(subject string, version int) *Error {
	return &Error{statusUnprocessable, codeReferenceExists, fmt.Sprintf(referenceExistsMessageFormat, subject, version)}
}

func errInvalidSubject(subject string) *Error {
	return &Error{statusUnprocessable, codeInvalidSubject, fmt.Sprintf("The specified subject '%s' is not a valid.", subject)}
}

// errStore is 50001: the _schemas topic could not be read or written.
func errStore(message string, cause error) *Error {
	return &Error{http.StatusInternalServerError, codeStoreError, message + ": " + cause.Error()}
}

// errTimeout is 50002: the registry did not reach the log's end in time.
func errTimeout(message string, cause error) *Error {
	return &Error{http.StatusInternalServerError, codeOperationTimeout, message + ": " + cause.Error()}
}

// errHTTP is an error of the HTTP layer (malformed JSON, unsupported
// media type, too large a body), whose error_code is its status, as
// Confluent's rest-utils answers them.
func errHTTP(status int, message string) *Error {
	return &Error{status, status, message}
}

// asError turns any error into an API error: an *Error as is, anything
// else 50001.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return errStore("Error in the backend Kafka store", err)
}

// bracketList is Java's List.toString: [a, b].
func bracketList(items []string) string {
	out := "["
	for i, s := range items {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out + "]"
}

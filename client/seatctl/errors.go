package seatctl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Exit codes, for scripts to test.
const (
	ExitOK          = 0
	ExitError       = 1 // anything else (an internal error of seatd, a broken answer)
	ExitUsage       = 2 // bad flags or arguments; INVALID_ARGUMENT from seatd
	ExitNotFound    = 3 // NOT_FOUND: license, lease, tenant, API key
	ExitPermission  = 4 // no key, UNAUTHENTICATED, PERMISSION_DENIED
	ExitUnavailable = 5 // seatd unreachable, UNAVAILABLE, DEADLINE_EXCEEDED (--timeout)
	ExitRefused     = 6 // ALREADY_EXISTS, FAILED_PRECONDITION, RESOURCE_EXHAUSTED (quota, rate limit)
)

// usageError is a mistake on the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// noKeyError: no key from --key, --key-file, SEATCTL_KEY or SEATCTL_KEY_FILE.
type noKeyError struct{}

func (noKeyError) Error() string {
	return "no key: pass --key-file FILE (or --key, or set SEATCTL_KEY / SEATCTL_KEY_FILE) with the operator key or an API key"
}

// exitForCode maps a gRPC status code to an exit code.
func exitForCode(c codes.Code) int {
	switch c {
	case codes.InvalidArgument, codes.OutOfRange:
		return ExitUsage
	case codes.NotFound:
		return ExitNotFound
	case codes.Unauthenticated, codes.PermissionDenied:
		return ExitPermission
	case codes.Unavailable, codes.DeadlineExceeded:
		return ExitUnavailable
	case codes.AlreadyExists, codes.FailedPrecondition, codes.ResourceExhausted, codes.Aborted:
		return ExitRefused
	}
	return ExitError
}

// describe turns an error into its exit code and a one-line message: for a
// gRPC status, seatd's message with its code and ErrorInfo reason.
func describe(err error, addr string) (int, string) {
	var u usageError
	if errors.As(err, &u) {
		return ExitUsage, oneLine(u.Error())
	}
	if errors.As(err, new(refusedError)) {
		return ExitRefused, oneLine(err.Error())
	}
	if errors.As(err, new(noKeyError)) {
		return ExitPermission, err.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ExitUnavailable, "no answer within --timeout"
	}
	st, ok := status.FromError(err)
	if !ok {
		// cobra's own errors (unknown command, bad flag) are usage errors.
		msg := err.Error()
		if strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
			strings.HasPrefix(msg, "unknown shorthand flag") || strings.Contains(msg, "flag needs an argument") ||
			strings.HasPrefix(msg, "invalid argument") || strings.HasPrefix(msg, "required flag") ||
			strings.HasPrefix(msg, "accepts ") {
			return ExitUsage, oneLine(msg)
		}
		return ExitError, oneLine(msg)
	}
	code := exitForCode(st.Code())
	reason := ""
	var fields []string
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.GetReason()
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	msg := st.Message()
	switch st.Code() {
	case codes.Unavailable:
		if reason == "" {
			// The transport's own words (dial errors) say too much and too
			// little; the address is what the operator can check.
			msg = "cannot reach seatd at " + addr + " (check --addr / SEATCTL_ADDR, and --tls)"
		}
	case codes.DeadlineExceeded:
		msg = "no answer within --timeout"
	case codes.Unauthenticated:
		msg += " (check --key / --key-file / SEATCTL_KEY)"
	}
	tag := st.Code().String()
	if reason != "" && !strings.EqualFold(reason, tag) {
		tag += " " + reason
	}
	if len(fields) > 0 && !strings.Contains(msg, fields[0]) {
		msg += " [" + strings.Join(fields, ", ") + "]"
	}
	return code, oneLine(msg + " (" + tag + ")")
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

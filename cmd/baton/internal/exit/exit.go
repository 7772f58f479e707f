// Package exit is how baton's commands, in package main and in the
// internal packages they stand on, say which exit status an error means.
package exit

import "fmt"

// Exit statuses besides CMD's own.
const (
	Failure = 1  // store errors and other failures
	Usage   = 2  // bad flags or arguments
	Timeout = 75 // not acquired within --timeout (EX_TEMPFAIL)
	Lost    = 76 // the lock or leadership was lost while CMD ran
)

// Error carries an exit status; a nil Err prints nothing.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// With returns an error that makes baton exit with code, printing err (if
// not nil) as the one line on stderr.
func With(code int, err error) error { return &Error{Code: code, Err: err} }

// Usagef is a usage error (exit 2) with the message format says.
func Usagef(format string, a ...any) error { return With(Usage, fmt.Errorf(format, a...)) }

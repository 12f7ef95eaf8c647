package source

import (
	"errors"
	"fmt"
)

// An Error is an error a user can see, with its code from the table: a step
// failure (E_PATH_ESCAPE, E_JSON_PARSE, E_EXEC, ...) or a failure of the
// run store (E_STATE_NOT_FOUND, E_RUN_LOCKED, ...). It is the one coded error
// type of Smith; CodeOf reads the code back from any error chain.
type Error struct {
	// Code is the code of the table the error carries.
	Code Code
	// Msg says what is wrong, lowercase, with names in single quotes.
	Msg string
	// Err is the underlying cause, or nil.
	Err error
	// Hint says what to do, or "".
	Hint string
}

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error whose message is msg followed by err, with err's
// own code, or fallback when err carries none (a confinement error keeps
// E_PATH_ESCAPE, an unreadable file becomes fallback).
func Wrap(fallback Code, msg string, err error) *Error {
	return &Error{Code: CodeOf(err, fallback), Msg: msg, Err: err}
}

// Error returns Msg, followed by the cause and the hint when there are.
func (e *Error) Error() string {
	msg := e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// ErrCode returns the error's code; *Error implements Coded.
func (e *Error) ErrCode() Code { return e.Code }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the code of the first Coded error in err's chain, or
// fallback when there is none (or err is nil).
func CodeOf(err error, fallback Code) Code {
	var c Coded
	if errors.As(err, &c) {
		return c.ErrCode()
	}
	return fallback
}

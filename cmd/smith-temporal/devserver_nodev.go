//go:build nodev

package main

import (
	"context"
	"errors"
)

// serveDev is missing from a build with the nodev tag: a worker or client
// without the embedded server (39 MB instead of about 215, and a faster
// start; docs/temporal.md).
func serveDev(context.Context, string, int, string, func()) error {
	return errors.New("this smith-temporal was built with -tags nodev, without the development server: use a full build for 'dev'")
}

//go:build tools

// Package kwok only pins the command built by build.sh.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)

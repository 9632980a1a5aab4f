//go:build tools

// Package helm only pins the helm command built by build.sh.
package helm

import (
	_ "helm.sh/helm/v3/cmd/helm"
)

//go:build tools

// Package kubeflow only pins the command built by build.sh.
package kubeflow

import (
	_ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
)

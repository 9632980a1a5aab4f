// Command etcd is a thin wrapper around etcd's own main, so that the etcd
// server can be built from the Go module proxy at the version that the pinned
// k8s.io/kubernetes release is tested against.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

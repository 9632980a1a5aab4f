"""Development harness, not the scheduler: a throw-away local control plane (:mod:`volsched_dev.devcluster`,
real etcd and kube-apiserver built by ``hack/controlplane``) for the e2e tests and benchmarks, and
``volsched demo`` (:mod:`volsched_dev.demo`). It works from a source checkout (it needs ``hack/`` and
``crds/`` beside it); the runtime package ``volsched`` never imports it (import-linter contract), and the
image does not contain it."""

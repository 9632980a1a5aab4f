"""kube."""

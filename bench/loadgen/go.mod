module volsched.dev/bench/loadgen

go 1.22

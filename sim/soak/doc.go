// Package soak holds the soak test of sim serve (soak_test.go): many model
// runs and real validations through one server process, whose resources
// (memory, open files, goroutines, child processes, network namespaces,
// temporary folders) must return to where they were. It runs with
// CONNLAB_SOAK=1 (.ci/run sets it), in make test's first stage beside the
// other packages: it measures no time, so it need not wait for the
// real-server tests, which run alone after it.
package soak

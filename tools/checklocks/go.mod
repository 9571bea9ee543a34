// gVisor's checklocks analyzer, which CI runs over netqdisc with
// go vet -vettool: a module of its own, so that its dependencies
// (golang.org/x/tools) stay out of netqdisc's.
module github.com/netqdisc/netqdisc/tools/checklocks

go 1.26.3

require gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237

require (
	golang.org/x/mod v0.34.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/tools v0.43.0 // indirect
)

tool gvisor.dev/gvisor/tools/checklocks/cmd/checklocks

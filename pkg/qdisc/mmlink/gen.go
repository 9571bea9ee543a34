package mmlink

// The generated traces in testdata, which TestGeneratedTraces holds to
// what the generator makes, byte for byte.
//go:generate go run ./tracegen/mmtracegen -dir testdata

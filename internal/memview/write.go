package memview

import (
	"bufio"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
)

//go:embed viewer.css
var css string

//go:embed viewer.js
var script string

//go:embed align.js
var alignScript string

// Write writes one self-contained HTML page showing the runs (one, or two
// side by side): styles, script and data inline, nothing fetched.
func Write(w io.Writer, runs ...Run) error {
	if len(runs) < 1 || len(runs) > 2 {
		return fmt.Errorf("memview: %d runs: the page shows one or two", len(runs))
	}
	hs := make([]*encoded, len(runs))
	for i, r := range runs {
		h, err := encode(r)
		if err != nil {
			return err
		}
		hs[i] = h
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	head, err := json.Marshal(hs)
	if err != nil {
		return fmt.Errorf("memview: %w", err)
	}
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>headroom memory</title>\n<style>%s</style></head>\n<body>\n", css)
	fmt.Fprintf(bw, "<script type=\"application/json\" id=\"runs\">%s</script>\n", head)
	for i, h := range hs {
		fmt.Fprintf(bw, "<script type=\"application/octet-stream\" id=\"data%d\">", i)
		enc := base64.NewEncoder(base64.StdEncoding, bw)
		enc.Write(h.data)
		enc.Close()
		bw.WriteString("</script>\n")
	}
	fmt.Fprintf(bw, "<script>%s\n%s</script>\n</body></html>\n", alignScript, script)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("memview: writing the page: %w", err)
	}
	return nil
}

package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// parseHeader reads the header JSON h (which must be valid UTF-8): the
// tensors in header order and the metadata (nil when absent or null).
func parseHeader(h []byte) ([]entry, map[string]string, error) {
	if !utf8.Valid(h) {
		bad := 0
		for bad < len(h) {
			r, size := utf8.DecodeRune(h[bad:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		return nil, nil, fmt.Errorf("header is not valid UTF-8 (bad byte at header offset %d)", bad)
	}
	d := json.NewDecoder(bytes.NewReader(h))
	d.UseNumber()
	if err := open(d, '{', "the header"); err != nil {
		return nil, nil, err
	}
	var es []entry
	var meta map[string]string
	seen := map[string]bool{}
	for d.More() {
		name, err := key(d, "the header")
		if err != nil {
			return nil, nil, err
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("header: key %q appears twice", name)
		}
		seen[name] = true
		if name == metadataKey {
			if meta, err = parseMetadata(d); err != nil {
				return nil, nil, err
			}
			continue
		}
		e, err := parseEntry(d, name)
		if err != nil {
			return nil, nil, err
		}
		es = append(es, e)
	}
	if _, err := token(d, "the header"); err != nil {
		return nil, nil, err
	}
	if rest := bytes.TrimLeft(h[d.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, nil, fmt.Errorf("header: %d bytes after the JSON object are not white space (first %q)",
			len(rest), rest[0])
	}
	return es, meta, nil
}

// parseMetadata reads the value of "__metadata__": an object of strings,
// or null.
func parseMetadata(d *json.Decoder) (map[string]string, error) {
	const what = `"__metadata__"`
	t, err := token(d, what)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, nil
	}
	if t != json.Delim('{') {
		return nil, fmt.Errorf("header: %s is %s, want an object of strings", what, describe(t))
	}
	meta := map[string]string{}
	for d.More() {
		k, err := key(d, what)
		if err != nil {
			return nil, err
		}
		if _, dup := meta[k]; dup {
			return nil, fmt.Errorf("header: %s: key %q appears twice", what, k)
		}
		t, err := token(d, what)
		if err != nil {
			return nil, err
		}
		v, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("header: %s: value of %q is %s, want a string", what, k, describe(t))
		}
		meta[k] = v
	}
	_, err = token(d, what)
	return meta, err
}

// parseEntry reads the object describing tensor name.
func parseEntry(d *json.Decoder, name string) (entry, error) {
	what := fmt.Sprintf("tensor %q", name)
	e := entry{name: name}
	if err := open(d, '{', what); err != nil {
		return e, err
	}
	seen := map[string]bool{}
	for d.More() {
		field, err := key(d, what)
		if err != nil {
			return e, err
		}
		if seen[field] {
			return e, fmt.Errorf("header: %s: field %q appears twice", what, field)
		}
		seen[field] = true
		switch field {
		case "dtype":
			t, err := token(d, what)
			if err != nil {
				return e, err
			}
			s, ok := t.(string)
			if !ok {
				return e, fmt.Errorf("header: %s: dtype is %s, want a string", what, describe(t))
			}
			k, _, ok := lookupKind(s)
			if !ok {
				return e, fmt.Errorf("header: %s: unknown dtype %q (known: %v)", what, s, Kinds())
			}
			e.kind = k
		case "shape":
			dims, err := uints(d, what+": shape")
			if err != nil {
				return e, err
			}
			e.shape = make([]int, len(dims))
			for i, v := range dims {
				if e.shape[i], err = toInt(v, fmt.Sprintf("header: %s: dimension", what)); err != nil {
					return e, err
				}
			}
		case "data_offsets":
			offs, err := uints(d, what+": data_offsets")
			if err != nil {
				return e, err
			}
			if len(offs) != 2 {
				return e, fmt.Errorf("header: %s: data_offsets has %d elements, want 2 (begin, end)", what, len(offs))
			}
			e.begin, e.end = offs[0], offs[1]
		default:
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return e, jsonError(d, what, err)
			}
		}
	}
	if _, err := token(d, what); err != nil {
		return e, err
	}
	for _, f := range []string{"dtype", "shape", "data_offsets"} {
		if !seen[f] {
			return e, fmt.Errorf("header: %s has no %q field", what, f)
		}
	}
	return e, nil
}

// uints reads an array of non-negative integers.
func uints(d *json.Decoder, what string) ([]uint64, error) {
	if err := open(d, '[', what); err != nil {
		return nil, err
	}
	out := []uint64{}
	for d.More() {
		t, err := token(d, what)
		if err != nil {
			return nil, err
		}
		num, ok := t.(json.Number)
		if !ok {
			return nil, fmt.Errorf("header: %s: element %d is %s, want an integer", what, len(out), describe(t))
		}
		v, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("header: %s: element %d is %s, want an integer from 0 to 2^64-1", what, len(out), num)
		}
		out = append(out, v)
	}
	_, err := token(d, what)
	return out, err
}

// open reads the token that must open an object or array.
func open(d *json.Decoder, delim json.Delim, what string) error {
	t, err := token(d, what)
	if err != nil {
		return err
	}
	if t != delim {
		want := "an object"
		if delim == '[' {
			want = "an array"
		}
		return fmt.Errorf("header: %s is %s, want %s", what, describe(t), want)
	}
	return nil
}

// key reads an object key.
func key(d *json.Decoder, what string) (string, error) {
	t, err := token(d, what)
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("header: %s: key is %s, want a string", what, describe(t))
	}
	return s, nil
}

// token reads the next token, turning the decoder's errors into ones that
// say where.
func token(d *json.Decoder, what string) (json.Token, error) {
	t, err := d.Token()
	if err != nil {
		return nil, jsonError(d, what, err)
	}
	return t, nil
}

func jsonError(d *json.Decoder, what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("header: JSON ends early, in %s", what)
	}
	return fmt.Errorf("header: invalid JSON in %s near byte %d: %w", what, d.InputOffset(), err)
}

// describe names the JSON type of a token for error messages.
func describe(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", rune(v))
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + string(v)
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", t)
}

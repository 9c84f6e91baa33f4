package emu

import (
	"fmt"
	"reflect"

	"github.com/ebitengine/purego"
)

// bindStruct registers every func field of *s (a struct pointer) with the
// symbol its `sym` tag names; a missing symbol is an error, never a panic.
func bindStruct(s any, lookup func(string) uintptr) error {
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		sym := f.Tag.Get("sym")
		if sym == "" {
			continue
		}
		p := lookup(sym)
		if p == 0 {
			return fmt.Errorf("symbol %s not found", sym)
		}
		purego.RegisterFunc(v.Field(i).Addr().Interface(), p)
	}
	return nil
}

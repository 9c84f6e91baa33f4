package device

import (
	"fmt"
	"strings"
)

// Tag says what a block of device memory holds. Every allocation carries one,
// and the allocator keeps its counters per tag.
type Tag uint8

// The tags. Their order is the order of rows in Summary and reports.
const (
	// Parameter: model weights and biases (and buffers such as batch-norm statistics).
	Parameter Tag = iota
	// Gradient: gradients of parameters, accumulated by backward.
	Gradient
	// Optimizer: optimizer state (momentum, Adam moments, master weights).
	Optimizer
	// Activation: tensors computed by the forward pass, the inputs of a step
	// included, and those the autograd engine saves for backward.
	Activation
	// Workspace: scratch memory of ops (im2col buffers, casts) and the
	// activation gradients that flow through backward.
	Workspace
	// Communication: buffers of collective operations between devices.
	Communication
	// Other: anything else.
	Other
	// NumTags is the number of tags.
	NumTags
)

var tagNames = [NumTags]string{"parameter", "gradient", "optimizer", "activation", "workspace", "communication", "other"}

// String returns the tag's lower-case name, as used in reports and JSON.
func (t Tag) String() string {
	if t < NumTags {
		return tagNames[t]
	}
	return fmt.Sprintf("tag(%d)", uint8(t))
}

// Tags returns all tags in report order.
func Tags() []Tag {
	ts := make([]Tag, NumTags)
	for i := range ts {
		ts[i] = Tag(i)
	}
	return ts
}

// ParseTag returns the tag with the given name (case-insensitive).
func ParseTag(s string) (Tag, error) {
	for i, n := range tagNames {
		if strings.EqualFold(s, n) {
			return Tag(i), nil
		}
	}
	return 0, fmt.Errorf("device: unknown tag %q (want one of %s)", s, strings.Join(tagNames[:], ", "))
}

// MarshalText writes the tag's name.
func (t Tag) MarshalText() ([]byte, error) {
	if t >= NumTags {
		return nil, fmt.Errorf("device: invalid tag %d", uint8(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText reads a tag's name.
func (t *Tag) UnmarshalText(b []byte) error {
	v, err := ParseTag(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Label describes an allocation: what it holds and who asked for it.
type Label struct {
	Tag Tag
	// Op is the operation that created the block ("matmul", "conv2d", "adam").
	Op string
	// Scope is the layer path active when it was created ("layer1.0.conv2").
	Scope string
	// Phase is the step phase ("forward", "backward", "optimizer"), if known.
	Phase string
}

// Creator joins scope and op as "scope/op" (or whichever of them is set).
func (l Label) Creator() string {
	switch {
	case l.Scope == "" && l.Op == "":
		return "?"
	case l.Scope == "":
		return l.Op
	case l.Op == "":
		return l.Scope
	}
	return l.Scope + "/" + l.Op
}

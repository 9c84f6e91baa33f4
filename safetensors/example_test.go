package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/headroom-ml/headroom/dtype"
	"github.com/headroom-ml/headroom/safetensors"
)

// Encode a file and look at its bytes: the header length, the padded
// header, then the data.
func ExampleEncode() {
	f := &safetensors.File{
		Tensors: map[string]safetensors.Tensor{
			"fc.weight": {DType: dtype.F32, Shape: []int{2, 2}, Data: dtype.Bytes([]float32{1, 2, 3, 4})},
			"step":      {DType: dtype.I64, Shape: []int{}, Data: dtype.Bytes([]int64{7})},
		},
		Metadata: map[string]string{"format": "pt"},
	}
	f.Sort() // the reference writer's order: I64 before F32
	var b bytes.Buffer
	if err := safetensors.Encode(&b, f); err != nil {
		panic(err)
	}
	n := binary.LittleEndian.Uint64(b.Bytes())
	fmt.Println("header bytes:", n)
	fmt.Printf("header: %q\n", b.Bytes()[8:8+n])
	fmt.Println("data bytes:", b.Len()-8-int(n))
	// Output:
	// header bytes: 152
	// header: "{\"__metadata__\":{\"format\":\"pt\"},\"step\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[8,24]}} "
	// data bytes: 24
}

// Decode checks the whole file and reports the first problem it finds.
func ExampleDecode() {
	var b bytes.Buffer
	f := &safetensors.File{Names: []string{"x"}, Tensors: map[string]safetensors.Tensor{
		"x": {DType: dtype.BF16, Shape: []int{3}, Data: dtype.Bytes([]uint16{0x3f80, 0x4000, 0x4040})},
	}}
	if err := safetensors.Encode(&b, f); err != nil {
		panic(err)
	}
	g, err := safetensors.Decode(b.Bytes())
	if err != nil {
		panic(err)
	}
	x := g.Tensors["x"]
	v := make([]float32, 3)
	dtype.ToF32(v, x.DType, x.Data)
	fmt.Println(g.Names, x.Kind, x.DType, x.Shape, v)

	_, err = safetensors.Decode(b.Bytes()[:b.Len()-1])
	fmt.Println(err)
	// Output:
	// [x] BF16 bf16 [3] [1 2 3]
	// safetensors.Decode: tensor "x": data_offsets [0, 6] run past the 5 bytes that follow the header (truncated?)
}

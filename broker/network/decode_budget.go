package network

import (
	"reflect"
	"sync"
)

// decodeFactor bounds the bytes kmsg may allocate decoding a request, per
// frame byte. kmsg refuses an array whose declared count times its
// element's minimum wire size exceeds the bytes left, so an element costs at
// most its Go size over that minimum wire size; the worst advertised request
// measured is 32 (TestDecodeMemoryBoundedByFrameSize checks every API,
// version and array, honest and hostile, against this factor).
//
// The reader reserves frame × decodeFactor from the server's decode pool
// (as large as queued.max.request.bytes) before decoding and keeps, until
// the request is answered, what the decoded request references
// (decodedBytes). So decoded requests stay within that pool, however their
// arrays are shaped, but for the non-strict grant: a decode starts whenever
// the pool is not full, so at most one decode in progress at a time (per
// reader granted at once) goes past it, by at most 32 × its frame.
const decodeFactor = 48

// decodedBytes estimates the memory a decoded kmsg request references
// outside the frame: its structs, slices of structs and strings (kmsg's
// byte slices alias the frame and count nothing).
func decodedBytes(req any) int64 {
	v := reflect.ValueOf(req)
	if !v.IsValid() {
		return 0
	}
	return indirectBytes(v)
}

func indirectBytes(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return int64(v.Type().Elem().Size()) + indirectBytes(v.Elem())
	case reflect.Struct:
		var n int64
		for _, i := range indirectFields(v.Type()) {
			n += indirectBytes(v.Field(i))
		}
		return n
	case reflect.Slice:
		et := v.Type().Elem()
		if et.Kind() == reflect.Uint8 {
			return 0
		}
		n := int64(v.Cap()) * int64(et.Size())
		if hasIndirect(et) {
			for i := 0; i < v.Len(); i++ {
				n += indirectBytes(v.Index(i))
			}
		}
		return n
	case reflect.String:
		return int64(v.Len())
	}
	return 0
}

// fieldCache maps a struct type to the indexes of its exported fields that
// may reference memory (strings, slices, pointers, such structs), so the
// walk visits only those: a Fetch of 1000 partitions has nothing to visit
// per partition.
var fieldCache sync.Map // reflect.Type → []int

func indirectFields(t reflect.Type) []int {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]int)
	}
	var out []int
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() && hasIndirect(f.Type) {
			out = append(out, i)
		}
	}
	fieldCache.Store(t, out)
	return out
}

// hasIndirect reports whether a value of type t may reference memory
// decodedBytes counts. kmsg's types are trees, so the recursion ends.
func hasIndirect(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Pointer:
		return true
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8
	case reflect.Struct:
		return len(indirectFields(t)) > 0
	}
	return false
}

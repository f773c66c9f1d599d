package zkstore

import (
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/controller"
)

// A credential in the string form kafka-configs.sh --alter --add-config
// 'SCRAM-SHA-256=[iterations=4096,password=...]' writes.
func TestScramKafkaFormat(t *testing.T) {
	kafka := "salt=MWxjcHJrNzJ2bWo0N2xmNGN5Y2JqbmF1dw==,stored_key=2Wvla8b7QmTLhALg0q+5ycR4pHcLn7wN5rrnubapr0g=," +
		"server_key=HUp3Bc1jbx62UjdbRc/Et5K2v7/k8w4HNw/8Stl/9x0=,iterations=4096"
	c, err := DecodeScram(kafka)
	if err != nil {
		t.Fatal(err)
	}
	if c.Iterations != 4096 || len(c.StoredKey) != 32 || len(c.ServerKey) != 32 || string(c.Salt) != "1lcprk72vmj47lf4cycbjnauw" {
		t.Fatalf("%+v", c)
	}
	if EncodeScram(c) != kafka {
		t.Fatalf("re-encoded %q", EncodeScram(c))
	}
	for _, bad := range []string{"salt=AA==", "salt=!,stored_key=AA==,server_key=AA==,iterations=1", "nonsense"} {
		if _, err := DecodeScram(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var zero controller.ScramCredential
	if back, err := DecodeScram(EncodeScram(zero)); err != nil || !reflect.DeepEqual(back.Iterations, zero.Iterations) {
		t.Fatalf("zero: %+v %v", back, err)
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{"alice": "alice", "User:a b": "User%3Aa%20b", "a*b~c": "a%2Ab%7Ec", "é": "%C3%A9"} {
		got := Sanitize(in)
		if got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
		if back, err := Desanitize(got); err != nil || back != in {
			t.Errorf("Desanitize(%q) = %q %v", got, back, err)
		}
	}
}

package controller

import (
	"slices"
	"testing"

	"github.com/kbroker/kbroker/storage"
)

func TestFileStoreACLs(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir, "", storage.DataInLogDir)
	if err != nil {
		t.Fatal(err)
	}
	read := ACL{"Topic", "foo", "LITERAL", "User:alice", "*", "Read", "Allow"}
	write := ACL{"Topic", "fo", "PREFIXED", "User:alice", "*", "Write", "Allow"}
	if err := s.UpdateACLs([]ACL{read, write, read}, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.ACLs(); len(got) != 2 || !slices.Contains(got, read) || !slices.Contains(got, write) {
		t.Fatalf("ACLs after adding = %+v", got)
	}
	if err := s.UpdateACLs([]ACL{read}, []ACL{write}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenFileStore(dir, "", storage.DataInLogDir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.ACLs(); !slices.Equal(got, []ACL{read}) {
		t.Fatalf("ACLs after reopening = %+v, want only %+v", got, read)
	}
}

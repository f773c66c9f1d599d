//go:build !linux

package vfs

import "errors"

func (osFS) CanSyncFS() bool { return false }

func (osFS) SyncFS(File) error { return errors.ErrUnsupported }

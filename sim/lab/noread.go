//go:build nolabparse

package lab

import "errors"

// A nolabparse build reads no sources (see the package doc): its labs come
// from FromData, which sets their exercises.
func (l *Lab) readExercises() ([]*Exercise, error) {
	return nil, errors.New("this build of connlab reads labs only as data (FromData), not from their source")
}

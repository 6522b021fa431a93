//go:build js && wasm

package msgf

// Sprintf formats as fmt.Sprintf does.
func Sprintf(format string, a ...any) string {
	s, _ := sprintf(format, a, false)
	return s
}

// Sprint formats as fmt.Sprint does.
func Sprint(a ...any) string { return sprint(a) }

// Errorf formats as fmt.Errorf does: the error wraps the operands of %w.
func Errorf(format string, a ...any) error { return errorf(format, a) }

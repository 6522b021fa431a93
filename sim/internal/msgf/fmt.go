//go:build !(js && wasm)

package msgf

import "fmt"

// Sprintf is fmt.Sprintf.
func Sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// Sprint is fmt.Sprint.
func Sprint(a ...any) string { return fmt.Sprint(a...) }

// Errorf is fmt.Errorf.
func Errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

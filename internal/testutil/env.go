package testutil

import (
	"os"
	"strings"
	"testing"
)

// envPrefix is config.EnvPrefix, written out: config's own tests import
// this package.
const envPrefix = "BUZZ_LITE_"

// ClearEnv removes every BUZZ_LITE_ variable of the test process for the
// duration of the test, so that the machine's environment cannot leak in.
func ClearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix) {
			t.Setenv(name, "") // restored after the test
			os.Unsetenv(name)
		}
	}
}

package relay

import (
	"context"
	"log/slog"
	"strings"
)

// slogWriter carries the lines that khatru and net/http print with the
// standard logger into the structured log, as warnings.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Log(context.Background(), slog.LevelWarn, strings.TrimSpace(string(p)), "component", "khatru")
	return len(p), nil
}

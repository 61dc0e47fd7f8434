package cmd

import "testing"

// RL-25: every command takes --data and --config like serve; the relay
// clients (window, post, channels, keygen) take them without listing them.
func TestEveryCommandTakesDataAndConfig(t *testing.T) {
	for _, cmd := range newApp().Commands {
		names := map[string]bool{}
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				names[n] = true
			}
		}
		for _, want := range []string{"data", "config"} {
			if !names[want] {
				t.Errorf("%s takes no --%s", cmd.Name, want)
			}
		}
	}
}

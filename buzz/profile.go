package buzz

import "encoding/json"

// ProfileName is the name a kind 0 profile's content gives its author:
// display_name, else name, each as clean leaves it (a reader's own
// cleaning: the content is untrusted); "" when neither gives one. The web
// view and the terminal client name authors alike with it.
func ProfileName(content string, clean func(string) string) string {
	var p struct {
		DisplayName any `json:"display_name"`
		Name        any `json:"name"`
	}
	if json.Unmarshal([]byte(content), &p) != nil {
		return ""
	}
	for _, n := range []any{p.DisplayName, p.Name} {
		if s, ok := n.(string); ok {
			if s = clean(s); s != "" {
				return s
			}
		}
	}
	return ""
}

package simpleschema

import "testing"

// TestPlural checks the plurals kubebuilder and kro give, where
// apimachinery's guess differs (internetgatewaies, chainchilds).
func TestPlural(t *testing.T) {
	for kind, want := range map[string]string{
		"WebApp":          "webapps",
		"InternetGateway": "internetgateways",
		"ChainChild":      "chainchildren",
		"WebAppRDS":       "webapprds",
		"Policy":          "policies",
		"Ingress":         "ingresses",
	} {
		if got := Plural(kind); got != want {
			t.Errorf("Plural(%q) = %q, want %q", kind, got, want)
		}
	}
}

package localregistry_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/inrun/inrun/localcluster/assets"
	"github.com/inrun/inrun/localregistry"
)

func TestMissingBinary(t *testing.T) {
	_, err := localregistry.Start(context.Background(), localregistry.Options{AssetsDir: t.TempDir()})
	if !assets.IsMissing(err) || !strings.Contains(err.Error(), "registry does not exist") || !strings.Contains(err.Error(), assets.BuildCommand) {
		t.Errorf("Start without the binary = %v, want it missing and how to build it", err)
	}
}

func TestStartStop(t *testing.T) {
	r, err := localregistry.Start(context.Background(), localregistry.Options{})
	if assets.IsMissing(err) && os.Getenv("INRUN_REQUIRE_ASSETS") != "1" {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + r.Host + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Docker-Distribution-Api-Version") != "registry/2.0" {
		t.Errorf("GET /v2/ = %d %v, want the Distribution registry's 200", resp.StatusCode, resp.Header)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + r.Host + "/v2/"); err == nil {
		t.Error("the registry still answers after Stop")
	}
}
